"""Every form of every secret, caught on samples made by the code that makes them in the wild.

For each (kind, form) that ``needles_for`` produces, on both engine backends:

* catching samples come from the real library (``urllib.parse``, ``base64``, ``json``,
  ``repr``, ``html``, ``textwrap``, ``bytes.hex``, urllib3 and httpx when installed ...)
  or, where it is not installed (requests, markupsafe, the httpx series that is not
  installed), from a faithful replica of its code (``TestReplicasMatchRealLibraries``
  compares each replica with the real package whenever that is importable);
* the finding is attributed (secret id, kind, form), located (line, column, offset, length)
  and its excerpt shows the mask ``«canary:KIND:FORM»`` and no form of the secret (checked
  by scanning the excerpt again);
* near misses (the same text carrying another secret of the kind, or a fragment one
  character short, or a tail without its masking context) produce no finding.

No assertion message or parametrize id carries a secret value: kinds, forms, labels only.
"""

from __future__ import annotations

import base64
import binascii
import functools
import html
import json
import random
import re
import string
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import quote, quote_plus, urlencode, urlunparse

import pytest

from leakcheck import KINDS, CanaryFactory, Finding, Scanner, Secret, needles_for
from leakcheck.canaries import estimate_bits
from leakcheck.engine import available_backends
from leakcheck.forms import unsure_pieces

# The real packages where installed (httpx is a dev dependency, urllib3 comes with
# sentry-sdk); the replicas otherwise, and for the httpx version that is not installed.
try:
    import urllib3.util as _urllib3_util
except ImportError:  # pragma: no cover
    _urllib3_util = None  # type: ignore[assignment]
try:
    import httpx as _httpx
except ImportError:  # pragma: no cover
    _httpx = None  # type: ignore[assignment]

SEED = "test_forms"
BACKENDS = [
    pytest.param(b, marks=pytest.mark.skipif(b not in available_backends(), reason=f"no {b}"))
    for b in ("hyperscan", "ahocorasick")
]


def _exotic(namespace: str) -> Secret:
    """A user-supplied secret holding what no canary kind holds together: a single quote but
    no double quote, a no-break space (which ``repr`` escapes and JSON keeps), ``ß`` and the
    WHATWG-safe punctuation. It makes ``repr-dq`` a form of its own."""
    rng = random.Random(f"{SEED}:exotic:{namespace}")
    body = [rng.choice(string.ascii_letters + string.digits) for _ in range(26)]
    for ch in "'\\ß\u00a0[]{}|^`$%":
        body.insert(rng.randrange(4, len(body) - 3), ch)
    return Secret.from_user("".join(body), kind="exotic", id=f"exotic-{namespace}")


@functools.cache
def secret_of(kind: str, which: str = "leak") -> Secret:
    """The secret under test (``leak``) or another of the same kind (``other``)."""
    if kind == "exotic":
        return _exotic(which)
    return CanaryFactory(SEED, namespace=which).secret(kind)


SECRET_KINDS = [*KINDS, "exotic"]


def forms_of(secret: Secret) -> list[str]:
    """The forms a scan reports for ``secret``: its needles' forms, an early-accepted user
    secret's unsure pieces (``forms.unsure_pieces``: sized from its class bits, verified
    with the full estimate on a hit) as the full estimate makes them."""
    forms = {n.form for n in needles_for(secret)}
    unsure = unsure_pieces(secret)
    if not unsure:
        return sorted(forms)
    full = Secret(
        value=secret.value, kind=secret.kind, id=secret.id, secret_class=secret.secret_class,
        bits=tuple(estimate_bits(secret.value)),
    )  # fmt: skip
    families = {_piece_family(form) for form in unsure}
    verified = {n.form for n in needles_for(full) if _piece_family(n.form) in families}
    return sorted((forms - unsure) | verified)


def _piece_family(form: str) -> str:
    """A bare piece's name without its length; a masked head's or tail's whole name."""
    return form if form.startswith("masked-") else form.rstrip("0123456789")


@functools.cache
def scanner(kind: str, backend: str, decode: bool = False) -> Scanner:
    return Scanner([secret_of(kind)], backend=backend, decode=decode)


def normalise(form: str) -> str:
    """``prefix-24`` -> ``prefix-N``: the fragment length depends on the secret."""
    return re.sub(r"^(prefix|suffix|line|utf16-prefix|utf16-suffix)-\d+$", r"\1-N", form)


# --- samples ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Sample:
    """Text some library printed, and where in it (characters) the secret's form lies.

    ``exact``: the finding must span exactly [start, end). Otherwise [start, end) is the blob
    that holds the secret (a base64 blob) and every finding must lie inside it."""

    text: str
    start: int
    end: int
    exact: bool = True

    def __repr__(self) -> str:  # pytest shows a failing frame's arguments: not the text
        return f"Sample({len(self.text)} chars, [{self.start}:{self.end}], exact={self.exact})"


def around(before: str, encoded: str, after: str = "", *, exact: bool = True) -> Sample:
    __tracebackhide__ = True  # its arguments hold the secret
    return Sample(before + encoded + after, len(before), len(before) + len(encoded), exact)


def located(text: str, encoded: str) -> Sample:
    """``encoded`` is the library's own output for the secret alone, found in its output
    for the larger document."""
    __tracebackhide__ = True  # its arguments hold the secret
    start = text.index(encoded)
    return Sample(text, start, start + len(encoded))


def between(text: str, head: str, tail: str) -> Sample:
    __tracebackhide__ = True  # its arguments hold the secret
    framed = text.startswith(head) and text.endswith(tail)
    assert framed, "the library output is not framed as expected"
    return Sample(text, len(head), len(text) - len(tail))


Variant = tuple[str, "Sample | None"]  # (label, sample or None when it does not apply)
Producer = Callable[[str, str], list[Variant]]


# --- replicas of client URL code ----------------------------------------------------------
# requests 2.3x, urllib3 2.x, httpx 0.27 / 0.28: these follow their code line by line (names
# kept) for the parts that shape a URL's text. requests is no dependency at all; urllib3
# (through sentry-sdk) and one httpx series are installed with the dev extras, and then the
# producers below call the real package.


class Unparseable(ValueError):
    """The URL does not parse cleanly: the library raises (and prints it raw)."""


U3_PERCENT_RE = re.compile(r"%[a-fA-F0-9]{2}")
U3_UNRESERVED = set(string.ascii_letters + string.digits + "._-~")
U3_SUB_DELIMS = set("!$&'()*+,;=")
U3_USERINFO = U3_UNRESERVED | U3_SUB_DELIMS | {":"}
U3_PATH = U3_USERINFO | {"@", "/"}
U3_QUERY = U3_FRAGMENT = U3_PATH | {"?"}
U3_URI_RE = re.compile(
    r"^(?:([a-zA-Z][a-zA-Z0-9+.-]*):)?"
    r"(?://([^\\/?#]*))?"
    r"([^?#]*)"
    r"(?:\?([^#]*))?"
    r"(?:#(.*))?$",
    re.UNICODE | re.DOTALL,
)


def u3_encode_invalid_chars(component: str, allowed: set[str]) -> str:
    __tracebackhide__ = True  # its arguments hold the secret
    component, percent_encodings = U3_PERCENT_RE.subn(
        lambda match: match.group(0).upper(), component
    )
    uri_bytes = component.encode("utf-8", "surrogatepass")
    is_percent_encoded = percent_encodings == uri_bytes.count(b"%")
    encoded = bytearray()
    for byte_ord in uri_bytes:
        if (is_percent_encoded and byte_ord == 0x25) or (
            byte_ord < 128 and chr(byte_ord) in allowed
        ):
            encoded.append(byte_ord)
            continue
        encoded.extend(b"%" + (hex(byte_ord)[2:].encode().zfill(2).upper()))
    return encoded.decode()


def u3_remove_path_dot_segments(path: str) -> str:
    __tracebackhide__ = True  # its arguments hold the secret
    output: list[str] = []
    for segment in path.split("/"):
        if segment == ".":
            continue
        if segment != "..":
            output.append(segment)
        elif output:
            output.pop()
    if path.startswith("/") and (not output or output[0]):
        output.insert(0, "")
    if path.endswith(("/.", "/..")):
        output.append("")
    return "/".join(output)


def u3_parse_url(url: str) -> tuple[str, str | None, str, str | None, str | None, str | None]:
    """urllib3.util.parse_url for an http(s) URL to api.example."""
    __tracebackhide__ = True  # its arguments hold the secret
    match = U3_URI_RE.match(url)
    assert match is not None
    scheme, authority, path, query, fragment = match.groups()
    auth, _, host = (authority or "").rpartition("@")
    if host != "api.example":  # a secret's "/?#\" cut the authority short
        raise Unparseable(url[:0])
    auth_out = u3_encode_invalid_chars(auth, U3_USERINFO) if auth else None
    if path:
        path = u3_encode_invalid_chars(u3_remove_path_dot_segments(path), U3_PATH)
    if query:
        query = u3_encode_invalid_chars(query, U3_QUERY)
    if fragment:
        fragment = u3_encode_invalid_chars(fragment, U3_FRAGMENT)
    if not path:
        path = "" if query is not None or fragment is not None else None
    return scheme.lower(), auth_out, host, path, query, fragment


