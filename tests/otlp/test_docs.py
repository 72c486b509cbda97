"""docs/opentelemetry.md against the code: its table lists every metric the export sends
(:mod:`dshweb.otlp.names`) with its instrument and unit, and every span attribute; its
Collector config holds together (no Collector binary can run it here)."""

from __future__ import annotations

import re

import yaml

from dshweb.otlp import names
from tests.conftest import REPO

DOCS = REPO / "docs" / "opentelemetry.md"


def test_the_table_lists_every_name() -> None:
    docs = DOCS.read_text(encoding="utf-8")
    rows = re.findall(r"^\| `([^`]+)` \| ((?:histogram|sum|gauge), `[^`]+`) \|", docs, re.M)
    assert rows == [(name, f"{m.kind}, `{m.unit}`") for name, m in names.METRICS.items()]
    for key in names.SPAN_ATTRIBUTES:
        assert f"`{key}`" in docs, key


def test_the_collectors_config_holds_together() -> None:
    """A receiver where dshweb posts by default, every pipeline of parts it defines."""
    docs = DOCS.read_text(encoding="utf-8")
    (block,) = re.findall(r"^```yaml\n(.*?)^```", docs, re.M | re.S)
    config = yaml.safe_load(block)
    assert config["receivers"]["otlp"]["protocols"]["http"]["endpoint"] == "127.0.0.1:4318"
    pipelines = config["service"]["pipelines"]
    assert set(pipelines) == {"metrics", "traces"}
    for pipeline in pipelines.values():
        for part in ("receivers", "processors", "exporters"):
            assert pipeline[part] and set(pipeline[part]) <= set(config[part]), pipeline
