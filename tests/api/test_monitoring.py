"""The Grafana dashboard and the Prometheus rules dshweb ships (``dshweb/api/monitoring/``):
every query of either names only series a real scrape of dshweb has, with their labels;
the rules pass the real ``promtool check rules`` and ``promtool test rules`` on recorded
series of dshweb's own shape; and a real Prometheus scraping a running dshweb loads the
rules, evaluates them on what it scraped, and answers every panel's query."""

from __future__ import annotations

import contextlib
import json
import re
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest.mock import patch

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from dshweb.api.metrics import MONITORING
from tests.api.test_metrics import LIVE, TOKEN, live_lock, make_home, scrape
from tests.support.server import DshwebServer, free_port, serving, spawn, terminate
from tests.support.snapshots import fixture_snapshot

pytestmark = [pytest.mark.django_db]

DASHBOARD = MONITORING / "grafana-dashboard.json"
RULES = MONITORING / "prometheus-rules.yml"
RULES_TEST = Path(__file__).with_name("prometheus-rules.test.yml")

GRAFANA = {"$__rate_interval": "1m", "$__range": "1m", "$home": ".*", "$model": ".*"}
"""What Grafana puts for the dashboard's variables, as a test's Prometheus asks them."""
IDLE_PANELS = {"Steps to the next fold"}
"""Panels with no data for a home whose sessions all idle (the forecasts)."""

KEYWORDS = {"and", "or", "unless", "bool", "offset", "by", "without", "on", "ignoring"}
_STRING = re.compile(r'"(?:\\.|[^"\\])*"')
_LABEL_LIST = re.compile(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)")
_NUMBER = re.compile(r"(?<![\w:.])\d+(?:\.\d+)?(?:e[+-]?\d+)?(?![\w:])", re.I)
_WORD = re.compile(r"[A-Za-z_:][A-Za-z0-9_:]*")
_SELECTOR = re.compile(r"([A-Za-z_:][A-Za-z0-9_:]*)\s*\{([^}]*)\}")
_MATCHER = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*(?:=~|!~|!=|=)")


def metric_names(expr: str) -> set[str]:
    """The metric names a PromQL expression reads: every bare word that is not a function
    or an aggregation (followed by ``(``), a keyword, a label (in a selector or a ``by``
    list), a string, a number or a duration."""
    expr = _STRING.sub('""', expr)
    expr = re.sub(r"\{[^}]*\}|\[[^\]]*\]", " ", expr)
    expr = _LABEL_LIST.sub(" ", expr)
    expr = re.sub(r"\boffset\s+\S+", " ", expr)
    expr = _NUMBER.sub(" ", expr)
    return {
        word.group()
        for word in _WORD.finditer(expr)
        if word.group() not in KEYWORDS and not expr[word.end() :].lstrip().startswith("(")
    }


def matched_labels(expr: str) -> dict[str, set[str]]:
    """Each metric a selector names, with the labels its matchers name."""
    found: dict[str, set[str]] = {}
    for name, matchers in _SELECTOR.findall(_STRING.sub('""', expr)):
        found.setdefault(name, set()).update(_MATCHER.findall(matchers))
    return found


