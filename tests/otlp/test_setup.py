"""How dshweb is pointed at a collector: ``DSHWEB_OTLP`` and the standard ``OTEL_*``
variables as ``settings.py`` reads them, and what ``dshweb doctor`` says of the export."""

from __future__ import annotations

import socket
from typing import Any

import pytest

from dshweb.environment_otlp import OtlpTarget, otlp
from dshweb.setting_errors import ConfigurationError
from dshweb.site.doctor import Status, findings
from tests.support.otlp_receiver import HOST, receiving

BASE = "http://collector.internal:4318"
VARIABLES = (
    "DSHWEB_OTLP",
    "OTEL_SDK_DISABLED",
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_PROTOCOL",
    "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
    "OTEL_METRIC_EXPORT_INTERVAL",
)


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({}, OtlpTarget()),  # off; export-otlp sends to the standard default
        (
            {"OTEL_EXPORTER_OTLP_ENDPOINT": BASE + "/"},
            OtlpTarget(f"{BASE}/v1/metrics", f"{BASE}/v1/traces", live=True),
        ),
        (
            {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "https://t.example/otlp/spans"},
            OtlpTarget(
                "http://localhost:4318/v1/metrics", "https://t.example/otlp/spans", live=True
            ),
        ),
        (
            {"OTEL_EXPORTER_OTLP_ENDPOINT": BASE, "DSHWEB_OTLP": "0"},
            OtlpTarget(f"{BASE}/v1/metrics", f"{BASE}/v1/traces"),
        ),
        (
            {"OTEL_EXPORTER_OTLP_ENDPOINT": BASE, "OTEL_SDK_DISABLED": "true"},
            OtlpTarget(f"{BASE}/v1/metrics", f"{BASE}/v1/traces"),
        ),
        ({"DSHWEB_OTLP": "1"}, OtlpTarget(live=True)),
        (
            {"DSHWEB_OTLP": "1", "OTEL_METRIC_EXPORT_INTERVAL": "15000"},
            OtlpTarget(interval=15.0, live=True),
        ),
        (
            {"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"},  # off: export-otlp refuses it itself
            OtlpTarget(
                protocol_problem="OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' is not http/protobuf, "
                "which dshweb sends; set that, or unset it"
            ),
        ),
        (
            {"OTEL_EXPORTER_OTLP_ENDPOINT": BASE, "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"},
            OtlpTarget(f"{BASE}/v1/metrics", f"{BASE}/v1/traces", live=True),
        ),
    ],
)
def test_the_variables_say_where_and_whether(
    env: dict[str, str], expected: OtlpTarget, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in VARIABLES:
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert otlp() == expected


@pytest.mark.parametrize(
    ("env", "refused"),
    [
        ({"DSHWEB_OTLP": "yes"}, "DSHWEB_OTLP: 'yes' is neither 1 (on) nor 0 (off)"),
        (
            {"OTEL_EXPORTER_OTLP_ENDPOINT": "collector:4318"},
            "OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' is not a web address",
        ),
        (
            {"DSHWEB_OTLP": "1", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "grpc"},
            "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'grpc' is not http/protobuf",
        ),
        (
            {"DSHWEB_OTLP": "1", "OTEL_METRIC_EXPORT_INTERVAL": "5s"},
            "OTEL_METRIC_EXPORT_INTERVAL: '5s' is not a number of milliseconds",
        ),
    ],
)
def test_a_value_dshweb_cannot_use_is_refused_by_name(
    env: dict[str, str], refused: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in VARIABLES:
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(ConfigurationError) as error:
        otlp()
    assert str(error.value).startswith(refused)


def _row(settings: Any, target: OtlpTarget) -> tuple[Status, str, str]:
    settings.DSHWEB = {**settings.DSHWEB, "OTLP": target}
    (found,) = [f for f in findings() if f.part == "OpenTelemetry"]
    return found.status, found.seen, found.fix


@pytest.mark.django_db
def test_the_doctor_says_whether_the_collector_answers(settings: Any) -> None:
    status, seen, fix = _row(settings, OtlpTarget())
    assert (status, seen) == (Status.OK, "no live export (no OTEL_EXPORTER_OTLP_ENDPOINT set)")
    assert "docs/opentelemetry.md" in fix
    with receiving() as (base, received):
        on = OtlpTarget(f"{base}/v1/metrics", f"{base}/v1/traces", live=True)
        status, seen, _ = _row(settings, on)
        assert received.requests["metrics"] == 1  # asked, with an empty request
    assert status is Status.OK and seen.endswith("the collector answers") and base in seen
    with socket.socket() as closed:
        closed.bind((HOST, 0))
        port = closed.getsockname()[1]  # bound, not listening: refused at once
        gone = f"http://{HOST}:{port}"
        status, seen, fix = _row(settings, OtlpTarget(f"{gone}/v1/metrics", f"{gone}/t", live=True))
    assert status is Status.PROBLEM and "the collector does not take it" in seen
    assert f"{gone}/v1/metrics" in seen and "Connection refused" in seen
    assert fix.startswith("start the collector")
