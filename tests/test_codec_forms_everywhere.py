"""A codec plugin's ``FORMS`` (the ``leakcheck.codecs`` group) are searched by every
scanner, as README says: the CLI's, and also a test's own check (which detects and masks
with one scanner) and the session's masker. Before, these two used ``MASKING_FORMS``
alone: a spelling that only a codec plugin knows passed the pytest plugin unseen."""

from __future__ import annotations

import codecs
from collections.abc import Iterator
from types import ModuleType

import pytest

from leakcheck import CanaryFactory, Secret, extensions
from leakcheck.cli import output
from leakcheck.harness import LeakCheck
from leakcheck.masking import SessionMasker


def rot13_form(secret: Secret) -> list[tuple[str, bytes]]:
    return [("rot13", codecs.encode(secret.value, "rot13").encode())]


@pytest.fixture
def rot13_codec(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    plugin = ModuleType("rot13_codec")
    plugin.FORMS = [rot13_form]  # type: ignore[attr-defined]
    load = extensions.load_plugins

    def with_rot13(group: str = extensions.GROUP) -> tuple[ModuleType, ...]:
        found = load(group)
        return (*found, plugin) if group == extensions.CODECS_GROUP else found

    cached = (extensions.detection_forms, extensions.masking_forms, output.mask_only_forms)
    for function in cached:
        function.cache_clear()
    monkeypatch.setattr(extensions, "load_plugins", with_rot13)
    yield
    monkeypatch.undo()
    for function in cached:
        function.cache_clear()


def _secret() -> Secret:
    # a canary whose rot13 spelling differs from every other form of it
    return CanaryFactory(seed="rot13-1").secret("api_key")


def test_a_checks_scanner_finds_and_masks_a_codec_plugins_form(rot13_codec: None) -> None:
    secret = _secret()
    spelled = codecs.encode(secret.value, "rot13")
    with LeakCheck(seed="rot13-1", sinks=[]) as check:
        check.register_secret(secret)
        check.expose({"error": f"upstream said {spelled}"})
        leaks = check.findings()
        masked = check.mask(f"upstream said {spelled}")
    assert [leak.finding.form for leak in leaks] == ["rot13"]
    assert spelled not in masked and "\u00abcanary:api_key:rot13\u00bb" in masked


def test_the_session_masker_masks_a_codec_plugins_form(rot13_codec: None) -> None:
    secret = _secret()
    spelled = codecs.encode(secret.value, "rot13")
    masker = SessionMasker()
    masker.add([secret])
    assert spelled not in masker.mask(f"a later report: {spelled}")


def test_without_the_plugin_the_form_is_not_searched() -> None:
    # the clean twin: the form is the plugin's, not a built-in one
    secret = _secret()
    spelled = codecs.encode(secret.value, "rot13")
    with LeakCheck(seed="rot13-1", sinks=[]) as check:
        check.register_secret(secret)
        check.expose({"error": f"upstream said {spelled}"})
        assert check.findings() == []