def u3_parse_url_real_or_replica(
    url: str,
) -> tuple[str, str | None, str, str | None, str | None, str | None]:
    __tracebackhide__ = True  # its arguments hold the secret
    if _urllib3_util is None:
        return u3_parse_url(url)
    try:
        p = _urllib3_util.parse_url(url)
    except ValueError as error:
        raise Unparseable(url[:0]) from error
    if p.host != "api.example":
        raise Unparseable(url[:0])
    return p.scheme, p.auth, p.host, p.path, p.query, p.fragment


def urllib3_url(url: str) -> str:
    """``urllib3.util.parse_url(url).url``"""
    __tracebackhide__ = True  # its arguments hold the secret
    scheme, auth, host, path, query, fragment = u3_parse_url(url)
    out = f"{scheme}://" + (f"{auth}@" if auth is not None else "") + host + (path or "")
    if query is not None:
        out += "?" + query
    if fragment is not None:
        out += "#" + fragment
    return out


REQ_UNRESERVED_SET = frozenset(string.ascii_letters + string.digits + "-._~")


class RequestsInvalidURL(ValueError):
    pass


def requests_unquote_unreserved(uri: str) -> str:
    __tracebackhide__ = True  # its arguments hold the secret
    parts = uri.split("%")
    for i in range(1, len(parts)):
        h = parts[i][0:2]
        if len(h) == 2 and h.isalnum():
            try:
                c = chr(int(h, 16))
            except ValueError:
                raise RequestsInvalidURL(f"Invalid percent-escape sequence: '{h}'") from None
            if c in REQ_UNRESERVED_SET:
                parts[i] = c + parts[i][2:]
            else:
                parts[i] = f"%{parts[i]}"
        else:
            parts[i] = f"%{parts[i]}"
    return "".join(parts)


def requests_requote_uri(uri: str) -> str:
    __tracebackhide__ = True  # its arguments hold the secret
    safe_with_percent = "!#$%&'()*+,/:;=?@[]~"
    safe_without_percent = "!#$&'()*+,/:;=?@[]~"
    try:
        return quote(requests_unquote_unreserved(uri), safe=safe_with_percent)
    except RequestsInvalidURL:
        return quote(uri, safe=safe_without_percent)


def requests_prepared_url(url: str) -> str:
    """``requests.Request("GET", url).prepare().url`` (requests is not installed: its code
    over urllib3's parse_url, the real one when installed)"""
    __tracebackhide__ = True  # its arguments hold the secret
    scheme, auth, host, path, query, fragment = u3_parse_url_real_or_replica(url)
    netloc = (f"{auth}@" if auth else "") + host
    if not path:
        path = "/"
    return requests_requote_uri(urlunparse((scheme, netloc, path, "", query, fragment)))


HX_UNRESERVED = string.ascii_letters + string.digits + "-._~"
HX_PERCENT_ENCODED_REGEX = re.compile("%[A-Fa-f0-9]{2}")
HX_SUB_DELIMS = "!$&'()*+,;="


def _hx_printable_except(excluded: tuple[int, ...]) -> str:
    return "".join(chr(i) for i in range(0x20, 0x7F) if i not in excluded)


_C0 = (0x20, 0x22, 0x23, 0x3C, 0x3E)
HTTPX_028 = {
    "fragment": _hx_printable_except((0x20, 0x22, 0x3C, 0x3E, 0x60)),
    "query": _hx_printable_except(_C0),
    "path": _hx_printable_except(_C0 + (0x3F, 0x60, 0x7B, 0x7D)),
    "password": _hx_printable_except(
        _C0
        + (0x3F, 0x60, 0x7B, 0x7D)
        + (0x2F, 0x3A, 0x3B, 0x3D, 0x40, 0x5B, 0x5C, 0x5D, 0x5E, 0x7C)
    ),
    "userinfo": _hx_printable_except(
        _C0 + (0x3F, 0x60, 0x7B, 0x7D) + (0x2F, 0x3B, 0x3D, 0x40, 0x5B, 0x5C, 0x5D, 0x5E, 0x7C)
    ),
}
_WHATWG_SAFE = '`{}%|^\\"'
HTTPX_027 = {
    "path": HX_SUB_DELIMS + _WHATWG_SAFE + ":/[]@",
    "query": HX_SUB_DELIMS + _WHATWG_SAFE + ":/?[]@",
    "fragment": HX_SUB_DELIMS + _WHATWG_SAFE + ":/?#[]@",
    "password": "/",  # quote(password) with its default safe, then quoted as userinfo
    "userinfo": HX_SUB_DELIMS + ":",
}
HTTPX_VERSIONS = {"0.28": HTTPX_028, "0.27": HTTPX_027}
HX_URL_RE = re.compile(
    r"(?:(?P<scheme>[a-zA-Z][a-zA-Z0-9+.-]*):)?(?://(?P<authority>[^/?#]*))?"
    r"(?P<path>[^?#]*)(?:\?(?P<query>[^#]*))?(?:#(?P<fragment>.*))?"
)


def hx_percent_encoded(string_: str, safe: str) -> str:
    __tracebackhide__ = True  # its arguments hold the secret
    non_escaped = HX_UNRESERVED + safe
    if not string_.rstrip(non_escaped):
        return string_
    return "".join(
        c if c in non_escaped else "".join(f"%{b:02X}" for b in c.encode("utf-8")) for c in string_
    )


def hx_quote(string_: str, safe: str) -> str:
    __tracebackhide__ = True  # its arguments hold the secret
    parts, current = [], 0
    for match in re.finditer(HX_PERCENT_ENCODED_REGEX, string_):
        start, end = match.start(), match.end()
        if start != current:
            parts.append(hx_percent_encoded(string_[current:start], safe=safe))
        parts.append(match.group(0))
        current = end
    if current != len(string_):
        parts.append(hx_percent_encoded(string_[current:], safe=safe))
    return "".join(parts)


def hx_normalize_path(path: str) -> str:
    __tracebackhide__ = True  # its arguments hold the secret
    if "." not in path:
        return path
    components = path.split("/")
    if "." not in components and ".." not in components:
        return path
    output: list[str] = []
    for component in components:
        if component == ".":
            pass
        elif component == "..":
            if output and output != [""]:
                output.pop()
        else:
            output.append(component)
    return "/".join(output)


def httpx_url(url: str, version: str) -> str:
    """``str(httpx.URL(url))``"""
    __tracebackhide__ = True  # its arguments hold the secret
    sets = HTTPX_VERSIONS[version]
    if any(c.isascii() and not c.isprintable() for c in url):
        raise Unparseable(url[:0])
    m = HX_URL_RE.fullmatch(url)
    assert m is not None
    userinfo, _, host = (m["authority"] or "").rpartition("@")
    if host != "api.example":
        raise Unparseable(url[:0])
    out = f"{m['scheme']}://"
    if userinfo:
        out += hx_quote(userinfo, sets["userinfo"]) + "@"
    out += host + hx_quote(hx_normalize_path(m["path"]), sets["path"])
    if m["query"] is not None:
        out += "?" + hx_quote(m["query"], sets["query"])
    if m["fragment"] is not None:
        out += "#" + hx_quote(m["fragment"], sets["fragment"])
    return out


def httpx_password_url(password: str, version: str) -> str:
    """``str(httpx.URL("https://api.example/").copy_with(username="bob", password=...))``"""
    __tracebackhide__ = True  # its arguments hold the secret
    sets = HTTPX_VERSIONS[version]
    userinfo = "bob:" + hx_quote(password, sets["password"])
    return f"https://{hx_quote(userinfo, sets['userinfo'])}@api.example/"


def markupsafe_escape(s: str) -> str:
    """markupsafe.escape (Jinja2 autoescape), its pure-Python implementation."""
    __tracebackhide__ = True  # its arguments hold the secret
    return (
        s.replace("&", "&amp;")
        .replace(">", "&gt;")
        .replace("<", "&lt;")
        .replace("'", "&#39;")
        .replace('"', "&#34;")
    )


def numeric_entities(s: str) -> str:
    """An encode-everything HTML encoder (AntiXSS / ESAPI style, decimal references)."""
    __tracebackhide__ = True  # its arguments hold the secret
    return "".join(c if c.isascii() and c.isalnum() else f"&#{ord(c)};" for c in s)


# --- producers, one per form family --------------------------------------------------------


def _httpx_series(version: str) -> str | None:
    major, minor = (int(x) for x in version.split(".")[:2])
    return "0.28" if (major, minor) >= (0, 28) else "0.27" if (major, minor) >= (0, 25) else None


HTTPX_INSTALLED = _httpx_series(_httpx.__version__) if _httpx is not None else None


def urllib3_url_real_or_replica(url: str) -> str:
    __tracebackhide__ = True  # its arguments hold the secret
    if _urllib3_util is None:
        return urllib3_url(url)
    try:
        parsed = _urllib3_util.parse_url(url)
    except ValueError as error:  # LocationParseError
        raise Unparseable(url[:0]) from error
    if parsed.host != "api.example":
        raise Unparseable(url[:0])
    return parsed.url


def httpx_url_real_or_replica(url: str, version: str) -> str:
    __tracebackhide__ = True  # its arguments hold the secret
    if version != HTTPX_INSTALLED:
        return httpx_url(url, version)
    try:
        parsed = _httpx.URL(url)
    except (_httpx.InvalidURL, ValueError) as error:
        raise Unparseable(url[:0]) from error
    if parsed.host != "api.example":
        raise Unparseable(url[:0])
    return str(parsed)


