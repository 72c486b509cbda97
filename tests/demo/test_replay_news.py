"""What an open page hears while the demo's replay loops: the real recording played into a
copy of the demo home, folded as the hub folds it, each state told to the page's news as
its socket tells it. When the loop starts over the page hears that the demo starts its
recording again, never that the band fell to "unknown" with nothing used."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from dshweb.core.fold.gauge import ContextGauge, context_gauge
from dshweb.core.fold.index import HomeIndex
from dshweb.demo.home import REPLAY_SESSION_ID, REPLAY_SOURCE
from dshweb.demo.replay import ReplayWriter, load_recording, replay_dir
from dshweb.live.hub import SessionView
from dshweb.sessions.display.news import Heard, restart_sentence
from dshweb.sessions.fragments import session_news
from tests.support.homes import show_the_demo
from tests.support.snapshots import squeezed


class Page:
    """A session page's socket: what it has heard, and every sentence its live region
    (``#announcements``) was given."""

    def __init__(self, home: Path, folder: Path) -> None:
        self.index = HomeIndex(home)
        self.folder = folder
        self.heard: Heard | None = None
        self.gauge: ContextGauge | None = None
        self.version = 0
        self.said: list[str] = []

    def look(self) -> str:
        self.index.refresh()
        shot = self.index.snapshot(self.folder)
        previous = None if self.gauge is None else self.gauge.band
        self.gauge = context_gauge(shot, previous)
        self.version += 1
        self.heard, html = session_news(
            "local", self.heard, SessionView(shot, self.gauge, self.version)
        )
        spoken = re.search(r'<div id="announcements"[^>]*>(.*?)</div>', squeezed(html))
        text = "" if spoken is None else spoken.group(1)
        if text:
            self.said.append(text)
        return text


@pytest.fixture
def demo(tmp_path: Path, settings: Any) -> Path:
    return show_the_demo(tmp_path, settings, HOME_NAME="local")


def test_a_loop_that_starts_over_is_heard_as_the_demo_restarting(demo: Path) -> None:
    recording = load_recording(REPLAY_SOURCE.read_bytes(), session_id=REPLAY_SESSION_ID)
    folder = replay_dir(demo, recording)
    writer = ReplayWriter(recording, folder)
    page = Page(demo, folder)
    writer.begin()
    assert page.look() == ""  # a first look hears nothing
    while not writer.done:
        writer.step()
        page.look()
    assert any("Folded just now" in s for s in page.said)  # the loop did fold
    before = len(page.said)

    writer.begin()  # the next loop: the log is replaced by its first two frames
    restarted = page.look()
    assert restarted == restart_sentence(replayed=True)
    assert restarted == (
        "The demo starts its recording over: this session plays again from the start."
    )
    for _ in range(6):
        writer.step()
        page.look()
    after = page.said[before:]
    assert after[0] == restarted
    assert [s for s in after if s.startswith("Band now")][:1] == [
        "Band now ample: 5.7K used, compaction point 12K"
    ]
    assert not [s for s in page.said if "unknown" in s or " 0 used" in s]


def test_another_session_whose_log_starts_over_says_so_plainly(demo: Path) -> None:
    recording = load_recording(REPLAY_SOURCE.read_bytes(), session_id="not-the-replay")
    folder = replay_dir(demo, recording)
    writer = ReplayWriter(recording, folder)
    page = Page(demo, folder)
    writer.begin()
    page.look()
    for _ in range(10):
        writer.step()
        page.look()
    writer.begin()
    assert page.look() == ("The log started over: this session is read again from its first event.")
