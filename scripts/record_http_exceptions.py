"""Regenerate corpora/exceptions/http.json: the real exception text each HTTP client library
(httpx sync and async, requests, urllib3, aiohttp) produces at each stage on this machine.

Every (client, stage) pair runs against a loopback fault (``leakcheck.plugins.loopback_http``)
with a request that carries hostile placements (a bearer token in ``Authorization``, an API
key in the query) drawn from a fixed canary seed; each text is masked with
``LeakCheck.mask`` and its volatile parts (ports, temporary paths, addresses, durations) are
normalized, so two runs on one machine write the same bytes. The file is the baseline for
reviewing a dependency upgrade: run this after bumping a client library and read
``git diff corpora/exceptions/http.json``.

    .venv/bin/python scripts/record_http_exceptions.py            # write the file
    .venv/bin/python scripts/record_http_exceptions.py --check    # exit 1 if it is stale

Nothing is printed but counts, versions and the names of the entries that differ.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

# the recorders live in the repository, not in the installed package
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from recorders.http import CORPUS_PATH, dump_corpus, record_exception_texts  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def _differences(old: dict, new: dict) -> list[str]:
    names = []
    for client in sorted(set(old.get("texts", {})) | set(new["texts"])):
        before, after = old.get("texts", {}).get(client, {}), new["texts"].get(client, {})
        for key in sorted(set(before) | set(after)):
            if before.get(key) != after.get(key):
                names.append(f"{client}/{key}")
    return names


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--output", type=Path, default=ROOT / CORPUS_PATH, help="default: %(default)s"
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="do not write; exit 1 when the file differs from what this machine produces",
    )
    args = parser.parse_args(argv)
    document = record_exception_texts()
    text = dump_corpus(document)
    try:
        previous = args.output.read_text(encoding="utf-8")
    except FileNotFoundError:
        previous = ""
    except OSError as exc:
        print(f"error: cannot read {args.output}: {exc.strerror}", file=sys.stderr)
        return 2
    old = json.loads(previous) if previous else {}
    changed = _differences(old, document)
    versions = ", ".join(f"{k} {v}" for k, v in sorted(document["versions"].items()))
    count = sum(len(cases) for cases in document["texts"].values())
    if args.check:
        if previous == text:
            print(f"{args.output}: up to date ({count} texts; {versions})")
            return 0
        print(f"{args.output}: stale; entries that differ: {', '.join(changed) or 'versions'}")
        return 1
    try:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(text, encoding="utf-8")
    except OSError as exc:
        print(f"error: cannot write {args.output}: {exc.strerror}", file=sys.stderr)
        return 2
    print(f"wrote {args.output}: {count} texts, {len(changed)} changed ({versions})")
    for name in changed:
        print(f"  changed: {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
