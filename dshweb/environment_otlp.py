"""The variables of the OpenTelemetry export (:mod:`dshweb.otlp`), each checked as it is
read, without Django:

- ``DSHWEB_OTLP``: ``1``, a server (or a collector) exports its home live; ``0``, it never
  does; unset, it does when an ``OTEL_EXPORTER_OTLP_*ENDPOINT`` variable is set (and
  ``OTEL_SDK_DISABLED`` is not ``true``, the standard off switch). ``dshweb export-otlp``
  sends wherever the variables say, whatever the switch;
- the standard ``OTEL_EXPORTER_OTLP_ENDPOINT`` (a base URL: ``/v1/metrics`` and
  ``/v1/traces`` are added to it) and the signals' own ``OTEL_EXPORTER_OTLP_METRICS_ENDPOINT``
  and ``…_TRACES_ENDPOINT`` (used as they are); none set: ``http://localhost:4318``, the
  standard default;
- ``OTEL_EXPORTER_OTLP_PROTOCOL`` (and the signals' own): dshweb speaks ``http/protobuf``
  only, so any other value is refused rather than ignored (while the live export is on;
  ``export-otlp`` refuses it itself);
- ``OTEL_METRIC_EXPORT_INTERVAL``: milliseconds between two exports of the live sessions'
  figures (default 60000, the standard's).

The exporter reads the other standard variables itself (``…_HEADERS``, ``…_TIMEOUT``,
``…_COMPRESSION``, ``…_CERTIFICATE`` and the client key and certificate).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from dshweb.setting_errors import ConfigurationError
from dshweb.setting_values import web_address_problem

DEFAULT_ENDPOINT = "http://localhost:4318"
DEFAULT_INTERVAL = 60.0
PROTOCOL = "http/protobuf"
SIGNALS = {"metrics": "v1/metrics", "traces": "v1/traces"}


@dataclass(frozen=True, slots=True)
class OtlpTarget:
    """Where the export goes: each signal's full URL, the seconds between two exports of
    the live sessions' figures, whether the live export is on, and the protocol asked for
    (a wrong one is refused: :attr:`protocol_problem`)."""

    metrics_url: str = f"{DEFAULT_ENDPOINT}/{SIGNALS['metrics']}"
    traces_url: str = f"{DEFAULT_ENDPOINT}/{SIGNALS['traces']}"
    interval: float = DEFAULT_INTERVAL
    live: bool = False
    protocol_problem: str = ""
    """Why the protocol variables ask for what dshweb cannot send (empty: they do not)."""


def _get(name: str) -> str:
    return os.environ.get(name, "").strip()


def _url(name: str, value: str) -> str:
    if (why := web_address_problem(value)) is not None:
        raise ConfigurationError(name, f"{value!r} {why}")
    return value


def otlp() -> OtlpTarget:
    """Where the export goes, and whether the live export is on (see the module docstring)."""
    switch = _get("DSHWEB_OTLP")
    if switch not in ("", "0", "1"):
        raise ConfigurationError("DSHWEB_OTLP", f"{switch!r} is neither 1 (on) nor 0 (off)")
    base = _get("OTEL_EXPORTER_OTLP_ENDPOINT")
    own = {signal: _get(f"OTEL_EXPORTER_OTLP_{signal.upper()}_ENDPOINT") for signal in SIGNALS}
    live = switch == "1" or (
        switch == ""
        and bool(base or any(own.values()))
        and _get("OTEL_SDK_DISABLED").lower() != "true"
    )
    protocol = ""
    for name in (
        "OTEL_EXPORTER_OTLP_PROTOCOL",
        *(f"OTEL_EXPORTER_OTLP_{signal.upper()}_PROTOCOL" for signal in SIGNALS),
    ):
        if (value := _get(name)) and value != PROTOCOL and not protocol:
            protocol = (
                f"{name}: {value!r} is not {PROTOCOL}, which dshweb sends; set that, or unset it"
            )
    if live and protocol:
        name, _, problem = protocol.partition(": ")
        raise ConfigurationError(name, problem)
    base = _url("OTEL_EXPORTER_OTLP_ENDPOINT", base) if base else DEFAULT_ENDPOINT
    urls = {
        signal: _url(f"OTEL_EXPORTER_OTLP_{signal.upper()}_ENDPOINT", own[signal])
        if own[signal]
        else f"{base.rstrip('/')}/{path}"
        for signal, path in SIGNALS.items()
    }
    return OtlpTarget(urls["metrics"], urls["traces"], _interval(), live, protocol)


def _interval() -> float:
    value = _get("OTEL_METRIC_EXPORT_INTERVAL")
    if not value:
        return DEFAULT_INTERVAL
    if not (value.isascii() and value.isdigit()) or int(value) < 100:
        raise ConfigurationError(
            "OTEL_METRIC_EXPORT_INTERVAL",
            f"{value!r} is not a number of milliseconds (100 or more)",
        )
    return int(value) / 1000