def httpx_password_url_real_or_replica(password: str, version: str) -> str:
    __tracebackhide__ = True  # its arguments hold the secret
    if version != HTTPX_INSTALLED:
        return httpx_password_url(password, version)
    base = _httpx.URL("https://api.example/")
    return str(base.copy_with(username="bob", password=password))


def _lib(name: str, version: str | None = None) -> str:
    real = _urllib3_util is not None if name == "urllib3" else version == HTTPX_INSTALLED
    return f"{name} {version or ''}".strip() + ("" if real else " (replica)")


QUERY_URL = "https://api.example/v1/items?key="
PATH_URL = "https://api.example/v1/items/"


def _url_variant(label: str, make: Callable[[], str], head: str, tail: str = "") -> Variant:
    __tracebackhide__ = True  # its arguments hold the secret
    try:
        return label, between(make(), head, tail)
    except Unparseable:
        return label, None


def produce_raw(v: str, form: str) -> list[Variant]:
    __tracebackhide__ = True  # its arguments hold the secret
    return [("error text", around("401 Unauthorized: credential ", v, " was rejected"))]


def produce_case(v: str, form: str) -> list[Variant]:
    __tracebackhide__ = True  # its arguments hold the secret
    fn = {"lower": str.lower, "upper": str.upper, "casefold": str.casefold}[form]
    return [(f"str.{form}", around("Host header normalised to ", fn(v), " by proxy"))]


#: a case variant as ``repr`` or JSON spells it (``casefold``: pytest shows ``assert
#: token.upper() == x``'s operand as its repr)
CASE_SPELLED = re.compile(r"(lower|upper|casefold)-(repr|repr-dq|repr-bytes|json|json-ascii)")


def produce_case_spelled(v: str, form: str) -> list[Variant]:
    __tracebackhide__ = True  # its arguments hold the secret
    case, _, spelling = form.partition("-")
    variant = {"lower": str.lower, "upper": str.upper, "casefold": str.casefold}[case](v)
    producer = produce_json if spelling.startswith("json") else produce_repr
    return [(f"str.{case}, then {label}", sample) for label, sample in producer(variant, spelling)]


def produce_pct(v: str, form: str) -> list[Variant]:
    __tracebackhide__ = True  # its arguments hold the secret
    if form == "pct":
        query = urlencode({"key": v, "page": 2}, quote_via=quote)
        return [
            (
                "urlencode(quote_via=quote)",
                located(f"GET {QUERY_URL[:-4]}{query} -> 401", quote(v, safe="")),
            )
        ]
    if form == "pct-path":
        return [("quote", located(f"GET {PATH_URL}{quote(v)}/pulls -> 404", quote(v)))]
    if form == "pct-plus":
        query = urlencode({"key": v, "page": 2})
        return [("urlencode", located(f"POST body: {query}", quote_plus(v, safe="")))]
    if form in ("pct-lower", "pct-plus-lower"):
        # .NET HttpUtility.UrlEncode writes lower-case escapes (and "+" for space)
        plus = form == "pct-plus-lower"
        encoded = (quote_plus if plus else quote)(v, safe="")
        lowered = re.sub(r"%[0-9A-F]{2}", lambda m: m.group().lower(), encoded)
        return [("lower-case hex escapes", around("GET /v1/items?key=", lowered, " HTTP/1.1"))]
    if form == "pct-double":
        inner = f"{QUERY_URL[:-4]}{urlencode({'key': v}, quote_via=quote)}"
        outer = urlencode({"next": inner}, quote_via=quote)
        return [
            (
                "a URL inside a query",
                located(f"302 Location: /login?{outer}", quote(quote(v, safe=""), safe="")),
            )
        ]
    if form == "pct-requests":
        return [
            _url_variant("requote_uri", lambda: requests_requote_uri(QUERY_URL + v), QUERY_URL),
            _url_variant("prepare(query)", lambda: requests_prepared_url(QUERY_URL + v), QUERY_URL),
            _url_variant("prepare(path)", lambda: requests_prepared_url(PATH_URL + v), PATH_URL),
        ]
    if form == "pct-urllib3":
        return [
            _url_variant(
                f"{_lib('urllib3')} parse_url({where})",
                lambda head=head: urllib3_url_real_or_replica(head + v),
                head,
            )
            for where, head in (("query", QUERY_URL), ("path", PATH_URL))
        ]
    if form == "pct-httpx":
        return [
            _url_variant(
                f"{_lib('httpx', ver)} URL({where})",
                lambda ver=ver, head=head: httpx_url_real_or_replica(head + v, ver),
                head,
            )
            for ver in HTTPX_VERSIONS
            for where, head in (("query", QUERY_URL), ("path", PATH_URL))
        ]
    if form == "pct-userinfo":
        userinfo_url = "https://bob:" + v + "@api.example/"
        return [
            _url_variant(
                f"{_lib('urllib3')} parse_url(userinfo)",
                lambda: urllib3_url_real_or_replica(userinfo_url),
                "https://bob:",
                "@api.example/",
            ),
            *[
                _url_variant(
                    f"{_lib('httpx', ver)} URL(userinfo)",
                    lambda ver=ver: httpx_url_real_or_replica(userinfo_url, ver),
                    "https://bob:",
                    "@api.example/",
                )
                for ver in HTTPX_VERSIONS
            ],
            *[
                _url_variant(
                    f"{_lib('httpx', ver)} copy_with(password=)",
                    lambda ver=ver: httpx_password_url_real_or_replica(v, ver),
                    "https://bob:",
                    "@api.example/",
                )
                for ver in HTTPX_VERSIONS
            ],
        ]
    raise KeyError(form)


# Blob prefixes whose length is 0, 1 and 2 modulo 3: the secret starts at that byte offset.
BASIC_PREFIXES = {0: (b"", b"alice:"), 1: (b"bob:", b"walter:"), 2: (b"mallory:", b"dave:")}


def _offset(form: str) -> int:
    return int(form.rsplit("@", 1)[1])


def produce_base64(v: str, form: str) -> list[Variant]:
    __tracebackhide__ = True  # its arguments hold the secret
    offset, data = _offset(form), v.encode("utf-8", "surrogatepass")
    variants: list[Variant] = []
    for prefix in BASIC_PREFIXES[offset]:
        blob = prefix + data
        if form.startswith("base64url"):
            url = base64.urlsafe_b64encode(blob).decode()
            variants.append(
                (
                    f"urlsafe_b64encode({len(prefix)})",
                    around("callback?state=", url, "&x=1", exact=False),
                )
            )
            variants.append(
                (
                    f"unpadded urlsafe ({len(prefix)})",
                    around("eyJ0eXAiOiJKV1QifQ.", url.rstrip("="), ".sig", exact=False),
                )
            )
        else:
            std = base64.b64encode(blob).decode()
            variants.append(
                (f"b64encode({len(prefix)})", around("Authorization: Basic ", std, "", exact=False))
            )
    return variants


# PowerShell -EncodedCommand: base64 of UTF-16-LE; prefix length c puts the secret at 2c % 3.
UTF16_PREFIXES = {0: "echo '", 1: "$env:K='", 2: "$k='"}


def produce_base64_utf16(v: str, form: str) -> list[Variant]:
    __tracebackhide__ = True  # its arguments hold the secret
    offset = _offset(form)
    command = (UTF16_PREFIXES[offset] + v + "'").encode("utf-16-le", "surrogatepass")
    encode = base64.urlsafe_b64encode if form.startswith("base64url") else base64.b64encode
    blob = encode(command).decode()
    return [
        (
            "powershell -EncodedCommand",
            around("powershell.exe -NoProfile -EncodedCommand ", blob, "", exact=False),
        )
    ]


