"""Fuzzing the reader through to the pages: whatever one session log holds, every page of
the dashboard still answers and that session says what is wrong with it.

Hypothesis builds logs from events shaped like DSH's (and not: unknown types, wrong field
types, huge and non-finite numbers, lone surrogates, deep nesting, invalid UTF-8, lines
without their newline, torn, corrupt and garbage frames, plain ``.jsonl``), writes them
into a real home beside a good session, and asks the real views for the sessions list
and each session's page. The run is bounded (150 examples, half of them plain logs and
half compressed, each half a test of its own; ``DSHWEB_FUZZ_EXAMPLES`` asks for more); the
inputs that once broke something stay in ``tests/fuzz-corpus/`` and are replayed on every
run.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
import zstandard
from django.test import Client
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from dshweb.live.service import home_view, stop_hub
from tests.conftest import FIXTURE_HOMES, REPO

CORPUS = REPO / "tests" / "fuzz-corpus"
GOOD = "plain-turns"
KNOWN = [
    "session",
    "system/message",
    "developer/message",
    "user/message",
    "assistant/message",
    "assistant/attempt",
    "tool/result",
    "request/header",
    "request/context",
    "compaction/summary",
    "compaction/prune",
    "compaction/start",
    "compaction/end",
    "command/run",
    "command/done",
    "llm/retry-started",
    "session/title",
    "turn/start",
    "step/start",
    "text-chunks",
    "plugin/thing",
]
_compressor = zstandard.ZstdCompressor(write_checksum=True)

# -- values ------------------------------------------------------------------------------

odd_text = st.one_of(
    st.text(max_size=40),
    st.sampled_from(["\ud800", "a\udc00b", "😀", "\u2028", "\x00", "</script>", "{{x}}"]),
)
numbers = st.one_of(
    st.integers(-(10**25), 10**25),
    st.sampled_from([0, -1, 2**53 + 1, 10**400, -(2**63)]),
    st.floats(allow_nan=True, allow_infinity=True),
)
scalars = st.one_of(st.none(), st.booleans(), numbers, odd_text)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(odd_text, inner, max_size=4)
    ),
    max_leaves=12,
)
blocks = st.fixed_dictionaries(
    {"type": st.sampled_from(["text", "reasoning", "tool-call", "image", "x"])},
    optional={"text": values, "name": values, "arguments": values, "offloaded": values},
)
messages = st.fixed_dictionaries(
    {"role": st.sampled_from(["system", "user", "assistant", "tool", "developer"])},
    optional={"content": st.one_of(st.lists(blocks, max_size=3), odd_text, values)},
)
usage = st.fixed_dictionaries(
    {},
    optional={k: values for k in ("inputTokens", "outputTokens", "cacheReadTokens")},
)
data = st.one_of(
    values,
    messages,
    st.fixed_dictionaries(
        {},
        optional={
            "turn": values,
            "step": values,
            "message": st.one_of(messages, values),
            "usage": st.one_of(usage, values),
            "stream": values,
            "header": st.fixed_dictionaries({}, optional={"config": values, "tools": values}),
            "contextWindow": numbers,
            "shadowedRange": st.one_of(
                values, st.fixed_dictionaries({"start": values, "end": values})
            ),
            "shadowedSeqs": values,
            "shadowedTokenCount": values,
            "title": values,
            "error": values,
            "compactionId": values,
            "commandId": values,
        },
    ),
)
surface_ops = st.one_of(
    st.just("append"),
    values,
    st.fixed_dictionaries({"op": st.just("replace"), "startSeq": values, "endSeq": values}),
)


@st.composite
def events(draw: st.DrawFn, seq: int) -> dict[str, Any]:
    event: dict[str, Any] = {"type": draw(st.sampled_from(KNOWN)), "seq": seq, "time": seq}
    if draw(st.booleans()):
        event["seq"] = draw(values)
    if draw(st.booleans()):
        event["time"] = draw(values)
    event["data"] = draw(data)
    if draw(st.booleans()):
        event["surfaceOp"] = draw(surface_ops)
    return event


def _line(event: dict[str, Any]) -> bytes:
    text = json.dumps(event, ensure_ascii=False, separators=(",", ":"), default=str)
    return text.encode("utf-8", "surrogatepass")


@st.composite
def logs(draw: st.DrawFn, compressed: bool) -> bytes:
    """A whole log file's bytes, compressed or plain."""
    header = {"type": "session", "version": 4, "id": "fz", "createdAt": 1, "cwd": "/w"}
    if draw(st.booleans()):
        header = {**header, **draw(st.dictionaries(st.sampled_from(list(header)), values))}
    lines = [_line(header)]
    for seq in range(draw(st.integers(0, 12))):
        line = _line(draw(events(seq)))
        mutation = draw(st.sampled_from(["none"] * 6 + ["cut", "bytes", "deep", "blank"]))
        if mutation == "cut":
            line = line[: draw(st.integers(0, len(line)))]
        elif mutation == "bytes":
            at = draw(st.integers(0, len(line)))
            line = (
                line[:at] + draw(st.sampled_from([b"\xff", b"\xc3", b"\xed\xa0\x80"])) + line[at:]
            )
        elif mutation == "deep":
            line = b'{"type":"plugin/x","data":' + b"[" * 50_000 + b"]" * 50_000 + b"}"
        elif mutation == "blank":
            line = b""
        lines.append(line)
    if not compressed:
        return b"\n".join(lines) + draw(st.sampled_from([b"\n", b""]))
    frames: list[bytes] = []
    rest = lines
    while rest:
        size = draw(st.integers(1, 4))
        chunk, rest = rest[:size], rest[size:]
        ending = draw(st.sampled_from([b"\n"] * 4 + [b""]))
        frames.append(_compressor.compress(b"\n".join(chunk) + ending))
    body = b"".join(frames)
    tail = draw(st.sampled_from(["none", "none", "torn", "flip", "garbage"]))
    if tail == "torn" and body:
        body = body[: draw(st.integers(0, len(body)))]
    elif tail == "flip" and body:
        at = draw(st.integers(0, len(body) - 1))
        body = body[:at] + bytes([body[at] ^ 0x5A]) + body[at + 1 :]
    elif tail == "garbage":
        body += b"garbage, not a frame"
    return body


