"""The ``layer`` fixture, shared by tests/sandbox and tests/security (import it in a conftest
or a test module): each isolation layer this machine supports, forced through ``GG_SANDBOX``.

A layer whose prerequisite is missing is skipped; one whose prerequisite is present but
fails is a failure.
"""

from __future__ import annotations

import pytest

from gg.sandbox import Isolation
from gg.sandbox.isolation import _missing


def _layers() -> list[object]:
    params: list[object] = []
    for layer in Isolation:
        why = _missing(layer)
        marks = [pytest.mark.skip(reason=f"{layer.value}: {why}")] if why else []
        params.append(pytest.param(layer, id=layer.value, marks=marks))
    return params


@pytest.fixture(params=_layers())
def layer(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Isolation:
    """Each isolation layer this machine supports, forced through ``GG_SANDBOX``."""
    value: Isolation = request.param
    monkeypatch.setenv("GG_SANDBOX", value.value)
    return value
