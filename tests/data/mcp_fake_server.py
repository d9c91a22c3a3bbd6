"""A tiny MCP stdio server (stdlib only, starts in milliseconds) for the tests of
``leakcheck mcp``: newline-delimited JSON-RPC, one tool ``fetch`` that GETs
``$API_URL/items/{item}`` with ``Authorization: Bearer $API_TOKEN`` (urllib, timeout
``$API_TIMEOUT``). ``FAKE_MODE`` picks how it behaves:

=============  ==================================================================
careful        each failure is one fixed sentence (isError)
leaky          the error text carries the exception text and the token's Authorization
crash          exits (status 3) when a tool is called
hang           never answers a tool call
hang-start     never answers ``initialize``
exit-start     writes ``fatal: API_TOKEN=... rejected`` to stderr and exits 1 at once
stdout-start   writes the token to stdout before any JSON-RPC (a broken stream)
no-tools       lists no tools
bad-schema     the tool's input schema is not a valid JSON Schema
array-schema   the tool's input schema is of type array (the MCP SDK refuses tools/list)
no-request     the tool answers isError without calling the API
own-key        as no-request, naming its own key from ``$ACCOUNT_REF`` (no canary: a real
               key of the server's configuration)
own-key-exit   writes ``config loaded with key $ACCOUNT_REF`` to stderr and exits 1 at once
home-log       careful, and logs each call's token to ``$HOME/.fake/debug.log``
home-name      careful, and caches each call under ``$HOME/.fake/<token>`` (empty files)
echo-arguments careful, and names each argument it does not know, with its value
progress       careful, and reports progress naming the token (when asked for progress)
carry          answers each call with the token of the call before (kept in
               ``$CARRY_FILE``: a server that keeps state from case to case)
carry-piece    as carry, with the first 14 characters of that token only
instructions   careful, and its ``initialize`` answer's instructions name the token
tool-token     careful, and its tool's description names the token
tool-added     careful, and after a call it adds a tool whose description quotes the
               failed request's Authorization (and says ``tools/list_changed``)
list-broken    careful, and after a call its tools/list answer is no list of tools
list-hang      careful, and after a call it never answers tools/list
resource-token careful, and offers a resource ``config://settings`` whose contents name
               the token
resource-hang  careful, and offers that resource, and never answers its read
resource-error careful, and offers that resource, and answers its read with a JSON-RPC
               error naming the token
prompt-token   careful, and offers a prompt (no arguments) whose text names the token
unreadable     answers each call with a message the MCP SDK cannot read (a lone
               surrogate escape in its text)
rpc-error      answers each call with a JSON-RPC error of code ``$RPC_CODE`` whose
               message holds the token's Authorization
elicit-legacy  speaks protocol 2025-06-18 (an ``InputRequiredResult`` is 2026-07-28's)
               and, during a call, sends an ``elicitation/create`` naming the token
               (when the client declared it)
=============  ==================================================================
"""

import json
import os
import sys
import urllib.error
import urllib.request

MODE = os.environ.get("FAKE_MODE", "careful")
TOKEN = os.environ.get("API_TOKEN", "")
URL = os.environ.get("API_URL", "").rstrip("/")
TIMEOUT = float(os.environ.get("API_TIMEOUT", "0.5"))
#: what the client declared at ``initialize`` (elicit-legacy)
CLIENT = {}
#: the tools added after a call (tool-added)
ADDED = []
#: whether a tool was called (list-broken, list-hang)
CALLED = []
#: the capabilities declared besides tools (resource-token, resource-hang, prompt-token)
OFFERS = {"resources": {}} if MODE.startswith("resource-") else {}
if MODE == "prompt-token":
    OFFERS = {"prompts": {}}
SETTINGS = {"uri": "config://settings", "name": "settings", "mimeType": "text/plain"}

SCHEMA = {
    "type": "object",
    "properties": {"item": {"type": "string", "pattern": "^it_[0-9]+$"}},
    "required": ["item"],
    "additionalProperties": False,
}
if MODE == "bad-schema":
    SCHEMA = {"type": "object", "properties": {"item": {"type": 12}}}
if MODE == "array-schema":
    SCHEMA = {"type": "array"}


