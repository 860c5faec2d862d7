"""Choosing the isolation layer: probed once, forced by GG_SANDBOX, errors that say why (M3)."""

from __future__ import annotations

import pytest

from gg.errors import SandboxError, UserError
from gg.sandbox import Isolation, Sandbox, probe
from gg.sandbox import isolation as isolation_module
from gg.sandbox.host import host_facts


def test_probe_picks_the_strongest_layer_that_works(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GG_SANDBOX", raising=False)
    expected = next(
        layer for layer in Isolation
        if isolation_module._missing(layer) is None and isolation_module.trial(layer) is None
    )  # fmt: skip
    assert probe() is expected
    assert probe() is expected  # cached


def test_gg_sandbox_forces_a_layer(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GG_SANDBOX", "rlimit")
    assert probe() is Isolation.RLIMIT
    assert Sandbox().isolation is Isolation.RLIMIT
    monkeypatch.setenv("GG_SANDBOX", "chroot")
    with pytest.raises(UserError, match="'chroot' names no sandbox layer"):
        probe()


def test_a_forced_layer_that_cannot_work_says_why(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GG_SANDBOX_PYTHON", "/nonexistent/python3")
    host_facts.cache_clear()
    isolation_module._cache.clear()
    try:
        with pytest.raises(SandboxError, match="interpreter '/nonexistent/python3' is missing"):
            probe("rlimit")
    finally:
        monkeypatch.delenv("GG_SANDBOX_PYTHON")
        host_facts.cache_clear()
        isolation_module._cache.clear()


def test_describe_names_what_is_in_force(sandbox: Sandbox) -> None:
    described = sandbox.describe()
    assert described["isolation"] == sandbox.isolation.value
    assert described["seccomp"] is host_facts().seccomp
    if sandbox.isolation is Isolation.BWRAP:
        assert "net" in described["namespaces"]  # type: ignore[operator]
