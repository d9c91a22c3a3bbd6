"""Properties over any hostile secret, any form, any surrounding text (leakcheck.strategies).

Failing examples are printed by Hypothesis through ``repr``: every drawn value here is a
``Secret`` (whose repr hides its value) or a ``Case`` that shows ids, forms and lengths only.
"""

from __future__ import annotations

import base64
import dataclasses
import json
from dataclasses import dataclass
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.vendor.pretty import pretty

import leakcheck.detect as detect_module
from leakcheck import Scanner, Secret, SecretClass, needles_for
from leakcheck.engine import available_backends
from leakcheck.forms import (
    ANCHOR_RUN_CHARS,
    FORMS,
    RUN_KEEPING_FORMS,
    RUN_KEEPING_MAX_NEEDLES,
    anchor_run,
)
from leakcheck.strategies import (
    benign_text,
    encoded_forms,
    hostile_secrets,
    hostile_values,
    secret_kinds,
    text_with_leak,
)

PROPERTY = settings(
    max_examples=200,
    deadline=None,
    database=None,  # no example files in the work tree; failures replay from the seed
    suppress_health_check=[HealthCheck.too_slow],
)


@dataclass(frozen=True)
class Case:
    """One leak planted in random text, with two unrelated secrets registered beside it."""

    secret: Secret
    others: tuple[Secret, ...]
    form: str
    before: bytes
    needle: bytes
    after: bytes

    @property
    def haystack(self) -> bytes:
        return self.before + b" " + self.needle + b" " + self.after

    @property
    def clean(self) -> bytes:
        return self.before + b"  " + self.after

    @property
    def span(self) -> tuple[int, int]:
        start = len(self.before) + 1
        return start, start + len(self.needle)

    def __repr__(self) -> str:  # never the value, the needle or the text around it
        return (
            f"Case(secret={self.secret!r}, others={list(self.others)!r}, form={self.form!r}, "
            f"needle={len(self.needle)} bytes, before={len(self.before)}, "
            f"after={len(self.after)})"
        )

    def _repr_pretty_(self, printer: object, cycle: bool) -> None:
        # Hypothesis prints a dataclass field by field, bypassing __repr__
        printer.text(repr(self))  # type: ignore[attr-defined]


@st.composite
def other_secrets(draw: st.DrawFn, besides: Secret) -> tuple[Secret, ...]:
    """Two more canaries of any kinds, with ids of their own."""
    out: list[Secret] = []
    for i in range(2):
        secret = draw(
            hostile_secrets().filter(
                lambda s: s.value not in {besides.value, *(o.value for o in out)}
            )
        )
        out.append(dataclasses.replace(secret, id=f"other-{i}-{secret.kind}"))
    return tuple(out)


@st.composite
def leak_cases(draw: st.DrawFn) -> Case:
    secret = draw(hostile_secrets())
    form, needle = draw(encoded_forms(secret))
    before, after = draw(benign_text()), draw(benign_text())
    return Case(secret, draw(other_secrets(secret)), form, before, needle, after)


class Opaque:
    """A drawn value that holds a secret, shown by type and length only."""

    def __init__(self, value: object) -> None:
        self.value = value

    def __repr__(self) -> str:
        shape = [len(v) if isinstance(v, (str, bytes)) else v for v in _items(self.value)]
        return f"Opaque({type(self.value).__name__}, {shape})"

    _repr_pretty_ = Case._repr_pretty_


def _items(value: object) -> list[object]:
    return list(value) if isinstance(value, tuple) else [value]


def winner(secret: Secret, needle: bytes) -> str | None:
    """The form name the scanner gives these bytes (the first form listing them)."""
    __tracebackhide__ = True  # its arguments hold the secret
    for n in needles_for(secret):
        if n.pattern == needle:
            return n.form
    return None


def scanner_for(case: Case, backend: str = "ahocorasick") -> Scanner:
    return Scanner([case.secret, *case.others], backend=backend)


def _check_leak_found(case: Case, backend: str) -> None:
    findings = scanner_for(case, backend).scan(case.haystack)
    start, end = case.span
    mine = [f for f in findings if f.secret_id == case.secret.id]
    foreign = [f.secret_id for f in findings if f.secret_id != case.secret.id]
    assert not foreign, foreign
    name = winner(case.secret, case.needle)
    assert name is not None, case.form
    # the planted needle itself, or a longer form of the same secret that contains it
    exact = [f.form for f in mine if (f.offset, f.offset + f.length) == (start, end)]
    outer = [f.form for f in mine if f.offset <= start and end <= f.offset + f.length]
    assert exact == [name] or (not exact and outer), (case.form, name, exact, outer)
    for f in mine:
        assert f.kind == case.secret.kind and f.secret_class == case.secret.secret_class.value


@PROPERTY
@given(case=leak_cases())
def test_any_form_of_any_hostile_secret_is_found_in_random_text(case: Case) -> None:
    _check_leak_found(case, "ahocorasick")