def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def text(message, error):
    return {"content": [{"type": "text", "text": message}], "isError": error}


def fetch(item):
    if MODE == "home-log":
        folder = os.path.join(os.environ.get("HOME", "."), ".fake")
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, "debug.log"), "a", encoding="utf-8") as log:
            log.write(f"fetch {item} with token {TOKEN}\n")
    if MODE == "home-name":
        folder = os.path.join(os.environ.get("HOME", "."), ".fake")
        os.makedirs(folder, exist_ok=True)
        open(os.path.join(folder, TOKEN.replace("/", "_")), "w").close()
    if MODE == "no-request":
        return text("fetch is not configured on this server.", True)
    if MODE == "own-key":
        return text(f"unknown item {item!r} for account key {os.environ['ACCOUNT_REF']}", True)
    request = urllib.request.Request(
        f"{URL}/items/{item}", headers={"Authorization": f"Bearer {TOKEN}"}
    )
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT) as answer:
            body = json.loads(answer.read().decode("utf-8"))
        return text(json.dumps(body), False)
    except urllib.error.HTTPError as exc:
        if MODE == "leaky":
            return text(f"HTTP {exc.code} for Authorization: Bearer {TOKEN}", True)
        return text(f"The API answered HTTP {exc.code}.", True)
    except Exception as exc:  # noqa: BLE001
        if MODE == "leaky":
            return text(f"request failed: {exc} (Authorization: Bearer {TOKEN})", True)
        return text("The API could not be reached or its answer was unusable.", True)


def carried(result):
    """``result`` with the token of the call before, if any; this call's kept instead."""
    path = os.environ["CARRY_FILE"]
    before = open(path, encoding="utf-8").read() if os.path.exists(path) else ""
    with open(path, "w", encoding="utf-8") as kept:
        kept.write(TOKEN)
    if not before:
        return result
    shown = before[:14] if MODE == "carry-piece" else before
    return text(f"{result['content'][0]['text']} The last caller used {shown}.", True)


