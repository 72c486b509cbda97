"""A cold start of a big home: the list is served at once with a progress bar, which
completes the page by itself when the read ends.

Its own home (many copies of a real fixture log, each its own session) and its own
server, without fold checkpoints; the server is signed in to on an empty home, then
started again on the big one, which it reads for the first time.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import zstandard
from playwright.sync_api import Page, expect

from dshweb.core.log.home import encode_segment
from tests.browser.conftest import WAIT_MS
from tests.conftest import FIXTURE_HOMES
from tests.support.server import DshwebServer, serving

pytestmark = pytest.mark.browser

COPIES = 1200
"""Enough real logs that reading them takes seconds, even on a fast machine."""
SOURCE = "demo-live"
READ_MS = 120_000


def _copies(home: Path) -> None:
    (log,) = (FIXTURE_HOMES / SOURCE / "sessions").glob("*/*/session*.jsonl.zstd")
    with zstandard.ZstdDecompressor().stream_reader(
        log.read_bytes(), read_across_frames=True
    ) as reader:
        lines = reader.read()
    first, rest = lines.split(b"\n", 1)
    header = json.loads(first)
    compress = zstandard.ZstdCompressor().compress
    project = home / "sessions" / "--progress--"
    for n in range(COPIES):
        session_id = f"copy-{n:04d}"
        folder = project / encode_segment(session_id)
        folder.mkdir(parents=True)
        data = json.dumps(header | {"id": session_id}).encode() + b"\n" + rest
        (folder / log.name).write_bytes(compress(data))


@pytest.fixture(scope="module")
def big_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A home of ``COPIES`` sessions."""
    home = tmp_path_factory.mktemp("progress-home")
    _copies(home)
    return home


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DshwebServer]:
    """This module's own server, without checkpoints; started first on an empty home, for
    the sign-in (which needs no read of the big home)."""
    empty = tmp_path_factory.mktemp("progress-empty-home")
    (empty / "sessions").mkdir()
    server = DshwebServer(empty, tmp_path_factory.mktemp("progress-data"))
    server.extra_env["DSHWEB_FOLD_CHECKPOINTS"] = "0"
    yield from serving(server)


def test_a_cold_start_serves_the_list_at_once_with_its_progress(
    page: Page, server: DshwebServer, big_home: Path
) -> None:
    # After the sign-in, a cold start of the big home: no server has read it before.
    server.stop()
    server.home = big_home
    server.start()
    page.goto("/")
    bar = page.locator("#fold-progress")
    expect(bar).to_have_attribute("data-state", "folding", timeout=WAIT_MS)
    expect(bar).to_be_visible()
    expect(bar).to_contain_text(f"of {COPIES:,} sessions".replace(",", ""))
    total = int(bar.get_attribute("data-bytes-total") or 0)
    assert total > 0
    first_done = int(bar.get_attribute("data-bytes-done") or 0)
    # It moves on by itself while the read goes on, then the page reloads complete.
    expect(page.locator("#fold-progress[data-state=done]")).to_have_count(1, timeout=READ_MS)
    expect(bar).to_be_hidden()
    expect(page.locator(".session-row").first).to_be_visible()
    assert first_done < total
