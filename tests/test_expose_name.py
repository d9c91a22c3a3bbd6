"""``expose(obj, name)`` with the two swapped is refused, not a false green.

Found trying the fixture as a newcomer: ``leakcheck.expose("tool response", result)``
exposed the label and made ``result``, the gateway's reply holding the token, the *name*:
the verdict judged the label and the test passed. A name that is not a ``str``, or one
that holds a secret of the test as it is or as JSON or ``repr`` spell it, is now an
``ExposeNameError`` at the caller's line, described by its type and length, never quoted.
"""

from __future__ import annotations

import pytest
from conftest import failure_section, inner_outcomes

from leakcheck import LeakCheck
from leakcheck.errors import ExposeNameError, LeakcheckUsageError

pytest_plugins = ["pytester"]

INNER = """
def test_a_reply_given_as_the_name(leakcheck):
    token = leakcheck.secret("bearer")
    reply = f"upstream said 401 for key {token}"
    leakcheck.expose("tool response", reply)

def test_a_dict_given_as_the_name(leakcheck):
    leakcheck.expose("tool response", {"ok": False})

def test_a_label_given_as_the_name(leakcheck):
    token = leakcheck.secret("bearer")
    leakcheck.expose({"ok": False, "code": "AUTH_FAILED"}, "error envelope")
"""


def test_swapped_arguments_fail_at_the_callers_line(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_inner=INNER)
    result = pytester.runpytest("-p", "no:randomly", "-rA", "-l")
    outcomes = inner_outcomes(result)
    assert outcomes == {
        "test_a_reply_given_as_the_name": "FAILED",
        "test_a_dict_given_as_the_name": "FAILED",
        "test_a_label_given_as_the_name": "PASSED",
    }
    reply = failure_section(result, "test_a_reply_given_as_the_name")
    assert "ExposeNameError" in reply and "holding bearer#1" in reply
    assert "The object comes first: expose(obj, name=...)" in reply
    assert "it was given a dict" in failure_section(result, "test_a_dict_given_as_the_name")
    assert "«canary:bearer:raw»" in reply  # the -l local, masked


#: A value of one's own that every spelling writes differently: both quotes, a backslash,
#: a character beyond ASCII, and DEL (``repr`` escapes it, JSON without ``ensure_ascii``
#: keeps it as it is: no other spelling stands for that one).
OWN = "Zq8rT2xLm4\x7fVn7Ks9'Pw3\"Yb6\\Hd1\u00e9Jf5Gc0Ae"


@pytest.mark.parametrize("spelling", ["raw", "json", "json-unicode", "repr"])
def test_a_name_holding_a_secret_in_any_spelling_is_refused(spelling: str) -> None:
    import json

    with LeakCheck(seed=3) as check:
        value = check.register(OWN, kind="api_key")
        spelled = {
            "raw": value,
            "json": json.dumps(value)[1:-1],
            "json-unicode": json.dumps(value, ensure_ascii=False)[1:-1],
            "repr": repr(value)[1:-1],
        }
        others = [text for name, text in spelled.items() if name != spelling]
        assert not any(text in spelled[spelling] for text in others), "not a spelling of its own"
        with pytest.raises(ExposeNameError) as refused:
            check.expose("tool response", f"error: {spelled[spelling]}")
        assert isinstance(refused.value, LeakcheckUsageError)
        assert isinstance(refused.value, (TypeError, ValueError))
        assert value not in str(refused.value) and value[4:14] not in str(refused.value)


def test_a_label_is_taken_and_the_default_is_never_checked() -> None:
    with LeakCheck(seed=3) as check:
        check.secret("bearer")
        assert check.expose({"ok": False}, "second response") == {"ok": False}
        assert check.expose({"ok": False}) == {"ok": False}
