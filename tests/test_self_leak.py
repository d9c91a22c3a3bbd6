"""leakcheck never becomes the leak: the whole pytest session, every channel, every route.

An inner suite plants secrets in every way the plugin must survive: another test's secret
in a later test that never asked for the fixture, a module fixture's teardown error, a
``__del__`` warning after its test ended, a thread that dies in the next test, a warning at
collection, a session secret in a parametrize id, ``record_property`` of every kind,
``record_xml_attribute``, ``record_testsuite_property``, ``-l`` locals holding a secret's
UTF-16-LE bytes, a ``str`` whose ``encode`` raises, a tool response holding an earlier
test's token beside the test's own, ``pytest.exit`` and ``KeyboardInterrupt``. Each run
writes every channel (the terminal in each ``--tb`` style with ``-vv -l -rA``, the warnings
summary, JUnit XML with properties and captured output, the JSON report, ``--log-file``
and ``log_cli``), serially and under xdist, and all of it is searched by an independent
oracle (``leak_oracle``: the standard library's spellings of each secret, whole and by
6-character window) and by a strict masking-strength scanner: zero hits.

The teeth: with any one masking step of the plugin switched off (by an inner conftest),
the same search finds a secret in the channel that step guards.
"""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from typing import Any

import pytest
from leak_oracle import hits

from leakcheck import CanaryFactory, Scanner, Secret
from leakcheck.forms import MASKING_FORMS

pytest_plugins = ["pytester"]

SEED = "self-leak-1"
MODULE = "test_selfleak.py"
#: A user's real token, registered for the session through leakcheck_secret_env.
TOKEN = "ghp_Qx8Vt3Lm7Rz2Kp9Wn4Hc6Jd1Fb5Gs0Ye"
TOKEN_ENV = "SELF_LEAK_TOKEN"

INNER = """
import gc, logging, os, sys, threading, warnings
import pytest

TOKEN = os.environ["SELF_LEAK_TOKEN"]
warnings.warn(f"collected with {TOKEN}")  # a warning during collection
HOLD = {}
RELEASE = threading.Event()
log = logging.getLogger("gateway")


class LateWarner:
    def __init__(self, value):
        self.value = value

    def __del__(self):
        warnings.warn(f"released {self.value}")


class Stubborn(str):
    def encode(self, *args, **kwargs):
        raise RuntimeError("no encoding today")


class NoText:
    def __str__(self):
        raise RuntimeError("no text today")


@pytest.fixture(scope="module")
def module_box():
    box = {}
    yield box
    raise RuntimeError(f"module teardown failed for {box['bearer']}")


@pytest.mark.parametrize("token", [TOKEN])
def test_parametrized(leakcheck, token):
    assert token.startswith("nope")


def test_plants(leakcheck, module_box, record_testsuite_property):
    bearer = leakcheck.secret("bearer")
    key = leakcheck.secret("api_key")
    HOLD.update(bearer=bearer, key=key, late=LateWarner(bearer))
    module_box["bearer"] = bearer
    record_testsuite_property("upstream", f"https://api.example/v1?api_key={key}")

    def dies_late():
        RELEASE.wait(0.5)
        raise RuntimeError(f"refresh failed for {bearer}")

    HOLD["thread"] = threading.Thread(target=dies_late)
    HOLD["thread"].start()


def test_without_fixture():
    bearer, key = HOLD["bearer"], HOLD["key"]
    print("earlier token", bearer)
    sys.stderr.write(f"key {key}\\n")
    log.warning("reusing %s", bearer)
    RELEASE.set()
    HOLD["thread"].join()  # it dies now, in a test that never saw its secret
    del HOLD["late"]
    gc.collect()  # and a __del__ warns here
    utf16 = bearer.encode("utf-16-le")
    utf8 = key.encode()
    assert not utf16, key


def test_record_kinds(leakcheck, record_property, record_xml_attribute):
    key = leakcheck.secret("api_key")
    record_property("text", f"k={key}")
    record_property("mapping", {"k": key})
    record_property("bytes", key.encode())
    record_property("sequence", [key, HOLD["bearer"]])
    record_xml_attribute("upstream_key", key)
    record_property("stubborn", Stubborn(f"k={key}"))
    record_property("no_text", NoText())


def test_hostile_and_foreign(leakcheck):
    own = leakcheck.secret("cookie")
    leakcheck.expose({"detail": f"cookie {own} for {HOLD['bearer']}"})
    leakcheck.expose(Stubborn(f"stubborn {own}"))
    log.error(Stubborn(f"logged {own}"))
"""