def produce_base64_wrapped(v: str, form: str) -> list[Variant]:
    """MIME (76, base64.encodebytes), the same carried in a JSON string, and PEM (64,
    textwrap.wrap); the blob's prefix is sized so that a line break cuts the secret's
    encoding."""
    __tracebackhide__ = True  # its arguments hold the secret
    offset, data = _offset(form), v.encode("utf-8", "surrogatepass")
    filler = b"Subject: credentials backup for the deploy robot; " * 8
    variants: list[Variant] = []
    for label, width in (("MIME", 76), ("PEM", 64)):
        size = max(0, (width * 3 // 4) - len(data) // 2)
        size += (offset - size) % 3
        blob = filler[:size] + data
        # the secret's base64 characters [first, last) straddle a line break
        first, last = -(-8 * size // 6), 8 * (size + len(data)) // 6
        cut = any(first < m < last for m in range(width, last, width))
        assert cut, (form, label)
        if label == "MIME":
            wrapped = base64.encodebytes(blob).decode()
            variants.append(
                (
                    "MIME",
                    around(
                        "--b1\nContent-Transfer-Encoding: base64\n\n",
                        wrapped,
                        "--b1--",
                        exact=False,
                    ),
                )
            )
            doc = json.dumps({"attachment": wrapped})
            head = '{"attachment": "'
            variants.append(("MIME in JSON", Sample(doc, len(head), len(doc) - 2, exact=False)))
        else:
            wrapped = "\n".join(textwrap.wrap(base64.b64encode(blob).decode(), width))
            variants.append(
                (
                    "PEM",
                    around(
                        "-----BEGIN BACKUP-----\n", wrapped, "\n-----END BACKUP-----", exact=False
                    ),
                )
            )
    return variants


def produce_hex(v: str, form: str) -> list[Variant]:
    __tracebackhide__ = True  # its arguments hold the secret
    data = b"\x16\x03\x01" + v.encode("utf-8", "surrogatepass")
    if form == "hex":
        return [
            (
                "bytes.hex",
                located(f"payload={data.hex()}", v.encode("utf-8", "surrogatepass").hex()),
            ),
            (
                "binascii.hexlify",
                located(
                    binascii.hexlify(data).decode(),
                    binascii.hexlify(v.encode("utf-8", "surrogatepass")).decode(),
                ),
            ),
        ]
    return [
        (
            "base64.b16encode",
            located(
                f"DATA {base64.b16encode(data).decode()}",
                base64.b16encode(v.encode("utf-8", "surrogatepass")).decode(),
            ),
        )
    ]


def _json_value(v: str, ensure_ascii: bool) -> str:
    __tracebackhide__ = True  # its arguments hold the secret
    return json.dumps(v, ensure_ascii=ensure_ascii)[1:-1]


def produce_json(v: str, form: str) -> list[Variant]:
    __tracebackhide__ = True  # its arguments hold the secret
    doc = {"error": "unauthorized", "token": v}
    if form in ("json", "json-ascii"):
        a = form == "json-ascii"
        return [("json.dumps", located(json.dumps(doc, ensure_ascii=a), _json_value(v, a)))]
    if form in ("json-slash", "json-slash-ascii"):
        # PHP's json_encode escapes "/" (and, by default, non-ASCII): no Python library does
        a = form == "json-slash-ascii"
        text = json.dumps(doc, ensure_ascii=a).replace("/", "\\/")
        return [("php json_encode", located(text, _json_value(v, a).replace("/", "\\/")))]
    combos = (
        [(False, False)] if form == "json-nested" else [(True, True), (False, True), (True, False)]
    )
    variants: list[Variant] = []
    for inner, outer in combos:
        body = json.dumps(doc, ensure_ascii=inner)
        event = json.dumps({"event": "upstream error", "body": body}, ensure_ascii=outer)
        variants.append(
            (
                f"json in json (inner ascii={inner}, outer ascii={outer})",
                located(event, _json_value(_json_value(v, inner), outer)),
            )
        )
    return variants


_PLACEHOLDERS = "\u2603\u2604\u2605"
_BYTE_PLACEHOLDERS = "`|^{}~"


def forced_repr(s: str, quote_char: str) -> str:
    """Python's own ``repr`` escaping of every character, with the quote chosen: what repr
    prints for a text that forces that quote (and what Go's %q, Rust's {:?} print)."""
    __tracebackhide__ = True  # its arguments hold the secret
    placeholder = next(p for p in _PLACEHOLDERS if p not in s)
    return repr(s.replace(quote_char, placeholder))[1:-1].replace(placeholder, "\\" + quote_char)


def forced_bytes_repr(data: bytes, quote_char: str) -> str | None:
    __tracebackhide__ = True  # its arguments hold the secret
    placeholder = next((p for p in _BYTE_PLACEHOLDERS if p.encode() not in data), None)
    if placeholder is None:
        return None
    body = repr(data.replace(quote_char.encode(), placeholder.encode()))[2:-1]
    return body.replace(placeholder, "\\" + quote_char)


def bytes_repr_body(data: bytes, quote: str) -> str:
    """What ``repr(data)`` puts between its quotes when it quotes with ``quote`` (CPython's
    ``bytes_repr``, the quote forced): forced_bytes_repr needs a byte the data lacks."""
    __tracebackhide__ = True  # its arguments hold the secret
    named = {ord("\\"): "\\\\", ord(quote): "\\" + quote, 9: "\\t", 10: "\\n", 13: "\\r"}
    return "".join(named.get(b) or (chr(b) if 0x20 <= b < 0x7F else f"\\x{b:02x}") for b in data)


def produce_repr(v: str, form: str) -> list[Variant]:
    __tracebackhide__ = True  # its arguments hold the secret
    data = v.encode("utf-8", "surrogatepass")
    variants: list[Variant] = []
    if form == "repr":
        # a text holding a double quote is always single-quoted by repr
        variants.append(
            (
                "repr(text with dquote)",
                between(repr(f'auth failed for "{v}"'), "'auth failed for \"", "\"'"),
            )
        )
        bare = repr(v)
        variants.append(
            (
                "KeyError",
                between(f"KeyError: {bare}", "KeyError: '", "'") if bare.startswith("'") else None,
            )
        )
        variants.append(
            (
                "repr(dict)",
                between(repr({"token": v}), "{'token': '", "'}") if bare.startswith("'") else None,
            )
        )
    elif form == "repr-dq":
        text = repr(f"auth failed for '{v}'")
        natural = text.startswith('"')
        variants.append(
            (
                "repr(text with squote)",
                between(text, "\"auth failed for '", "'\"") if natural else None,
            )
        )
        if not natural:
            variants.append(("forced quote", around('"', forced_repr(v, '"'), '"')))
    elif form == "repr-bytes":
        variants.append(
            (
                "repr(bytes with dquote)",
                between(
                    repr(f'auth failed for "{v}"'.encode("utf-8", "surrogatepass")),
                    "b'auth failed for \"",
                    "\"'",
                ),
            )
        )
        bare = repr(data)
        variants.append(
            (
                "str(bytes)",
                between(f"body: {bare}", "body: b'", "'") if bare.startswith("b'") else None,
            )
        )
    elif form == "repr-bytes-dq":
        text = repr(f"auth failed for '{v}'".encode("utf-8", "surrogatepass"))
        natural = text.startswith('b"')
        variants.append(
            (
                "repr(bytes with squote)",
                between(text, "b\"auth failed for '", "'\"") if natural else None,
            )
        )
        if not natural:
            forced = forced_bytes_repr(data, '"')
            variants.append(
                ("forced quote", around('b"', forced, '"') if forced is not None else None)
            )
    elif form in ("repr-bytes-utf16", "repr-bytes-utf16-dq"):
        # str(bytes) of a Windows API's or PowerShell's UTF-16-LE buffer
        utf16 = v.encode("utf-16-le", "surrogatepass")
        quote = "'" if form == "repr-bytes-utf16" else '"'
        framed = repr(("'" if quote == '"' else "").encode("utf-16-le") + utf16)
        if framed.startswith(f"b{quote}"):
            head = "b" + quote + ("'\\x00" if quote == '"' else "")
            variants.append(
                ("str(utf-16 bytes)", between("buffer: " + framed, "buffer: " + head, quote))
            )
        else:  # the value holds both quotes: repr escapes the one it quotes with
            variants.append(
                ("forced quote", around(f"b{quote}", bytes_repr_body(utf16, quote), quote))
            )
    elif form == "unicode-escape":
        escaped = v.encode("unicode_escape").decode("ascii")
        variants.append(("unicode_escape codec", around("token (escaped): ", escaped, " end")))
    return variants


def produce_html(v: str, form: str) -> list[Variant]:
    __tracebackhide__ = True  # its arguments hold the secret
    if form == "html":
        return [
            (
                "html.escape",
                located(f'<input name="token" value="{html.escape(v)}">', html.escape(v)),
            )
        ]
    if form == "html-noquote":
        return [
            (
                "html.escape(quote=False)",
                located(f"<pre>{html.escape(v, quote=False)}</pre>", html.escape(v, quote=False)),
            )
        ]
    if form == "html-markupsafe":
        return [
            ("markupsafe.escape", located(f"<td>{markupsafe_escape(v)}</td>", markupsafe_escape(v)))
        ]
    return [
        (
            "numeric references",
            located(f"<a title='{numeric_entities(v)}'>x</a>", numeric_entities(v)),
        )
    ]


def _n(form: str) -> int:
    return int(form.rsplit("-", 1)[1])


def produce_prefix(v: str, form: str) -> list[Variant]:
    __tracebackhide__ = True  # its arguments hold the secret
    n = _n(form)
    # printf precision, as in a "%(message).40s" log format
    return [
        (f"%.{k}s", Sample(f"token={'%.*s' % (k, v)} (truncated)", 6, 6 + n))  # noqa: UP031
        for k in (n, n + 3)
    ]


def produce_suffix(v: str, form: str) -> list[Variant]:
    __tracebackhide__ = True  # its arguments hold the secret
    n = _n(form)
    return [(f"last {k}", Sample(f"stream tail: {v[-k:]}", 13 + k - n, 13 + k)) for k in (n, n + 2)]


MASKED_TAILS = {  # text before the tail, the part of it that is the masking context
    "credential ending in ": "ending in ",
    "auth failed for token ending ": " ending ",
    "key ****": "**",
    "card \u2022\u2022\u2022\u2022": "\u2022",
    "token \u2026": "\u2026",
}
MASKED_HEADS = {"\u2026 (hidden)": "\u2026", "**** (hidden)": "**", "... (hidden)": "..."}


def produce_masked_tail(v: str, form: str) -> list[Variant]:
    __tracebackhide__ = True  # its arguments hold the secret
    n = _n(form)
    return [
        (before, Sample(before + v[-n:], len(before) - len(context), len(before) + n))
        for before, context in MASKED_TAILS.items()
    ]


def produce_masked_head(v: str, form: str) -> list[Variant]:
    __tracebackhide__ = True  # its arguments hold the secret
    n = _n(form)
    return [
        (after, Sample("key " + v[:n] + after, 4, 4 + n + len(context)))
        for after, context in MASKED_HEADS.items()
    ]


def produce_line(v: str, form: str) -> list[Variant]:
    __tracebackhide__ = True  # its arguments hold the secret
    line = v.split("\n")[_n(form) - 1]
    return [("one line of the key", around("unexpected key material: ", line, " (line skipped)"))]


def produce_utf16(v: str, form: str) -> list[Variant]:
    """UTF-16-LE as written is a file's encoding, not a text's: the catalogue's samples are
    str inside UTF-8 lines, so test_utf16_text_as_written searches a UTF-16-LE transcript
    for every kind instead (place, excerpt, and the near miss of another secret)."""
    return [("a UTF-16-LE file (test_utf16_text_as_written)", None)]


def producer_for(form: str) -> Producer:
    if form == "raw":
        return produce_raw
    if form in ("lower", "upper", "casefold"):
        return produce_case
    if CASE_SPELLED.fullmatch(form):
        return produce_case_spelled
    if form.startswith("pct"):
        return produce_pct
    if form.startswith("base64-wrapped@"):
        return produce_base64_wrapped
    if re.fullmatch(r"base64(url)?-utf16@[012]", form):
        return produce_base64_utf16
    if re.fullmatch(r"base64(url)?@[012]", form):
        return produce_base64
    if form in ("hex", "hex-upper"):
        return produce_hex
    if form == "utf16-le" or re.fullmatch(r"utf16-(prefix|suffix)-\d+", form):
        return produce_utf16
    if form.startswith("json"):
        return produce_json
    if form.startswith("repr") or form == "unicode-escape":
        return produce_repr
    if form.startswith("html"):
        return produce_html
    if re.fullmatch(r"prefix-\d+", form):
        return produce_prefix
    if re.fullmatch(r"suffix-\d+", form):
        return produce_suffix
    if re.fullmatch(r"masked-tail-\d+", form):
        return produce_masked_tail
    if re.fullmatch(r"masked-head-\d+", form):
        return produce_masked_head
    if re.fullmatch(r"line-\d+", form):
        return produce_line
    raise KeyError(f"no real-world producer for form {form!r}: write one in test_forms.py")


def expected_names(secret: Secret, form: str, sample: Sample) -> set[str]:
    """The names a finding on ``sample`` may carry.

    Several library variants model one form; for a given secret a variant's output may equal
    the bytes of a form listed earlier (a URL client that leaves this secret alone prints the
    ``raw`` bytes; JSON-in-JSON of a secret without quotes is plain ``json-ascii``), and the
    earlier form names those bytes. For an exact sample that is the one name whose needle
    equals what the library printed; a blob (base64) must carry the form itself."""
    __tracebackhide__ = True  # its arguments hold the secret
    if not sample.exact:
        return {form}
    printed = sample.text[sample.start : sample.end].encode("utf-8", "surrogatepass")
    return {n.form for n in needles_for(secret) if n.pattern == printed}


def near_misses(secret: Secret, other: Secret, form: str) -> list[tuple[str, str]]:
    """Texts one step away from a leak: the same producer on another secret of the kind,
    and for fragments one character short or without the masking context."""
    out = [
        (f"other secret, {label}", sample.text)
        for label, sample in producer_for(form)(other.value, form)
        if sample is not None
    ]
    v = secret.value
    if form.startswith(("prefix-", "suffix-", "masked-", "line-")):
        n = _n(form)
        flip = {c: ("Q" if c != "Q" else "R") for c in v}
        if form.startswith("prefix-"):
            out.append(("one char short", f"token={v[: n - 1]} (truncated)"))
        elif form.startswith("suffix-"):
            out.append(("one char short", f"stream tail: {v[-(n - 1) :]}"))
        elif form.startswith("masked-tail-"):
            out.append(("no masking context", f"build {v[-n:]}"))
            out.append(("last char changed", "key ****" + v[-n:-1] + flip[v[-1]]))
        elif form.startswith("masked-head-"):
            out.append(("no masking context", f"key {v[:n]} (hidden)"))
            out.append(("head char changed", "key " + v[: n - 1] + flip[v[n - 1]] + "\u2026"))
        else:
            line = v.split("\n")[n - 1]
            mid = len(line) // 2
            out.append(("line char changed", line[:mid] + flip[line[mid]] + line[mid + 1 :]))
    return out


# --- the parametrization ------------------------------------------------------------------

FORM_CASES = [
    pytest.param(kind, form, id=f"{kind}-{form}")
    for kind in SECRET_KINDS
    for form in forms_of(secret_of(kind))
    if not form.startswith(("utf16-le", "utf16-prefix-", "utf16-suffix-"))  # see produce_utf16
]

# a non-ASCII character before the sample: columns count characters, not bytes
HEAD = "leakcheck form test\n\u2192 "
TAIL = "\nend of capture\n"


def _line_col(text: str) -> tuple[int, int]:
    __tracebackhide__ = True  # its arguments hold the secret
    return text.count("\n") + 1, len(text) - (text.rfind("\n") + 1) + 1


def check_sample(kind: str, form: str, backend: str, label: str, sample: Sample) -> set[str]:
    """Scan HEAD + sample + TAIL; assert attribution, location and masking. Returns the
    form names reported.

    Assertions compare names, ids and numbers only: pytest prints the operands of a failing
    assert, so anything that may hold the secret is reduced to a bool first."""
    secret = secret_of(kind)
    sc = scanner(kind, backend)
    haystack = HEAD + sample.text + TAIL
    data = haystack.encode("utf-8", "surrogatepass")
    start = len((HEAD + sample.text[: sample.start]).encode("utf-8", "surrogatepass"))
    end = len((HEAD + sample.text[: sample.end]).encode("utf-8", "surrogatepass"))
    findings = sc.scan(haystack)
    names = [f.form for f in findings]
    where = (kind, form, label)
    assert names, ("not found", *where)
    expected = expected_names(secret, form, sample)
    assert expected, (*where, "the library output is no needle")
    assert set(names) <= expected, (*where, names, sorted(expected))
    for f in findings:
        attributed = (f.secret_id, f.kind, f.secret_class) == (
            secret.id,
            secret.kind,
            secret.secret_class.value,
        )
        assert attributed, (*where, f.secret_id, f.kind, f.secret_class)
        inside = start <= f.offset and f.offset + f.length <= end
        assert inside, (*where, "outside the sample", f.offset, f.length, start, end)
        line, column = _line_col(data[: f.offset].decode("utf-8", "surrogatepass"))
        assert (f.line, f.column) == (line, column), (*where, f.line, f.column, line, column)
        masked = f"\u00abcanary:{secret.kind}:{f.form}\u00bb" in f.excerpt
        assert masked, (*where, f.form, "mask label missing")
        shown = [g.form for g in sc.scan(f.excerpt)]
        assert not shown, (*where, "excerpt shows a form", shown)
        raw_in_excerpt = secret.value in f.excerpt
        assert not raw_in_excerpt, (*where, "excerpt shows the value")
    if sample.exact:
        assert len(findings) == 1, (*where, names)
        (f,) = findings
        assert (f.offset, f.length) == (start, end - start), (*where, "span")
        expected_line_col = _line_col(HEAD + sample.text[: sample.start])
        assert (f.line, f.column) == expected_line_col, where
    return set(names)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(("kind", "form"), FORM_CASES)
def test_form_is_caught_on_real_output_and_near_misses_are_clean(
    kind: str, form: str, backend: str
) -> None:
    secret, other = secret_of(kind), secret_of(kind, "other")
    variants = producer_for(form)(secret.value, form)
    applicable = [(label, sample) for label, sample in variants if sample is not None]
    assert applicable, (kind, form, "no producer applies", [label for label, _ in variants])
    reported: set[str] = set()
    for label, sample in applicable:
        reported |= check_sample(kind, form, backend, label, sample)
    # (a secret for which every library printed bytes that an earlier form names, first
    # name winning: requests' requoting of urllib3's text changes nothing for some values)
    named_before = all(
        sample.exact and form not in expected_names(secret, form, sample)
        for _, sample in applicable
    )
    assert form in reported or named_before, (kind, form, sorted(reported))

    sc = scanner(kind, backend)
    for label, text in near_misses(secret, other, form):
        names = [f.form for f in sc.scan(HEAD + text + TAIL)]
        assert not names, (kind, form, label, names)


# --- which forms exist ----------------------------------------------------------------------

ALL_NAMED_FORMS = {
    "raw",
    "lower",
    "upper",
    "casefold",
    *(
        f"{case}-{spelling}"
        for case in ("lower", "upper", "casefold")
        for spelling in ("repr", "repr-dq", "repr-bytes", "json", "json-ascii")
    ),
    "pct",
    "pct-path",
    "pct-requests",
    "pct-urllib3",
    "pct-userinfo",
    "pct-httpx",
    "pct-lower",
    "pct-plus",
    "pct-plus-lower",
    "pct-double",
    *(
        f"{b}@{k}"
        for b in ("base64", "base64url", "base64-utf16", "base64url-utf16")
        for k in range(3)
    ),
    *(f"base64-wrapped@{k}" for k in range(3)),
    "hex",
    "hex-upper",
    "json",
    "json-ascii",
    "json-slash",
    "json-slash-ascii",
    "json-nested",
    "json-nested-ascii",
    "repr",
    "repr-dq",
    "repr-bytes",
    "repr-bytes-dq",
    "repr-bytes-utf16",
    "repr-bytes-utf16-dq",
    "utf16-le",
    "unicode-escape",
    "html",
    "html-noquote",
    "html-markupsafe",
    "html-numeric",
    "prefix-N",
    "suffix-N",
    "utf16-prefix-N",
    "utf16-suffix-N",
    "line-N",
    *(f"masked-{side}-{n}" for side in ("tail", "head") for n in (4, 6, 8)),
}

_CORE_ALL = {
    "raw",
    "utf16-le",
    "repr-bytes-utf16",
    "upper",
    "hex",
    "hex-upper",
    "html-numeric",
    "prefix-N",
    "suffix-N",
    *(f"base64@{k}" for k in range(3)),
    *(f"base64-utf16@{k}" for k in range(3)),
    *(f"base64-wrapped@{k}" for k in range(3)),
}
_PCT = {"pct", "pct-lower", "pct-double"}
_SPACE = {"pct-plus", "pct-plus-lower"}
_CLIENTS = {"pct-requests", "pct-urllib3", "pct-userinfo", "pct-httpx"}
_TAILS = {f"masked-tail-{n}" for n in (4, 6, 8)}
# Lower-case alphanumerics carry 5.2 bits a character: 4 of them fall short of TAIL_BITS
# (23; measured chance hits on realistic logs), so such kinds are searched from 6 on.
_LONG_TAILS = {f"masked-tail-{n}" for n in (6, 8)}
_HEADS = {f"masked-head-{n}" for n in (4, 6, 8)}
_QUOTED = {"json", "json-nested", "repr", "html", "html-noquote", "html-markupsafe"}
_NON_ASCII = {"json-ascii", "json-nested-ascii", "repr-bytes", "repr-bytes-dq", "unicode-escape"}

# What each kind must produce whatever its random body, from the characters it is made of.
EXPECTED_CORE: dict[str, set[str]] = {
    "bearer": _CORE_ALL | _PCT | {"lower", "pct-path", "json-slash", "masked-head-8"} | _TAILS,
    "api_key": _CORE_ALL
    | _PCT
    | _SPACE
    | _CLIENTS
    | _QUOTED
    | _NON_ASCII
    | {"lower", "pct-path", "json-slash", "masked-head-8"}
    | _TAILS,
    # visible ASCII (a header value): no space, no non-ASCII, but quotes, backslash and %
    "header_key": _CORE_ALL
    | _PCT
    | _CLIENTS
    | _QUOTED
    | {"lower", "pct-path", "json-slash", "masked-head-8", "unicode-escape"}
    | _TAILS,
    "password": _CORE_ALL
    | _PCT
    | _SPACE
    | _CLIENTS
    | _QUOTED
    | _NON_ASCII
    | {"lower", "pct-path", "json-slash"}
    | _HEADS
    | _TAILS,
    "ssh_password": _CORE_ALL
    | _PCT
    | _SPACE
    | _CLIENTS
    | _QUOTED
    | _NON_ASCII
    | {"lower", "casefold", "pct-path", "json-slash"}
    | _HEADS
    | _TAILS,
    "cookie": _CORE_ALL
    | _PCT
    | _CLIENTS
    | {
        "lower",
        "pct-path",
        "json-slash",
        "repr",
        "html",
        "html-noquote",
        "html-markupsafe",
        "masked-head-8",
    }
    | _TAILS,
    "signature": _CORE_ALL | _PCT | {"lower", "pct-path", "json-slash"} | _HEADS | _TAILS,
    "pem_private_key": _CORE_ALL | _PCT | _SPACE | {"lower", "json", "json-nested", "line-N"},
    "client_cert": _CORE_ALL | _PCT | _SPACE | {"lower", "json", "json-nested", "line-N"},
    "hostname": _CORE_ALL | {"masked-head-8"},
    "local_path": _CORE_ALL
    | _PCT
    | _SPACE
    | {
        "lower",
        "pct-path",
        "json-slash",
        "json-ascii",
        "repr",
        "repr-bytes",
        "repr-bytes-dq",
        "html",
        "html-markupsafe",
        "unicode-escape",
    },
    "user_name": _CORE_ALL | {"masked-head-8"} | _LONG_TAILS,
    "resource_id": _CORE_ALL | _PCT | {"json-slash"} | _LONG_TAILS,
    "prose": _CORE_ALL | _PCT | _SPACE | {"lower"} | _TAILS,
}


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_each_kind_has_at_least_its_core_forms(kind: str) -> None:
    for n in range(8):
        secret = CanaryFactory(SEED, namespace=f"core-{n}").secret(kind)
        present = {normalise(f) for f in forms_of(secret)}
        missing = EXPECTED_CORE[kind] - present
        assert not missing, (kind, secret.id, sorted(missing))


def test_every_form_of_the_design_is_produced_for_some_secret() -> None:
    present = {normalise(f) for kind in SECRET_KINDS for f in forms_of(secret_of(kind))}
    assert ALL_NAMED_FORMS - present == set()
    # and nothing exists without a test producing it
    assert present - ALL_NAMED_FORMS == set()


def test_every_needle_form_has_a_producer() -> None:
    for kind in SECRET_KINDS:
        for form in forms_of(secret_of(kind)):
            producer_for(form)  # raises for a form without a real-world producer


def test_fragment_lengths_carry_64_bits_and_masked_parts_23() -> None:
    for kind in SECRET_KINDS:
        secret = secret_of(kind)
        # (an early-accepted user secret's pieces are reported as its full estimate makes
        # them: forms_of)
        bits = tuple(estimate_bits(secret.value)) if secret.mask_bits else secret.bits
        for form in forms_of(secret):
            if form.startswith("prefix-"):
                n = _n(form)
                assert sum(bits[:n]) >= 64 > sum(bits[: n - 1]), (kind, form)
            elif form.startswith("suffix-"):
                n = _n(form)
                assert sum(bits[-n:]) >= 64 > sum(bits[-(n - 1) :]), (kind, form)
            elif form.startswith(("utf16-prefix-", "utf16-suffix-")):
                # the UTF-16-LE spelling of the bare fragment of the same length
                assert form.removeprefix("utf16-") in forms_of(secret), (kind, form)
            elif form.startswith("masked-tail-"):
                assert sum(bits[-_n(form) :]) >= 23, (kind, form)
            elif form.startswith("masked-head-"):
                assert sum(bits[: _n(form)]) >= 23, (kind, form)


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_base64_fragments_are_attributable(kind: str) -> None:
    """A wrapped-base64 chunk is spelled by the secret's own characters: none matches the
    base64 (any offset, wrapped or not) of another canary of the kind, whose armour,
    prefix or suffix is the same text."""
    secrets = [CanaryFactory(SEED, namespace=f"chunks-{n}").secret(kind) for n in range(12)]
    for secret in secrets:
        chunks = [n.pattern for n in needles_for(secret) if n.form.startswith("base64-wrapped")]
        assert chunks, (kind, secret.id)
        assert min(map(len, chunks)) >= 14, (kind, secret.id)
        others = b"\n".join(
            base64.encodebytes(prefix + o.value.encode("utf-8", "surrogatepass"))
            for o in secrets
            if o is not secret
            for prefix in (b"", b"x", b"xy")
        )
        matched = sum(chunk in others for chunk in chunks)
        assert matched == 0, (kind, secret.id, matched)


# --- a sweep over many secrets: real output is caught whatever the random body ------------


@pytest.mark.parametrize("kind", SECRET_KINDS)
def test_real_library_output_is_caught_for_many_secrets(kind: str) -> None:
    """The per-form tests use one secret per kind; a library's output depends on which
    characters a secret holds and where (an escape-like '%4f', a '#' that splits a URL...):
    here 30 secrets per kind go through every producer."""
    for n in range(30):
        secret = (
            _exotic(f"sweep-{n}")
            if kind == "exotic"
            else CanaryFactory(SEED, namespace=f"sweep-{n}").secret(kind)
        )
        sc = Scanner([secret], backend="ahocorasick")
        for form in forms_of(secret):
            for label, sample in producer_for(form)(secret.value, form):
                if sample is None or label == "forced quote":
                    continue
                text = sample.text.encode("utf-8", "surrogatepass")
                start = len(sample.text[: sample.start].encode("utf-8", "surrogatepass"))
                end = len(sample.text[: sample.end].encode("utf-8", "surrogatepass"))
                hits = [
                    f.form
                    for f in sc.scan(text)
                    if start <= f.offset and f.offset + f.length <= end
                ]
                assert hits, (kind, secret.id, form, label)


# --- both engines agree ---------------------------------------------------------------------


def test_backends_report_the_same_findings() -> None:
    if len(available_backends()) < 2:
        pytest.skip("one engine only")
    secrets = [secret_of(k) for k in SECRET_KINDS]
    parts = []
    for secret in secrets:
        for form in forms_of(secret):
            for _label, sample in producer_for(form)(secret.value, form):
                if sample is not None:
                    parts.append(sample.text)
    text = "\n".join(parts)
    by_backend, excerpts = {}, {}
    for backend in ("hyperscan", "ahocorasick"):
        findings = Scanner(secrets, backend=backend).scan(text)
        by_backend[backend] = [
            (f.secret_id, f.form, f.offset, f.length, f.line, f.column) for f in findings
        ]
        excerpts[backend] = [f.excerpt for f in findings]
    assert by_backend["hyperscan"], "nothing found"
    assert by_backend["hyperscan"] == by_backend["ahocorasick"]
    same_excerpts = excerpts["hyperscan"] == excerpts["ahocorasick"]
    assert same_excerpts


# --- the decoding second pass ---------------------------------------------------------------

# Kinds whose JSON escaping changes every stretch of the value that a base64 chunk could
# spell (quotes, backslashes, non-ASCII): base64-of-JSON is then no first-pass hit. (A PEM
# key's JSON escapes only its newlines, a local path only its "é": whole stretches survive
# and the first pass finds them as base64-wrapped chunks, as it should.)
JSON_CHANGED = ["api_key", "password", "ssh_password", "exotic"]
LABEL = re.compile("\u00abcanary:([^:\u00bb]+):([^\u00bb]+)\u00bb")


# (scans happen outside the asserts: pytest would print a call's arguments, the text)
def _decode_scan(kind: str, backend: str, text: str, **kw: object) -> list[Finding]:
    __tracebackhide__ = True  # its arguments hold the secret
    return Scanner([secret_of(kind)], backend=backend, **kw).scan(text)  # type: ignore[arg-type]


def _forms(findings: list[Finding]) -> list[str]:
    return [f.form for f in findings]


def _chain(form: str) -> str:
    return form.rsplit(">", 1)[0] + ">"


def _check_decoded(kind: str, findings: list[Finding], text: str, blob: str) -> None:
    __tracebackhide__ = True  # its arguments hold the secret
    start = len(text[: text.index(blob)].encode())
    secret = secret_of(kind)
    assert findings, kind
    for f in findings:
        assert (f.secret_id, f.kind) == (secret.id, kind), kind
        inside = start <= f.offset and f.offset + f.length <= start + len(blob.encode())
        assert inside, (kind, f.form)
        line_col = _line_col(text[: text.index(blob)])
        assert line_col == (f.line, f.column), (kind, f.form)
        # the whole decoded run is masked, under a label of this kind and decoding chain
        labels = LABEL.findall(f.excerpt)
        assert [(k, _chain(form)) for k, form in labels] == [(kind, _chain(f.form))], (
            kind,
            f.form,
            labels,
        )
        raw_in_excerpt = secret.value in f.excerpt
        assert not raw_in_excerpt, kind
        shown = _forms(Scanner([secret], decode=True).scan(f.excerpt))
        assert not shown, (kind, f.form, shown)


def _fill_to_3(data: bytes) -> bytes:
    """Pad with newlines to a multiple of 3 bytes: its base64 has no "=" (see
    test_decode_keeps_the_last_group_of_a_padded_base64_run)."""
    return data + b"\n" * (-len(data) % 3)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("kind", JSON_CHANGED)
def test_decode_finds_base64_of_json(kind: str, backend: str) -> None:
    v = secret_of(kind).value
    blob = base64.b64encode(json.dumps({"k": v}).encode()).decode()
    text = f"X-Debug-Context: {blob}\n"
    found = _forms(_decode_scan(kind, backend, text))
    # the first pass sees at most a base64 piece of the secret (where the JSON escaping left
    # its characters alone); the decoding pass is what finds the whole chain
    assert all(form.startswith("base64-wrapped@") for form in found), (kind, found)
    findings = _decode_scan(kind, backend, text, decode=True)
    _check_decoded(kind, findings, text, blob)
    inner = {n.pattern: n.form for n in needles_for(secret_of(kind))}.get(
        json.dumps(v).encode()[1:-1]
    )
    assert inner is not None, (kind, "json.dumps output is no needle")
    assert _forms(findings) == [f"base64>{inner}"], kind
    assert inner == "json-ascii", kind


def _plus_slash_secret() -> Secret:
    """A passphrase of alternating letters and "~?>": its base64 holds "+" or "/" every few
    characters, so percent-encoding changes every chunk of it (a canary's base64 usually
    keeps a chunk without them, which the first pass finds on its own)."""
    rng = random.Random("pct-b64:0")
    value = "".join(
        rng.choice(string.ascii_letters + string.digits) + rng.choice("~?>") for _ in range(14)
    )
    return Secret.from_user(value, kind="password", id="plus-slash")


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("user", ["bob:", "alice:", "mallory:"])
def test_decode_finds_percent_encoded_base64(user: str, backend: str) -> None:
    secret = _plus_slash_secret()
    data = _fill_to_3(user.encode() + secret.value.encode())
    blob = quote(base64.b64encode(data).decode(), safe="")  # Basic credentials in a query
    text = f"GET /login?auth={blob} HTTP/1.1\n"
    found = _forms(Scanner([secret], backend=backend).scan(text))
    assert found == [], user
    findings = Scanner([secret], backend=backend, decode=True).scan(text)
    assert _forms(findings) == [f"pct>base64@{len(user) % 3}"], user
    f = findings[0]
    start = text.index(blob)  # the percent run is the whole token holding the blob
    assert f.offset <= start and start + len(blob) <= f.offset + f.length, user
    labels = LABEL.findall(f.excerpt)
    assert [(k, _chain(form)) for k, form in labels] == [("password", "pct>")], (user, labels)
    shown = _forms(Scanner([secret], decode=True).scan(f.excerpt))
    assert not shown, (user, shown)


@pytest.mark.parametrize("kind", ["bearer", "signature", "api_key", "password", "cookie"])
def test_percent_encoded_base64_of_every_canary_is_found_with_decoding(kind: str) -> None:
    v = secret_of(kind).value.encode("utf-8", "surrogatepass")
    for user in (b"bob:", b"alice:", b"mallory:"):
        blob = quote(base64.b64encode(_fill_to_3(user + v)).decode(), safe="")
        text = f"GET /login?auth={blob} HTTP/1.1\n"
        findings = _decode_scan(kind, "ahocorasick", text, decode=True)
        # what the encoding left alone (first pass) or the decoded chain (second pass)
        assert findings, (kind, user)
        forms = _forms(findings)
        assert all("base64" in f for f in forms), forms


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("kind", ["bearer", "api_key", "cookie", "hostname", "prose", "exotic"])
def test_decode_finds_base64_of_base64(kind: str, backend: str) -> None:
    v = secret_of(kind).value.encode("utf-8", "surrogatepass")
    blob = base64.b64encode(_fill_to_3(base64.b64encode(v))).decode()
    text = f'{{"payload": "{blob}"}}\n'
    found = _forms(_decode_scan(kind, backend, text))
    assert found == [], kind
    findings = _decode_scan(kind, backend, text, decode=True)
    _check_decoded(kind, findings, text, blob)
    assert _forms(findings) == ["base64>base64@0"], kind


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("kind", JSON_CHANGED)
def test_decode_depth_two_is_needed_for_base64_of_base64_of_json(kind: str, backend: str) -> None:
    v = secret_of(kind).value
    inner = base64.b64encode(json.dumps({"k": v}).encode())
    blob = base64.b64encode(_fill_to_3(inner)).decode()
    text = f"blob={blob}\n"
    found = _forms(_decode_scan(kind, backend, text, decode=True, decode_depth=1))
    # one layer shows at most a base64 piece of the JSON-escaped secret
    assert all(form.startswith("base64>base64-wrapped@") for form in found), (kind, found)
    findings = _decode_scan(kind, backend, text, decode=True, decode_depth=2)
    _check_decoded(kind, findings, text, blob)
    assert _forms(findings) == ["base64>base64>json-ascii"], kind


@pytest.mark.parametrize("tail", [b"D", b"ND"])
def test_decode_keeps_the_last_group_of_a_padded_base64_run(tail: bytes) -> None:
    from leakcheck.decode import base64_runs

    data = b"x" * 18 + tail  # 19 or 20 bytes: base64 ends in "==" or "="
    decoded = [d for _s, _e, d in base64_runs(b"blob=" + base64.b64encode(data) + b"\n")]
    assert decoded == [data], tail


def test_decoded_finding_excerpt_names_the_reported_form() -> None:
    v = secret_of("bearer").value.encode()
    blob = base64.b64encode(_fill_to_3(base64.b64encode(v))).decode()
    (finding,) = _decode_scan("bearer", "ahocorasick", f"payload {blob}\n", decode=True)
    assert f"\u00abcanary:bearer:{finding.form}\u00bb" in finding.excerpt, finding.form


# --- the replicas against the real packages (when they are importable) ----------------------


class TestReplicasMatchRealLibraries:
    """Run with requests / urllib3 / httpx / markupsafe installed to prove the replicas."""

    def _values(self) -> list[str]:
        values = []
        for n in range(20):
            factory = CanaryFactory(SEED, namespace=f"replica-{n}")
            values += [factory.secret(k).value for k in KINDS]
        return values + [_exotic(f"replica-{n}").value for n in range(20)]

    def test_urllib3(self) -> None:
        url_mod = pytest.importorskip("urllib3.util.url")
        for v in self._values():
            for url in (QUERY_URL + v, PATH_URL + v, f"https://bob:{v}@api.example/"):
                try:
                    mine = urllib3_url(url)
                except Unparseable:
                    continue
                same = url_mod.parse_url(url).url == mine
                assert same, "urllib3 replica differs"

    def test_requests(self) -> None:
        requests = pytest.importorskip("requests")
        for v in self._values():
            same = requests.utils.requote_uri(QUERY_URL + v) == requests_requote_uri(QUERY_URL + v)
            assert same, "requote_uri replica differs"
            for url in (QUERY_URL + v, PATH_URL + v):
                try:
                    mine = requests_prepared_url(url)
                except Unparseable:
                    continue
                same = requests.Request("GET", url).prepare().url == mine
                assert same, "prepare_url replica differs"

    def test_httpx(self) -> None:
        httpx = pytest.importorskip("httpx")
        major_minor = ".".join(httpx.__version__.split(".")[:2])
        version = "0.28" if major_minor >= "0.28" else "0.27" if major_minor >= "0.25" else None
        if version is None:
            pytest.skip("httpx older than 0.25")
        for v in self._values():
            for url in (QUERY_URL + v, PATH_URL + v, f"https://bob:{v}@api.example/"):
                try:
                    mine = httpx_url(url, version)
                except Unparseable:
                    continue
                same = str(httpx.URL(url)) == mine
                assert same, "httpx URL replica differs"
            real = httpx.URL("https://api.example/").copy_with(username="bob", password=v)
            same = str(real) == httpx_password_url(v, version)
            assert same, "httpx password replica differs"

    def test_markupsafe(self) -> None:
        markupsafe = pytest.importorskip("markupsafe")
        for v in self._values():
            same = str(markupsafe.escape(v)) == markupsafe_escape(v)
            assert same, "markupsafe replica differs"


def test_piece_names_come_from_one_registry() -> None:
    """Every name a generator makes for a piece of a secret belongs to a family of
    ``forms.PIECES`` (detect and the masker read their properties there), and no name of
    a whole spelling does."""
    from leakcheck.forms import MASKING_FORMS, fragment_forms, is_piece, window_forms

    factory = CanaryFactory("pieces-1")
    names: set[str] = set()
    pieces: set[str] = set()
    for kind in ("bearer", "password", "pem_private_key", "hostname"):
        secret = factory.secret(kind)
        for form in MASKING_FORMS:
            made = {name for name, _ in form(secret)}
            names |= made
            if form in (fragment_forms, window_forms):
                pieces |= made
    pieces |= {
        name
        for name in names
        if name.startswith(("base64-wrapped", "utf16-prefix", "utf16-suffix"))
    }
    assert pieces and all(is_piece(name) for name in pieces)
    assert not any(is_piece(name) for name in names - pieces)


@pytest.mark.parametrize("quote", [True, False])
def test_our_html_escape_is_the_standard_librarys(quote: bool) -> None:
    from leakcheck.forms import _html_escape

    rng = random.Random(7)
    alphabet = "&<>\"'a;#xé€ &amp;"
    for _ in range(300):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12)))
        assert _html_escape(text, quote) == html.escape(text, quote=quote)


