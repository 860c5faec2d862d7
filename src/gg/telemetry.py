"""Whether a run is traced, and the loader of :mod:`gg.otel` (issue 14 item 3).

OpenTelemetry is an optional extra (``otel``): this module reads the standard
``OTEL_*`` environment without importing it, and loads :mod:`gg.otel` (which needs
opentelemetry-api and -sdk) only when tracing is on, so a run with tracing off pays
nothing: no import, no listener.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from types import ModuleType

from gg.errors import UserError
from gg.stream import Event

__all__ = ["otel_listeners", "otel_wanted"]

_OTEL_ON_VARS = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")


def otel_wanted(environ: Mapping[str, str]) -> bool:
    """Whether the standard ``OTEL_*`` environment asks for traces (issue 14 item 3).

    True when ``OTEL_TRACES_EXPORTER`` names an exporter other than ``none``, or an OTLP
    endpoint is set, unless ``OTEL_SDK_DISABLED`` is ``true``. Read without importing
    OpenTelemetry, so a run with none of these set pays nothing.
    """
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    exporter = environ.get("OTEL_TRACES_EXPORTER", "").strip().lower()
    if exporter:
        return exporter != "none"
    return any(environ.get(name, "").strip() for name in _OTEL_ON_VARS)


def _import_otel() -> ModuleType:
    """Load :mod:`gg.otel`, which needs the ``otel`` extra (an optional-extra loader).

    Raises:
        UserError: OpenTelemetry is not installed.
    """
    try:
        from gg import otel
    except ImportError as e:
        raise UserError(
            f"OpenTelemetry is on (Agent(otel=True) or OTEL_* variables) but cannot be loaded "
            f"({e}): install the 'otel' extra, pip install 'gg-agent[otel]'"
        ) from None
    return otel


def otel_listeners(enabled: bool | None) -> list[Callable[[Event], None]]:
    """The OpenTelemetry listener when on (``enabled``, else the environment), else none."""
    if enabled is False or (enabled is None and not otel_wanted(os.environ)):
        return []
    listener: Callable[[Event], None] = _import_otel().listener_from_env()
    return [listener]