def _panels(panels: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    for panel in panels:
        yield panel
        yield from _panels(panel.get("panels", []))


def dashboard() -> dict[str, Any]:
    return json.loads(DASHBOARD.read_text(encoding="utf-8"))  # type: ignore[no-any-return]


def dashboard_queries() -> list[tuple[str, str]]:
    """(where, PromQL) of every panel's target and every query variable (the series of
    ``label_values(series, label)``)."""
    board = dashboard()
    queries = [
        (panel["title"], target["expr"])
        for panel in _panels(board["panels"])
        for target in panel.get("targets", [])
    ]
    for variable in board["templating"]["list"]:
        if variable["type"] == "query":
            found = re.fullmatch(r"label_values\((.*),\s*\w+\)", variable["definition"])
            assert found is not None, variable["definition"]
            queries.append((f"${variable['name']}", found.group(1)))
    return queries


def rule_queries() -> list[tuple[str, str]]:
    rules = yaml.safe_load(RULES.read_text(encoding="utf-8"))
    return [(rule["alert"], rule["expr"]) for group in rules["groups"] for rule in group["rules"]]


def filled(expr: str) -> str:
    for variable, value in GRAFANA.items():
        expr = expr.replace(variable, value)
    return expr


Exported = dict[str, set[frozenset[str]]]
"""Each series name, with the label names of each of its samples."""


@pytest.fixture
def exported(tmp_path: Path, settings: Any, fresh_hub: None) -> Exported:
    """Each series a scrape of the fixture home has (a counter by its ``_total`` name, also
    one with no sample now), with the label names of each of its samples; scraped a
    moment after the live session's last step, so that its forecasts have samples."""
    home = make_home(tmp_path / "home")
    settings.DSHWEB = {**settings.DSHWEB, "DSH_HOME": home, "PROFILE": "sdk"}
    settings.DSHWEB["METRICS_TOKEN"] = TOKEN
    last = fixture_snapshot(LIVE).last_time
    assert last is not None
    with live_lock(home), patch("dshweb.api.metrics.time") as clock:
        clock.time.return_value = last / 1000 + 1
        status, text = scrape()
    assert status == 200
    found: Exported = {}
    for family in text_string_to_metric_families(text):
        name = f"{family.name}_total" if family.type == "counter" else family.name
        found.setdefault(name, set())
        for sample in family.samples:
            found.setdefault(sample.name, set()).add(frozenset(sample.labels))
    assert found["dshweb_session_forecast_steps"], "no forecast: the scrape is not at work"
    return found


@pytest.mark.parametrize(
    ("expr", "names"),
    [
        ('sum by (kind) (rate(a_total{home=~"$home"}[$__rate_interval]))', {"a_total"}),
        ("ceil(b) <= 3", {"b"}),
        ('x{k="and or (y)"} / on (home, session) group_left (p) z offset 5m', {"x", "z"}),
        ("3600 * sum(increase(c:d[1h])) by (model) or vector(0)", {"c:d"}),
        ("e unless (time() - f) < 1e3 and g2 > bool 0.5", {"e", "f", "g2"}),
    ],
)
def test_the_names_of_a_query(expr: str, names: set[str]) -> None:
    assert metric_names(expr) == names


def unknown_series(exported: Exported) -> list[tuple[str, ...]]:
    """Each name a dashboard or rule query reads that ``exported`` lacks, and each label
    its selectors match that no sample of the series has (a series with no sample in
    ``exported`` has its labels unchecked); where."""
    wrong: list[tuple[str, ...]] = []
    for where, expr in dashboard_queries() + rule_queries():
        names = metric_names(expr)
        assert names, (where, expr)
        wrong += [(where, name) for name in names if name not in exported]
        for name, labels in matched_labels(expr).items():
            sampled = exported.get(name, set())
            if sampled:
                wrong += [
                    (where, name, label) for label in labels if not any(label in s for s in sampled)
                ]
    return wrong


def unrecorded(exported: Exported) -> list[str]:
    """The input series of the rules' test whose name and label names no series of
    ``exported`` has (one with no sample there unchecked)."""
    cases = yaml.safe_load(RULES_TEST.read_text(encoding="utf-8"))["tests"]
    recorded = [series["series"] for case in cases for series in case["input_series"]]
    assert len(recorded) >= 10
    wrong = []
    for series in recorded:
        found = re.fullmatch(r"(\w+)\{(.*)\}", series)
        assert found is not None, series
        labels = frozenset(re.findall(r'(\w+)="[^"]*"', found.group(2)))
        sampled = exported.get(found.group(1))
        if sampled is None or (sampled and labels not in sampled):
            wrong.append(series)
    return wrong


def test_every_query_names_only_series_dshweb_exports(exported: Exported) -> None:
    assert unknown_series(exported) == []
    used = {name for _, expr in dashboard_queries() + rule_queries() for name in metric_names(expr)}
    # What a person running many sessions looks at is there (each a series of its own).
    assert {
        "dshweb_session_used_ratio",
        "dshweb_session_headroom_tokens",
        "dshweb_session_forecast_steps",
        "dshweb_folds_total",
        "dshweb_fold_failures_total",
        "dshweb_tokens_total",
        "dshweb_cost_usd_total",
    } <= used


def test_the_recorded_series_are_dshweb_s_own(exported: Exported) -> None:
    """The rules' test feeds series by dshweb's names with exactly its labels."""
    assert unrecorded(exported) == []


def test_the_dashboard_can_be_provisioned() -> None:
    """Grafana provisions it as it is: its own uid, no database id, every query on the
    Prometheus data source the variable names, panels inside the 24-column grid."""
    board = dashboard()
    assert board["uid"] == "dshweb-context" and board.get("id") is None
    variables = {v["name"]: v for v in board["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource"
    assert variables["datasource"]["query"] == "prometheus"
    source = {"type": "prometheus", "uid": "${datasource}"}
    panels = list(_panels(board["panels"]))
    ids = [panel["id"] for panel in panels]
    assert len(ids) == len(set(ids)) > 10
    for panel in panels:
        place = panel["gridPos"]
        assert place["x"] >= 0 and place["x"] + place["w"] <= 24, panel["title"]
        if panel["type"] != "row":
            assert panel["datasource"] == source, panel["title"]
            assert [t["datasource"] for t in panel["targets"]] == [source] * len(panel["targets"])
    assert variables["home"]["datasource"] == source


@pytest.mark.prometheus
def test_promtool_checks_and_tests_the_shipped_rules() -> None:
    checked = subprocess.run(
        ["promtool", "check", "rules", str(RULES)], capture_output=True, text=True, check=False
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert f"SUCCESS: {len(rule_queries())} rules found" in checked.stdout
    tested = subprocess.run(
        ["promtool", "test", "rules", str(RULES_TEST)], capture_output=True, text=True, check=False
    )
    assert tested.returncode == 0, tested.stdout + tested.stderr
    assert "SUCCESS" in tested.stdout


def _query(port: int, query: str) -> dict[str, Any]:
    url = f"http://127.0.0.1:{port}/api/v1/query?query={urllib.parse.quote(query)}"
    try:
        with urllib.request.urlopen(url, timeout=5) as answer:
            said: dict[str, Any] = json.load(answer)
    except urllib.error.HTTPError as refused:  # a query Prometheus cannot run: its words
        if refused.code == 503:  # still starting (its storage): no answer yet, an OSError
            raise
        said = json.load(refused)
    return said


def _get(port: int, path: str) -> Any:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as answer:
        return json.load(answer)["data"]


@pytest.mark.prometheus
def test_a_real_prometheus_scrapes_a_running_dshweb(tmp_path: Path) -> None:
    """Scraping every second and evaluating the shipped rules every second."""
    home = make_home(tmp_path / "home")
    server = DshwebServer(home, tmp_path / "data", extra_env={"DSHWEB_METRICS_TOKEN": TOKEN})
    port = free_port()
    config = tmp_path / "prometheus.yml"
    config.write_text(
        "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
        f"rule_files: ['{RULES}']\n"
        "scrape_configs:\n"
        "  - job_name: dshweb\n"
        f"    authorization: {{credentials: {TOKEN}}}\n"
        f"    static_configs: [{{targets: ['127.0.0.1:{server.port}']}}]\n"
    )
    with live_lock(home), contextlib.contextmanager(serving)(server):
        prometheus = spawn(
            [
                "prometheus",
                f"--config.file={config}",
                f"--storage.tsdb.path={tmp_path / 'tsdb'}",
                f"--web.listen-address=127.0.0.1:{port}",
            ],
            cwd=tmp_path,
            env={"PATH": "/usr/bin:/bin"},
            log=tmp_path / "prometheus.log",
        )
        try:
            _a_real_prometheus(port, tmp_path / "prometheus.log")
        finally:
            terminate(prometheus)


def _a_real_prometheus(port: int, log: Path) -> None:
    # Two scrapes in (a rate needs two), the rules evaluated since.
    deadline = time.monotonic() + 60
    scrapes: list[Any] = []
    while time.monotonic() < deadline:
        time.sleep(1)
        try:
            scrapes = _query(port, "count_over_time(dshweb_sessions[1m])")["data"]["result"]
        except OSError:
            continue
        if scrapes and float(scrapes[0]["value"][1]) >= 2:
            break
    assert scrapes, log.read_text(errors="replace")[-2000:]
    used = _query(port, f'dshweb_session_used_tokens{{session="{LIVE}"}}')["data"]["result"]
    assert [float(r["value"][1]) for r in used] == [fixture_snapshot(LIVE).used_tokens]
    up = _query(port, "up")["data"]["result"]
    assert [float(r["value"][1]) for r in up] == [1.0]

    # The shipped rules: all loaded, each evaluated on what was scraped without an error,
    # and none firing or pending for this healthy home.
    (group,) = _get(port, "/api/v1/rules")["groups"]
    assert sorted(r["name"] for r in group["rules"]) == sorted(n for n, _ in rule_queries())
    assert [(r["name"], r["health"], r.get("lastError")) for r in group["rules"]] == [
        (r["name"], "ok", None) for r in group["rules"]
    ]
    assert _query(port, "ALERTS")["data"]["result"] == []

    # Every query and recorded series names what Prometheus scraped, with its labels (a
    # series with no sample now, a forecast while the sessions idle, by its metadata).
    scraped: Exported = {name: set() for name in _get(port, "/api/v1/metadata")}
    assert "dshweb_session_forecast_steps" in scraped
    for series in _get(port, "/api/v1/series?match[]=" + urllib.parse.quote('{job="dshweb"}')):
        labels = frozenset(series) - {"__name__", "job", "instance"}
        scraped.setdefault(series["__name__"], set()).add(labels)
    assert scraped["dshweb_alert_watcher_last_round_age_seconds"] == {frozenset({"home"})}
    assert unknown_series(scraped) == []
    assert unrecorded(scraped) == []

    # Every panel's query runs and shows something.
    empty, failed = [], []
    for where, expr in dashboard_queries():
        said = _query(port, filled(expr))
        if said["status"] != "success":
            failed.append((where, said.get("error")))
        elif not said["data"]["result"]:
            empty.append(where)
    assert failed == []
    assert set(empty) == IDLE_PANELS