def main():
    if os.environ.get("FAKE_PID_FILE"):  # (a test that interrupts the audit checks on it)
        with open(os.environ["FAKE_PID_FILE"], "a", encoding="utf-8") as pids:
            pids.write(f"{os.getpid()}\n")
    if MODE == "own-key-exit":
        sys.stderr.write(f"config loaded with key {os.environ.get('ACCOUNT_REF', '')}\n")
        sys.exit(1)
    if MODE == "exit-start":
        sys.stderr.write(f"fatal: API_TOKEN={TOKEN} rejected\n")
        sys.exit(1)
    if MODE == "stdout-start":
        sys.stdout.write(f"starting with token {TOKEN}\n")
        sys.stdout.flush()
    for line in sys.stdin:
        if not line.strip():
            continue
        message = json.loads(line)
        method, ident = message.get("method"), message.get("id")
        if ident is None:
            continue
        if method == "initialize":
            if MODE == "hang-start":
                continue
            params = message.get("params") or {}
            if MODE == "elicit-legacy":
                CLIENT["elicitation"] = "elicitation" in (params.get("capabilities") or {})
                params = {"protocolVersion": "2025-06-18"}
            answer = {
                "protocolVersion": params.get("protocolVersion", "2025-06-18"),
                "capabilities": {"tools": {}, **OFFERS},
                "serverInfo": {"name": "fake", "version": "1"},
            }
            if MODE == "instructions":
                answer["instructions"] = f"Calls the API with Authorization: Bearer {TOKEN}."
            send({"jsonrpc": "2.0", "id": ident, "result": answer})
        elif method == "tools/list" and CALLED and MODE == "list-hang":
            continue
        elif method == "tools/list" and CALLED and MODE == "list-broken":
            send({"jsonrpc": "2.0", "id": ident, "result": {"tools": "nope"}})
        elif method == "tools/list":
            described = f"Fetch an item as Bearer {TOKEN}." if MODE == "tool-token" else None
            tools = [] if MODE == "no-tools" else [
                {"name": "fetch", "description": described or "Fetch an item.",
                 "inputSchema": SCHEMA}, *ADDED,
            ]  # fmt: skip
            send({"jsonrpc": "2.0", "id": ident, "result": {"tools": tools}})
        elif method == "tools/call":
            if MODE == "crash":
                sys.stderr.write("fake: crashing\n")
                sys.exit(3)
            if MODE == "hang":
                continue
            if MODE == "unreadable":  # (json.dumps writes the lone surrogate as \\ud800)
                send({"jsonrpc": "2.0", "id": ident, "result": text("bad \ud800", True)})
                continue
            if MODE == "rpc-error":
                send({"jsonrpc": "2.0", "id": ident, "error": {
                    "code": int(os.environ["RPC_CODE"]),
                    "message": f"upstream refused Authorization: Bearer {TOKEN}",
                }})  # fmt: skip
                continue
            CALLED.append(True)
            args = (message.get("params") or {}).get("arguments") or {}
            token = ((message.get("params") or {}).get("_meta") or {}).get("progressToken")
            if MODE == "progress" and token is not None:
                send({"jsonrpc": "2.0", "method": "notifications/progress", "params": {
                    "progressToken": token, "progress": 1, "total": 2,
                    "message": f"fetching with Authorization: Bearer {TOKEN}",
                }})  # fmt: skip
            if MODE == "elicit-legacy" and CLIENT.get("elicitation"):
                send({"jsonrpc": "2.0", "id": "ask-1", "method": "elicitation/create", "params": {
                    "mode": "form", "requestedSchema": {"type": "object", "properties": {}},
                    "message": f"The API refused Authorization: Bearer {TOKEN}; retry?",
                }})  # fmt: skip
                for answer in sys.stdin:  # the client's answer (declined, accepted: either)
                    if json.loads(answer).get("id") == "ask-1":
                        break
            result = fetch(args.get("item", ""))
            if MODE in ("carry", "carry-piece"):
                result = carried(result)
            if MODE == "tool-added" and not ADDED:
                ADDED.append(
                    {
                        "name": "retry_fetch",
                        "inputSchema": SCHEMA,
                        "description": f"Retry after 401 for Authorization: Bearer {TOKEN}",
                    }
                )
                send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
            unknown = {name: value for name, value in args.items() if name != "item"}
            if MODE == "echo-arguments" and unknown:
                said = result["content"][0]["text"]
                result = text(f"{said} (fetch takes no arguments {unknown!r})", True)
            send({"jsonrpc": "2.0", "id": ident, "result": result})
        elif method == "resources/list" and OFFERS.get("resources") is not None:
            send({"jsonrpc": "2.0", "id": ident, "result": {"resources": [SETTINGS]}})
        elif method == "resources/templates/list" and OFFERS.get("resources") is not None:
            send({"jsonrpc": "2.0", "id": ident, "result": {"resourceTemplates": []}})
        elif method == "resources/read" and MODE == "resource-hang":
            continue
        elif method == "resources/read" and MODE == "resource-error":
            send({"jsonrpc": "2.0", "id": ident, "error": {
                "code": -32002, "message": f"cannot read settings: 401 for Bearer {TOKEN}",
            }})  # fmt: skip
        elif method == "resources/read" and MODE == "resource-token":
            said = f"upstream={URL} authorization=Bearer {TOKEN}"
            contents = [{"uri": SETTINGS["uri"], "mimeType": "text/plain", "text": said}]
            send({"jsonrpc": "2.0", "id": ident, "result": {"contents": contents}})
        elif method == "prompts/list" and MODE == "prompt-token":
            prompt = {"name": "triage", "description": "Triage a failed call."}
            send({"jsonrpc": "2.0", "id": ident, "result": {"prompts": [prompt]}})
        elif method == "prompts/get" and MODE == "prompt-token":
            said = {"type": "text", "text": f"Triage the call made as Bearer {TOKEN}."}
            messages = [{"role": "user", "content": said}]
            send({"jsonrpc": "2.0", "id": ident, "result": {"messages": messages}})
        elif method == "ping":
            send({"jsonrpc": "2.0", "id": ident, "result": {}})
        else:
            send({"jsonrpc": "2.0", "id": ident, "error": {"code": -32601, "message": "no"}})


if __name__ == "__main__":
    main()