EXIT = """
import pytest

def test_exit(leakcheck):
    token = leakcheck.secret("bearer")
    pytest.exit(f"stopping: token {token}")
"""

INTERRUPT = """
def test_interrupt(leakcheck):
    token = leakcheck.secret("bearer")
    raise KeyboardInterrupt(f"interrupted with {token}")
"""

INTERNAL = """
import pytest

def test_holds(leakcheck):
    pytest.held = leakcheck.secret("bearer")
"""

#: A plugin of the app that breaks after a test, with the test's secret in its message.
INTERNAL_CONFTEST = """
import pytest

def pytest_runtest_logfinish(nodeid, location):
    held = getattr(pytest, "held", None)
    if held:
        raise RuntimeError(f"reporter broke on {held}")
"""

#: Canary kinds each inner test draws, in call order.
KINDS = {
    f"{MODULE}::test_plants": ["bearer", "api_key"],
    f"{MODULE}::test_record_kinds": ["api_key"],
    f"{MODULE}::test_hostile_and_foreign": ["cookie"],
    "test_exit.py::test_exit": ["bearer"],
    "test_interrupt.py::test_interrupt": ["bearer"],
    "test_internal.py::test_holds": ["bearer"],
}


def _secrets() -> list[Secret]:
    made = [Secret.from_user(TOKEN, kind="secret", id="token")]
    for test, kinds in KINDS.items():
        factory = CanaryFactory(SEED, namespace=test)
        made += [factory.secret(kind) for kind in kinds]
    return made


SECRETS = _secrets()
STRICT = Scanner(SECRETS, decode=True, forms=MASKING_FORMS, strict=True)

#: Every channel of one run, as command-line options (the files are read back).
CHANNELS = (
    "-vv", "-l", "-rA", "-W", "always",
    "--junitxml=junit.xml", "-o", "junit_family=xunit1", "-o", "junit_logging=all",
    "-o", "junit_log_passing_tests=true",
    "-o", "log_cli=true", "-o", "log_cli_level=DEBUG",
    "--log-file=pytest.log", "--log-file-level=DEBUG",
    "--leakcheck-report=leakcheck.json",
)  # fmt: skip


def assert_clean(outputs: dict[str, str | bytes]) -> None:
    """No spelling of any secret in any output: the oracle, then the strict scanner."""
    # pytest prints a failing frame's arguments: the text under test, unmasked
    __tracebackhide__ = True
    for name, content in outputs.items():
        found = hits(content, SECRETS)
        assert not found, f"{name}: {found}"
        data = content.encode("utf-8", "surrogatepass") if isinstance(content, str) else content
        echoed = "; ".join(f"{f.secret_id} as {f.form}" for f in STRICT.scan(data))
        assert not echoed, f"{name} echoes: {echoed}"


def run_inner(
    pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    *args: str,
    source: str = INNER,
    module: str = MODULE,
    conftest: str = "",
    subprocess: bool = False,
) -> tuple[pytest.RunResult, dict[str, str | bytes]]:
    """One inner run writing every channel; its outputs by name."""
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    pytester.makepyfile(**{module[:-3]: source})
    pytester.makeini(f"[pytest]\nleakcheck_secret_env = {TOKEN_ENV}\n")
    if conftest:
        pytester.makeconftest(conftest)
    run = pytester.runpytest_subprocess if subprocess else pytester.runpytest
    result = run(
        "-p", "no:randomly", "-p", "no:hypothesispytest",
        f"--leakcheck-seed={SEED}", *CHANNELS, *args,
    )  # fmt: skip
    outputs: dict[str, str | bytes] = {
        "stdout": "\n".join(result.outlines),
        "stderr": "\n".join(result.errlines),
    }
    for name in ("junit.xml", "leakcheck.json", "pytest.log", IDS_READ):
        path = pytester.path / name
        if path.exists():
            outputs[name] = path.read_bytes()
    # pytest's cache (test ids of the last run, of the failed ones): often kept by CI
    for path in sorted((pytester.path / ".pytest_cache").rglob("*")):
        if path.is_file():
            outputs[str(path.relative_to(pytester.path))] = path.read_bytes()
    return result, outputs