@pytest.mark.skipif("hyperscan" not in available_backends(), reason="no hyperscan")
@settings(PROPERTY, max_examples=40)
@given(case=leak_cases())
def test_any_form_is_found_with_hyperscan_too(case: Case) -> None:
    _check_leak_found(case, "hyperscan")


@PROPERTY
@given(case=leak_cases())
def test_the_same_text_without_the_leak_is_clean(case: Case) -> None:
    names = [f.form for f in scanner_for(case).scan(case.clean)]
    assert not names, names


@PROPERTY
@given(case=leak_cases())
def test_excerpts_never_contain_a_needle(case: Case) -> None:
    sc = scanner_for(case)
    findings = sc.scan(case.haystack)
    patterns = [n.pattern for s in (case.secret, *case.others) for n in needles_for(s)]
    for f in findings:
        shown = f.excerpt.encode("utf-8", "surrogatepass")
        leaked = [i for i, p in enumerate(patterns) if p in shown]
        assert not leaked, (f.form, len(leaked))
        again = [g.form for g in sc.scan(f.excerpt)]
        assert not again, (f.form, again)
        assert "\u00abcanary:" in f.excerpt


@settings(PROPERTY, max_examples=100)
@given(secret=hostile_secrets(), data=st.data())
def test_text_with_leak_is_found_under_its_form(secret: Secret, data: st.DataObject) -> None:
    haystack, form = data.draw(text_with_leak(secret).map(Opaque)).value
    findings = Scanner([secret], backend="ahocorasick").scan(haystack)
    assert findings, form
    assert {f.secret_id for f in findings} == {secret.id}
    # the names the scanner may give the bytes of this form (an equal earlier form wins)
    own = {pattern for fn in FORMS for name, pattern in fn(secret) if name == form}
    names = {winner(secret, pattern) for pattern in own}
    assert names & {f.form for f in findings}, (form, sorted(f.form for f in findings))


@settings(PROPERTY, max_examples=60)
@given(secret=hostile_secrets())
def test_base64_of_json_of_any_secret_is_found_when_decoding(secret: Secret) -> None:
    blob = base64.b64encode(json.dumps({"token": secret.value}).encode()).decode()
    text = f"context={blob}\n"
    findings = Scanner([secret], backend="ahocorasick", decode=True).scan(text)
    forms = [f.form for f in findings]
    assert forms, secret.kind
    assert all("base64" in form for form in forms), forms


@PROPERTY
@given(drawn=hostile_values(kinds=["cookie"]).map(Opaque))
def test_hostile_values_of_a_kind_keep_its_rules(drawn: Opaque) -> None:
    value = drawn.value
    assert isinstance(value, str)
    bad = [ord(c) for c in value if c in ' ",;\\' or ord(c) < 0x21 or ord(c) > 0x7E]
    assert not bad, bad


@settings(PROPERTY, max_examples=50)
@given(kind=secret_kinds(["bearer", "hostname"]), secret=hostile_secrets(kinds=["prose"]))
def test_strategies_honour_their_kinds(kind: str, secret: Secret) -> None:
    assert kind in ("bearer", "hostname")
    assert secret.kind == "prose" and secret.generated
    assert secret.total_bits >= 96


def test_unknown_kinds_are_refused_by_the_strategies() -> None:
    with pytest.raises(ValueError, match="no_such_kind"):
        secret_kinds(["bearer", "no_such_kind"])


@settings(PROPERTY, max_examples=50)
@given(secret=hostile_secrets())
def test_drawn_secrets_print_safely(secret: Secret) -> None:
    """What Hypothesis prints for a failing example (its pretty printer, which shows a
    dataclass field by field) hides the drawn secret's value."""
    shown = pretty(secret) + pretty([secret]) + pretty(needles_for(secret)[:3])
    pieces = {secret.value[i : i + 6] for i in range(len(secret.value) - 5)}
    leaked = [p for p in pieces if p in shown]
    assert not leaked, (secret.id, len(leaked))


# --- needles put off until a text holds the anchor run ------------------------------------
#
# A scanner on the ahocorasick backend makes the URL, JSON, repr and HTML spellings of a
# secret only once a text holds its anchor run. That is exact only if every needle of those
# forms holds the run, for any value: hostile canaries and any text a user registers.

# Values made of letter-and-digit runs (anchor candidates) after what makes the spellings
# differ: escapes valid and not (a "%" right before a run), URL delimiters, quotes, non-ASCII.
SEPARATORS = st.one_of(
    st.sampled_from(["%", "%", "%%", "%4", "%z", "?", "#", "&", "=", "+", " ", "/", ":", "@"]),
    st.sampled_from(["'", '"', "\\", "<", "`", "{", "|", "^", "~", "-", ".", "_", "", "\n"]),
    st.characters(blacklist_categories=("Cs",)),  # lone surrogates cannot be URL-quoted
)
RUNS = st.text("abcdefABCDEF0123456789xyzXYZ", max_size=14)
VALUES = st.lists(st.tuples(SEPARATORS, RUNS), min_size=1, max_size=5).map(
    lambda pieces: "".join(separator + run for separator, run in pieces)
)


