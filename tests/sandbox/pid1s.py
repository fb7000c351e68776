"""Both PID 1s of the namespaces (the C one and the Python one) as a fixture, for the behaviour tests that
must hold under either (``PASSHAT_SANDBOX_INIT``): a test asks for ``pid1`` and runs once with each."""

from __future__ import annotations

import pytest

from passhat import sandbox
from passhat.sandbox import native


def _skip_reason(which: str) -> str | None:
    if sandbox.available() != "unshare":
        return f"no namespaces: {sandbox.available_note()}"
    if which == "c" and native.build().path is None:
        return f"no C PID 1 here: {native.build().note}"
    return None


@pytest.fixture(params=["c", "python"])
def pid1(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> sandbox.Pid1:
    """``c`` or ``python``, forced for the test through ``PASSHAT_SANDBOX_INIT`` (namespaces only)."""
    which: sandbox.Pid1 = request.param
    reason = _skip_reason(which)
    if reason:
        pytest.skip(reason)
    monkeypatch.setenv(sandbox.INIT_ENV, which)
    return which


__all__ = ["pid1"]