def _shows(text: str, *routes: str) -> None:
    """The run took each route (a masked label where the secret was): the scenario fired."""
    missing = [route for route in routes if route not in text]
    assert not missing, f"routes not taken: {missing}"


MASKED = "\u00abcanary:"

#: What the main inner run must show, masked, in every --tb style: proof that each way of
#: planting fired.
ROUTES = (
    f"collected with {MASKED}",  # a warning at collection (the session token)
    f"test_parametrized[{MASKED}",  # the parametrize id, masked from collection on
    f"released {MASKED}",  # __del__ after its test ended
    f"refresh failed for {MASKED}",  # a thread that died in a later test
    f"module teardown failed for {MASKED}",
)
#: ... and where the style shows captured output and locals
DETAIL_ROUTES = {
    "long": (f"earlier token {MASKED}", f"reusing {MASKED}", "utf16 = b"),
    "auto": (f"earlier token {MASKED}", f"reusing {MASKED}", "utf16 = b"),
    "short": (f"earlier token {MASKED}", f"reusing {MASKED}"),
    "native": (f"earlier token {MASKED}", f"reusing {MASKED}"),
}


@pytest.mark.parametrize("tb", ["long", "short", "line", "native", "no", "auto"])
def test_every_channel_is_clean(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tb: str
) -> None:
    result, outputs = run_inner(pytester, monkeypatch, f"--tb={tb}")
    stdout = str(outputs["stdout"])
    assert "INTERNALERROR" not in stdout + str(outputs["stderr"])
    _shows(stdout, *ROUTES, *DETAIL_ROUTES.get(tb, ()))
    # the parametrize id never reached pytest's cache unmasked
    nodeids = json.loads(outputs[".pytest_cache/v/cache/nodeids"])
    _shows("\n".join(nodeids), f"test_parametrized[{MASKED}")
    junit = outputs["junit.xml"].decode()  # type: ignore[union-attr]
    _shows(junit, 'name="upstream"', 'name="mapping"', "upstream_key=", 'name="no_text"')
    report = json.loads(outputs["leakcheck.json"])
    assert {r["test"] for r in report["tests"]} >= {f"{MODULE}::test_plants"}
    assert_clean(outputs)


def test_every_channel_is_clean_under_xdist(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Masking happens in the worker that knows the secrets: the controller knows none."""
    result, outputs = run_inner(
        pytester, monkeypatch, "-n", "2", "--dist=loadfile", subprocess=True
    )
    stdout = str(outputs["stdout"])
    assert "gw0" in stdout or "gw1" in stdout
    _shows(stdout, *ROUTES, *DETAIL_ROUTES["long"][:2])
    assert_clean(outputs)


@pytest.mark.parametrize(
    "source, module", [(EXIT, "test_exit.py"), (INTERRUPT, "test_interrupt.py")]
)
@pytest.mark.parametrize("trace", ["", "--full-trace"])
def test_exit_banners_are_clean(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, source: str, module: str, trace: str
) -> None:
    extra = (trace,) if trace else ()
    result, outputs = run_inner(
        pytester, monkeypatch, *extra, source=source, module=module, subprocess=True
    )
    assert result.ret == pytest.ExitCode.INTERRUPTED
    stdout = str(outputs["stdout"])
    _shows(stdout, MASKED)
    # pytest's banner ("!!! ... !!!"): as many "!" as the message leaves room for, one
    # at least (the message measured with the token in it, before masking)
    banners = [line for line in stdout.splitlines() if line[:2] in ("! ", "!!") and line[-1] == "!"]
    assert banners, "no exit banner"
    assert_clean(outputs)


@pytest.mark.parametrize("workers", [(), ("-n", "2")], ids=["serial", "xdist"])
def test_an_internal_error_is_clean(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, workers: tuple[str, ...]
) -> None:
    result, outputs = run_inner(
        pytester, monkeypatch, *workers, source=INTERNAL, module="test_internal.py",
        conftest=INTERNAL_CONFTEST, subprocess=True,
    )  # fmt: skip
    if not workers:  # (xdist's controller reports a worker's INTERNALERROR and exits 0)
        assert result.ret == pytest.ExitCode.INTERNAL_ERROR
    _shows(str(outputs["stdout"]) + str(outputs["stderr"]), f"reporter broke on {MASKED}")
    assert_clean(outputs)


# --- the teeth: each masking step is what keeps some channel clean -----------------------

#: (a masking step switched off by an inner conftest, the run that shows it missing)
#: (the module, and its class if any, that holds a masking step; the step's name; what
#: switches it off; the run where it alone keeps a channel clean)
_REPORTS, _SESSION = "leakcheck.pytest_plugin.reports", "leakcheck.pytest_plugin.session"
STEPS = {
    "reports": (_REPORTS, "", "mask_report", "lambda report, mask: None", "xdist"),
    "warnings": (_REPORTS, "", "mask_warning", "lambda message, mask: None", "xdist"),
    "test ids": (_REPORTS, "", "mask_test_ids", "lambda items, mask: None", "xdist"),
    "terminal": (_SESSION, "PluginSession", "mask_terminal", "lambda self: None", "interrupt"),
    "internal errors": (
        _SESSION, "PluginSession", "pytest_internalerror", "lambda self, excrepr: None",
        "internal",
    ),
    "junit": (_REPORTS, "", "mask_junit", "lambda xml, mask: None", "serial"),
    "live logs": (
        _SESSION, "PluginSession", "_masked_format", "lambda self, fmt: fmt", "serial",
    ),
    "json report": ("leakcheck.masking", "", "mask_strings", "lambda value, mask: value", "serial"),
}  # fmt: skip

#: What another plugin reads of the tests' ids once they are collected (pytest-json-report,
#: a report log): the channel the test ids step alone keeps clean, since pytest's own cache
#: writes are masked at the end as well.
IDS_READ = "ids-read-by-a-plugin.txt"
READ_IDS = f"""

import pytest

@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items):
    with open({IDS_READ!r}, "a", encoding="utf-8") as ids:
        ids.writelines(item.nodeid + "\\n" for item in items)