TRANSCRIPT = (
    "**********************\nWindows PowerShell transcript start\n"
    "PS> Invoke-RestMethod -Headers @{{Authorization='Bearer {}'}}\n"
    "Invoke-RestMethod: 401 Unauthorized\n"
)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("kind", SECRET_KINDS)
def test_utf16_text_as_written(kind: str, backend: str) -> None:
    """A UTF-16-LE file (BOM, then two bytes a character) holding the secret is a finding
    named utf16-le at its place; the same file with another secret of the kind is clean."""
    secret, other = secret_of(kind), secret_of(kind, "other")
    sc = scanner(kind, backend)
    head = "\ufeff" + TRANSCRIPT.format("\x00").split("\x00")[0]
    for value, leaky in ((secret.value, True), (other.value, False)):
        data = ("\ufeff" + TRANSCRIPT.format(value)).encode("utf-16-le", "surrogatepass")
        findings = sc.scan(data)
        if not leaky:
            assert not findings, (kind, [f.form for f in findings])
            continue
        forms = [f.form for f in findings]
        assert "utf16-le" in forms, (kind, forms)
        (whole,) = [f for f in findings if f.form == "utf16-le"]
        start = len(head.encode("utf-16-le"))
        assert (whole.offset, whole.length) == (
            start,
            len(value.encode("utf-16-le", "surrogatepass")),
        )
        assert whole.secret_id == secret.id
        # its place and its excerpt read as the UTF-16-LE text they are
        column = len("PS> Invoke-RestMethod -Headers @{Authorization='Bearer ") + 1
        assert (whole.line, whole.column) == (3, column)
        label = f"\u00abcanary:{secret.kind}:utf16-le\u00bb"
        readable = f"Authorization='Bearer {label}'}}\\nInvoke-RestMethod: 401" in whole.excerpt
        assert readable, whole.excerpt.replace(label, "<mask>")[:0]  # (never the value)
        assert secret.value not in whole.excerpt


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("kind", SECRET_KINDS)
def test_a_truncated_secret_in_utf16_text_is_found(kind: str, backend: str) -> None:
    """A transcript that shows the token cut short (``Write-Host $token.Substring(0, n)``,
    a wrapped console): its bare prefix or suffix in UTF-16-LE is a finding, at its
    column, excerpt read as text; one character less, or another secret's, is clean."""
    secret, other = secret_of(kind), secret_of(kind, "other")
    sc = scanner(kind, backend)
    names = forms_of(secret)
    for side in ("prefix", "suffix"):
        # as long as the bare fragment (of the UTF-8 text), which every kind here has
        (n,) = [_n(name) for name in names if name.startswith(f"{side}-")]
        cut = secret.value[:n] if side == "prefix" else secret.value[-n:]
        short = cut[:-1] if side == "prefix" else cut[1:]
        near = other.value[:n] if side == "prefix" else other.value[-n:]
        before = "PS> Write-Host "
        for text, leaky in ((cut, True), (short, False), (near, False)):
            data = ("\ufeff" + before + text + " (cut)\n").encode("utf-16-le", "surrogatepass")
            found = [f for f in sc.scan(data) if f.secret_id == secret.id]
            if not leaky:
                assert not found, (kind, side, [f.form for f in found])
                continue
            assert [f.form for f in found] == [f"utf16-{side}-{n}"], (kind, side)
            (finding,) = found
            assert (finding.line, finding.column) == (1, len("\ufeff" + before) + 1)
            assert f"{before}\u00abcanary:{secret.kind}:utf16-{side}-{n}\u00bb (cut)" in (
                finding.excerpt
            ), kind
        if not secret.value.isascii():
            continue
        # a cut a few characters longer: the mask covers the token as it does in UTF-8 (a
        # byte at a time, it stopped at the next character's NUL and showed the rest)
        longer = secret.value[: n + 5] if side == "prefix" else secret.value[-(n + 5) :]
        line = f"{before}{longer} (cut)\n"
        (in_utf8,) = [f for f in sc.scan(line) if f.form == f"{side}-{n}"]
        data = ("\ufeff" + line).encode("utf-16-le")
        (in_utf16,) = [f for f in sc.scan(data) if f.form == f"utf16-{side}-{n}"]
        assert in_utf16.excerpt.replace(":utf16-", ":") == in_utf8.excerpt, kind