def _check_anchor_run_in_every_spelling(secret: Secret) -> None:
    # the bound a scanner counts on to keep its engine's order of hits (see Scanner)
    count = len({pattern for form in RUN_KEEPING_FORMS for _, pattern in form(secret)})
    assert count <= RUN_KEEPING_MAX_NEEDLES, count
    run = anchor_run(secret)
    if run is None:
        return
    assert len(run) >= ANCHOR_RUN_CHARS
    missing = [
        name for form in RUN_KEEPING_FORMS for name, pattern in form(secret) if run not in pattern
    ]
    assert not missing, missing


@PROPERTY
@given(secret=hostile_secrets())
def test_every_put_off_needle_of_a_canary_holds_its_anchor_run(secret: Secret) -> None:
    _check_anchor_run_in_every_spelling(secret)


@PROPERTY
@given(drawn=VALUES.map(Opaque))
def test_every_put_off_needle_of_any_value_holds_its_anchor_run(drawn: Opaque) -> None:
    value = drawn.value
    assert isinstance(value, str)
    _check_anchor_run_in_every_spelling(Secret(value, "user", "user#1", SecretClass.DIRECT))


@pytest.mark.parametrize(
    "value", ["AAAA%2fbcdefghijk", "xy%2fbcdefghij%7eABCDEFGHIJ"], ids=["one", "two"]
)
def test_both_characters_after_a_percent_are_kept_out_of_the_anchor_run(value: str) -> None:
    """The run ``bcdefghijk``, not ``fbcdefghijk``: requests and urllib3 upper-case the
    ``2f`` of a ``%2f`` they are given (``%2F``). Pinned: the properties above did not
    draw such a value when ``anchor_run`` hid only the first of the two."""
    secret = Secret(value, "user", "user#1", SecretClass.DIRECT)
    assert anchor_run(secret) in (b"bcdefghijk", b"ABCDEFGHIJ")
    _check_anchor_run_in_every_spelling(secret)


@PROPERTY
@given(case=leak_cases(), decode=st.booleans())
def test_a_scanner_putting_needles_off_finds_what_an_eager_one_finds(
    case: Case, decode: bool
) -> None:
    secrets = [case.secret, *case.others]
    lazy = Scanner(secrets, backend="ahocorasick", decode=decode)
    with mock.patch.object(detect_module, "_defers", return_value=False):
        reference = Scanner(secrets, backend="ahocorasick", decode=decode)
    for text in (case.clean, case.haystack):  # the clean text first: nothing made yet
        # compared into a bool: pytest would print both sides, which may hold the secret
        same = [f.to_dict() for f in lazy.scan(text)] == [f.to_dict() for f in reference.scan(text)]
        assert same, ("findings differ", case.form)
        message = text.decode("utf-8", "replace")
        same = lazy.mask(message) == reference.mask(message)
        assert same, ("masks differ", case.form)


def _chain(secret: Secret, kind: str) -> str:
    import urllib.parse

    data = secret.value.encode("utf-8", "surrogatepass")
    if kind == "base64-of-json":
        return base64.b64encode(json.dumps({"token": secret.value}).encode()).decode()
    if kind == "percent-of-base64":
        return urllib.parse.quote(base64.b64encode(data).decode(), safe="")
    return "".join(  # lower-case escapes of everything but letters and digits
        c if c.isascii() and c.isalnum() else "".join(f"%{b:02x}" for b in c.encode())
        for c in secret.value
    )


@settings(PROPERTY, max_examples=40)
@given(
    secret=hostile_secrets(),
    kind=st.sampled_from(["base64-of-json", "percent-of-base64", "percent-all-lower"]),
    keyed=st.booleans(),
)
def test_chains_of_any_secret_are_found_decoded_whole_and_keyed(
    secret: Secret, kind: str, keyed: bool
) -> None:
    size = detect_module.KEYED_FROM_BYTES if keyed else None
    scanner = Scanner([secret], backend="ahocorasick", decode=True, input_bytes=size)
    text = f"2026-12-01 INFO upstream said state={_chain(secret, kind)} ok\n"
    assert scanner.scan(text), (secret.kind, kind, keyed)


@settings(PROPERTY, max_examples=40)
@given(secret=hostile_secrets(), width=st.integers(35, 80), indent=st.integers(2, 40))
def test_a_percent_encoded_secret_wrapped_at_any_width_is_found(
    secret: Secret, width: int, indent: int
) -> None:
    import urllib.parse

    value = "url=" + urllib.parse.quote(secret.value, safe="")
    lines = [value[i : i + width] for i in range(0, len(value), width)]
    text = "[12:00:00] INFO     " + "\n".join(
        (" " * indent if n else "") + line + " " * (width - len(line))
        for n, line in enumerate(lines)
    )
    found = Scanner([secret], backend="ahocorasick", decode=True).scan(text + "\n")
    pieces = ("prefix-", "suffix-", "masked-", "line-", "base64-wrapped@")
    whole = [f.form for f in found if not f.form.rpartition(">")[2].startswith(pieces)]
    assert whole or len(lines) == 1, (secret.kind, width, indent, [f.form for f in found])
