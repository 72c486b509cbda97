"""Every text a collector writes to PostgreSQL is storable: session ids and titles with a
NUL or a lone surrogate (valid in a DSH log, refused by PostgreSQL's text) reach the web
workers, alert firings with such titles are written, and a row the database refuses
anyway is written alone, with its error, while the rest of the home goes on. A real
collector process on PostgreSQL and Redis, and a web worker."""

from __future__ import annotations

import json
import random
import shutil
import time
from pathlib import Path

import pytest

from dshweb.core.log.home import session_logs
from tests.collect.test_collector import NAME, WAIT, Collector, _env
from tests.collect.test_shared_stores import stores  # noqa: F401  (the fixture)
from tests.conftest import FIXTURE_HOMES, REPO
from tests.sessions.test_hostile_clients import manage_shell
from tests.support.logbuilder import event, frame, frames_of, header
from tests.support.server import DshwebServer, spawn, terminate
from tests.support.visitor import Visitor

pytestmark = pytest.mark.services

LONG_ID = "long-" + random.Random(24).randbytes(8_000).hex()
"""Longer than a PostgreSQL index row may be, even compressed: refused whatever its text."""
ODD_IDS = ["nul\x00in-the-id", "lone\ud800surrogate", LONG_ID]


def _odd_session(home: Path, folder: str, session_id: str, title: str) -> Path:
    path = home / "sessions" / "--odd--" / folder / "session.v4.jsonl.zstd"
    path.parent.mkdir(parents=True)
    lines = [header(session_id), event(0, "session/title", title=title), event(1)]
    path.write_bytes(frame(*lines))
    return path


def _retitled(frames: list[bytes], title: str) -> list[bytes]:
    """A real log's frames with a ``session/title`` holding ``title`` after its own (the
    fixture's one title event is in its fifth frame)."""
    titled = frame(event(10**6, "session/title", title=title))
    return [*frames[:5], titled, *frames[5:]]


def test_a_home_with_nul_ids_and_titles_is_fully_written(
    tmp_path: Path,
    stores: dict[str, str],  # noqa: F811  (the fixture, imported above)
) -> None:
    home, data_dir = tmp_path / "home", tmp_path / "data"
    shutil.copytree(FIXTURE_HOMES / "auto-compact", home)
    (log,) = session_logs(home)
    frames = _retitled(frames_of(log.path), "fixing the\x00parser")
    log.path.write_bytes(b"".join(frames[:6]))
    rest = frames[6:]
    for n, session_id in enumerate(ODD_IDS):
        _odd_session(home, f"odd-{n}", session_id, f"title {n} with a \x00 NUL")
    worker = DshwebServer(
        home=tmp_path / "no-such-home",
        data_dir=data_dir,
        extra_env=stores | {"DSHWEB_COLLECT": "off"},
    )
    process = None
    try:
        worker.prepare()
        manage_shell(
            worker.env(),
            "from django.contrib.auth import get_user_model as g\n"
            "from dshweb.alerts.models import AlertRule\n"
            "from datetime import datetime, timezone\n"
            "rule = AlertRule.objects.create(owner=g().objects.get(username='tester'),"
            " name='told', condition='folded', cooldown_seconds=0, notify_browser=True)\n"
            # saved before the fixture's fold happened, so the fold fires whenever the
            # collector's watcher first sees it (a fold older than its rule would not)
            "AlertRule.objects.filter(pk=rule.pk)"
            ".update(updated_at=datetime(2000, 1, 1, tzinfo=timezone.utc))\n",
        )
        made = Collector(home, data_dir)
        process = spawn(made.command(), cwd=REPO, env=_env(data_dir) | stores, log=made.log)
        worker.start()
        visitor = Visitor(worker)
        deadline = time.monotonic() + WAIT
        while True:
            status, body = visitor.get(f"/api/v1/sessions?home={NAME}&perPage=100")
            found = json.loads(body) if status == 200 else {}
            if found.get("matched") == 1 + len(ODD_IDS):
                break
            assert time.monotonic() < deadline, (
                status,
                body[:500],
                made.output()[-3000:],
                manage_shell(
                    worker.env(),
                    "from dshweb.collect.models import CollectedSession as C\n"
                    "print([(r.session_id[:40], r.version) for r in C.objects.all()])",
                ),
            )
            time.sleep(0.3)
        ids = {row["sessionId"] for row in found["sessions"]}
        assert "nul\ufffdin-the-id" in ids and "lone\ufffdsurrogate" in ids
        long_row = next(r for r in found["sessions"] if r["sessionId"].startswith("long-"))
        status, page = visitor.get(f"/api/v1/homes/{NAME}/sessions/{long_row['sessionId']}")
        assert status == 200
        assert any("could not be stored in the database" in e for e in json.loads(page)["errors"])
        homes = visitor.get("/")[1]
        assert f'data-home="{NAME}"' in homes and "offline" not in homes.lower()

        for piece in rest:  # a fold of the session whose title holds a NUL
            with log.path.open("ab") as handle:
                handle.write(piece)
        firing = ""
        deadline = time.monotonic() + WAIT
        while "fixing the" not in firing:
            assert time.monotonic() < deadline, made.output()[-3000:]
            firing = manage_shell(
                worker.env(),
                "from dshweb.alerts.models import AlertFiring\n"
                "print(repr([f.title for f in AlertFiring.objects.all()]))",
            )
            time.sleep(0.3)
        assert "fixing the\\ufffdparser" in firing or "fixing the\ufffdparser" in firing
        assert "not written" not in made.output()
    finally:
        terminate(process)
        worker.stop()