def test_a_tail_after_ending_is_a_masked_tail_and_after_sending_is_not() -> None:
    # "token ending 7KQ2" names a masked tail; "sending", "pending" hold "ending " but
    # do not mask anything (the context's leading space keeps them out)
    secret = CanaryFactory(seed="ending-1").secret("bearer")
    tail = secret.value[-6:]
    scanner = Scanner([secret])
    caught = scanner.scan(f"auth failed for token ending {tail}")
    assert [f.form for f in caught] == ["masked-tail-6"]
    for near_miss in (f"sending {tail} upstream", f"pending {tail} approval"):
        assert scanner.scan(near_miss) == [], near_miss


@pytest.mark.parametrize("kind", ["pem_private_key", "client_cert"])
def test_a_pem_prefix_in_a_cut_repr_is_found(kind: str) -> None:
    """rich's locals (``max_string``) and ``-l`` show a repr cut short: a PEM key's header
    and its first 50 characters, the header's newline written ``\\n``. The bare prefix
    matched only as it is (found by a hunting helper); its repr and JSON spellings count
    now. Another key's cut repr is no finding."""
    secret = CanaryFactory(SEED, namespace=f"pem-cut-{kind}").secret(kind)
    other = CanaryFactory(SEED, namespace=f"pem-cut-other-{kind}").secret(kind)
    for spelled in (repr(secret.value), json.dumps(secret.value)):
        text = f"| pem = {spelled[:80]}...+1234 |\n"
        found = [f.form for f in Scanner([secret], decode=True).scan(text)]
        assert any(form.startswith("prefix-") for form in found), found
        assert not Scanner([other], decode=True).scan(text)