"""

#: Switches one step off for one run, and back on after it: an in-process run shares the
#: interpreter with the tests that follow.
SWITCH_OFF = """
import importlib

_TARGET = importlib.import_module({module!r})
if {owner!r}:
    _TARGET = getattr(_TARGET, {owner!r})
_NAME = {name!r}
_SAVED = getattr(_TARGET, _NAME)
setattr(_TARGET, _NAME, {replacement})


def pytest_unconfigure(config):
    setattr(_TARGET, _NAME, _SAVED)
"""


def _owner(module: str, owner: str) -> Any:
    found = importlib.import_module(module)
    return getattr(found, owner) if owner else found


@pytest.mark.parametrize("step", sorted(STEPS))
def test_each_masking_step_is_needed(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, step: str
) -> None:
    module, owner_name, name, replacement, run = STEPS[step]
    conftest = SWITCH_OFF.format(
        module=module, owner=owner_name, name=name, replacement=replacement
    )
    if step == "test ids":
        conftest += READ_IDS
    owner = _owner(module, owner_name)
    original = getattr(owner, name)
    if run == "xdist":
        _, outputs = run_inner(
            pytester, monkeypatch, "-n", "2", "--dist=loadfile", conftest=conftest, subprocess=True
        )
    elif run == "internal":
        _, outputs = run_inner(
            pytester, monkeypatch, "-n", "2", source=INTERNAL, module="test_internal.py",
            conftest=conftest + INTERNAL_CONFTEST, subprocess=True,
        )  # fmt: skip
    elif run == "interrupt":
        _, outputs = run_inner(
            pytester, monkeypatch, source=INTERRUPT, module="test_interrupt.py",
            conftest=conftest, subprocess=True,
        )  # fmt: skip
    else:
        _, outputs = run_inner(pytester, monkeypatch, conftest=conftest)
    assert getattr(owner, name) is original, "the step was not switched back on"
    leaked = [channel for channel, content in outputs.items() if hits(content, SECRETS)]
    # names only: the contents hold the unmasked secrets now
    assert leaked, f"with {step} masking off, no output shows a secret: the step is untested"


def test_the_oracle_sees_what_masking_hides() -> None:
    """The oracle has teeth of its own: each secret, whole, in pieces and encoded."""
    for secret in SECRETS:
        assert hits(f"x {secret.value} y", [secret]), secret.id
        assert hits(repr(secret.value.encode("utf-16-le"))[:60], [secret]), secret.id
    clean = Path(__file__).read_text(encoding="utf-8")
    assert not hits(clean.replace(TOKEN, ""), SECRETS)
