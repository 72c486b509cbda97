"""What the bundled demo home shows (tests/fixtures/demo_scenarios.py made it with the real
DSH runtime): work a person would recognise under titles that are no shell commands,
every session priced by the rates a server goes by out of the box, and every kind of
fold; the replayed session too."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from dshweb.core.fold.cost import rate_book
from dshweb.core.fold.cost_settings import DEFAULT_PRICE_AS
from dshweb.core.fold.index import HomeIndex
from dshweb.core.fold.session import SessionSnapshot
from dshweb.demo.home import BUNDLED_HOME, REPLAY_SESSION_ID, REPLAY_SOURCE, ensure_demo_home
from dshweb.demo.replay import ReplayWriter, load_recording, replay_dir

DEFAULT_BOOK = rate_book("", DEFAULT_PRICE_AS, ("peak", "price as"))
"""The rates of a server nobody configured."""


@pytest.fixture(scope="module")
def shown(tmp_path_factory: pytest.TempPathFactory) -> dict[str, SessionSnapshot]:
    """Every session of a copy of the demo home as dshweb folds it, the replayed one
    played to its end."""
    home = ensure_demo_home(tmp_path_factory.mktemp("demo") / "demo-home")
    recording = load_recording(REPLAY_SOURCE.read_bytes(), session_id=REPLAY_SESSION_ID)
    writer = ReplayWriter(recording, replay_dir(home, recording), move_times=False)
    writer.begin()
    while not writer.done:
        writer.step()
    index = HomeIndex(home)
    index.refresh()
    return {shot.session_id: shot for shot in index.snapshots()}


def test_the_demo_holds_work_and_its_replay(shown: dict[str, SessionSnapshot]) -> None:
    assert sorted(shown) == sorted(
        ["billing-review", "csv-importer", "demo-live", "flaky-checkout", "sales-report"]
    )
    assert not [shot.errors for shot in shown.values() if shot.errors]


def test_every_title_reads_as_work_not_a_command(shown: dict[str, SessionSnapshot]) -> None:
    titles = {sid: shot.title for sid, shot in shown.items()}
    assert titles == {
        "billing-review": "Review billing API pagination",
        "csv-importer": "Stream rows in the CSV importer",
        "demo-live": "The nightly import got slow",
        "flaky-checkout": "Fix the flaky checkout test",
        "sales-report": "第三季度销售报表退款分析",
    }
    assert not [t for t in titles.values() if t is None or t.startswith("!")]


def test_every_session_is_priced_by_a_server_out_of_the_box(
    shown: dict[str, SessionSnapshot],
) -> None:
    for sid, shot in shown.items():
        dollars, unpriced = DEFAULT_BOOK.total(shot.cost)
        assert dollars is not None and dollars > 0, sid
        assert not unpriced, f"{sid}: a request or summary without a price"
        routes = DEFAULT_BOOK.by_route(shot.cost)
        assert routes and all(r.dollars is not None for r in routes), sid
    models = {r.rates.route[0] for shot in shown.values() for r in DEFAULT_BOOK.by_route(shot.cost)}
    assert models == {"deepseek-flash", "deepseek-v4-pro"}


def test_the_demo_shows_every_kind_of_fold(shown: dict[str, SessionSnapshot]) -> None:
    kinds = {
        sid: sorted({c.kind for c in shot.ledger.compactions if c.status == "done"})
        for sid, shot in shown.items()
    }
    assert kinds == {
        "billing-review": ["manual"],
        "csv-importer": ["automatic", "prune"],
        "demo-live": ["automatic", "prune"],
        "flaky-checkout": ["automatic", "overflow", "prune"],
        "sales-report": ["automatic", "prune"],
    }


def test_the_demo_sessions_share_one_profile_and_its_point(
    shown: dict[str, SessionSnapshot],
) -> None:
    points = {sid: shot.threshold for sid, shot in shown.items()}
    assert points == dict.fromkeys(shown, 12_000)


def test_the_bundled_home_is_what_a_copy_holds(tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(BUNDLED_HOME, copy)
    assert not (copy / "checkpoints.json").exists()  # shown, not compared
    assert sorted(p.name for p in (copy / "profiles").iterdir()) == ["sdk", "web"]