# -- the home and the pages ----------------------------------------------------------


@pytest.fixture
def fuzz_home(tmp_path: Path, settings: Any) -> Path:
    home = tmp_path / "home"
    shutil.copytree(FIXTURE_HOMES / GOOD, home)
    settings.DSHWEB = {**settings.DSHWEB, "DSH_HOME": home, "DEMO": False, "PROFILE": "sdk"}
    settings.STATIC_ROOT = tmp_path / "static"
    settings.STATIC_ROOT.mkdir()
    return home


@pytest.fixture
def viewer(client: Client, django_user_model: Any) -> Client:
    client.force_login(django_user_model.objects.create_user("viewer", password="not-used"))
    return client


def _every_page_answers(client: Client, home: Path, body: bytes, compressed: bool) -> None:
    folder = home / "sessions" / "--fuzz--" / "fz"
    shutil.rmtree(folder.parent, ignore_errors=True)
    folder.mkdir(parents=True)
    name = "session.v4.jsonl.zstd" if compressed else "session.v4.jsonl"
    (folder / name).write_bytes(body)
    stop_hub()
    listing = client.get("/")
    assert listing.status_code == 200
    listing.content.decode("utf-8")  # strict: every byte of the page is valid UTF-8
    ids = [shot.session_id for shot in home_view().snapshots]
    assert GOOD in ids, "a bad session hid the good one"
    pages = {}
    for session_id in ids:
        page = client.get(f"/homes/local/sessions/{quote(session_id, safe='')}/")
        assert page.status_code in (200, 404), (session_id, page.status_code)
        page.content.decode("utf-8")
        pages[session_id] = page
    good = pages[GOOD]
    assert good.status_code == 200 and b'data-count="0"' in good.content
    shot = home_view().session("fz")
    if shot is not None:
        assert all(shot.errors)
        json.dumps(shot.as_json(), ensure_ascii=False).encode("utf-8")


fuzzed = settings(
    max_examples=int(os.environ.get("DSHWEB_FUZZ_EXAMPLES", "150")) // 2,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
"""Half the examples for each form of the log: two tests, which two workers can run."""


@pytest.mark.django_db
@fuzzed
@given(log=logs(compressed=False))
@example(
    log=b'{"type":"session","id":"fz"}\n{"type":"session/title","seq":0,"data":{"title":"\\ud800"}}\n'
)
def test_whatever_one_plain_log_holds_every_page_answers(
    viewer: Client, fuzz_home: Path, log: bytes
) -> None:
    _every_page_answers(viewer, fuzz_home, log, False)


@pytest.mark.django_db
@fuzzed
@given(log=logs(compressed=True))
def test_whatever_one_compressed_log_holds_every_page_answers(
    viewer: Client, fuzz_home: Path, log: bytes
) -> None:
    _every_page_answers(viewer, fuzz_home, log, True)


def _corpus() -> list[Path]:
    return sorted(CORPUS.glob("*.jsonl*")) if CORPUS.is_dir() else []


@pytest.mark.django_db
@pytest.mark.parametrize("path", _corpus(), ids=lambda p: p.name)
def test_the_corpus_replays(viewer: Client, fuzz_home: Path, path: Path) -> None:
    _every_page_answers(viewer, fuzz_home, path.read_bytes(), path.suffix == ".zstd")


def test_there_is_a_corpus() -> None:
    assert len(_corpus()) >= 5
