"""Both decoding paths (msgspec and the stdlib) fold every real log to the same state."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import pytest

from dshweb.core.fold.session import SessionTracker
from dshweb.core.log import reader
from dshweb.core.log.decode import LineError, decode_event
from dshweb.core.log.home import LogFile
from dshweb.core.log.structs import HAVE_MSGSPEC
from dshweb.core.log.wire import CompactionPrune, Other, UserMessage
from tests.conftest import all_homes, run_python, session_log_paths

LOGS = [path for home in all_homes() for path in session_log_paths(home)]

pytestmark = pytest.mark.skipif(not HAVE_MSGSPEC, reason="msgspec is not installed")


def _fold(path: Path) -> SessionTracker:
    tracker = SessionTracker(LogFile(path, 4, compressed=path.suffix == ".zstd"))
    tracker.refresh()
    return tracker


@functools.cache
def _fast(path: Path) -> SessionTracker:
    """The log folded on msgspec's path, once a process (both tests below compare with it
    and never change it; the fixture logs do not change)."""
    assert vars(reader)["decode_event"] is decode_event  # not while the test patches it
    return _fold(path)


@pytest.mark.parametrize("log", LOGS, ids=[p.parent.name for p in LOGS])
def test_stdlib_path_folds_like_msgspec(log: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fast = _fast(log)
    monkeypatch.setattr(reader, "decode_event", functools.partial(decode_event, fast=False))
    slow = _fold(log)
    assert slow.meter == fast.meter
    assert slow.meter.host_state() == fast.meter.host_state()
    assert slow.activity == fast.activity
    assert slow.ledger == fast.ledger
    assert slow.pace == fast.pace
    assert fast.meter.events > 0


@pytest.mark.parametrize("fast", [True, False])
def test_a_field_of_the_wrong_type_keeps_its_default(fast: bool) -> None:
    line = b'{"type":"compaction/prune","seq":"7","time":5,"data":{"shadowedSeqs":[1,"x",2]}}'
    event = decode_event(line, fast=fast)
    assert isinstance(event, CompactionPrune)
    assert (event.seq, event.time) == (None, 5)
    assert event.data is not None and event.data.shadowed_seqs == [1, 2]


@pytest.mark.parametrize("fast", [True, False])
def test_unknown_types_keep_type_seq_and_time(fast: bool) -> None:
    line = b'{"type":"plugin/thing","seq":4,"time":9,"data":{"deep":[[[1]]]}}'
    assert decode_event(line, fast=fast) == Other(type="plugin/thing", seq=4, time=9)


@pytest.mark.parametrize("fast", [True, False])
@pytest.mark.parametrize(
    ("line", "reason"),
    [
        (b'{"type":', "malformed JSON line (Expecting value: line 1 column 9 (char 8))"),
        (b"[1,2]", "line is not an event object"),
        (b'{"seq":1}', "line is not an event object"),
        (b"[" * 100_000 + b"]" * 100_000, "malformed JSON line (nested too deeply)"),
    ],
)
def test_lines_that_are_not_events(line: bytes, reason: str, fast: bool) -> None:
    with pytest.raises(LineError) as raised:
        decode_event(line, fast=fast)
    assert raised.value.reason == reason


@pytest.mark.parametrize("fast", [True, False])
def test_surface_op_and_message(fast: bool) -> None:
    line = (
        '{"type":"user/message","seq":1,"surfaceOp":{"op":"replace","startSeq":3,"endSeq":2},'
        '"data":{"role":"user","content":"数"}}'
    ).encode()
    event = decode_event(line, fast=fast)
    assert isinstance(event, UserMessage)
    assert event.surface_op is not None and not isinstance(event.surface_op, str)
    assert (event.surface_op.start_seq, event.surface_op.end_seq) == (3, 2)
    assert event.data is not None and event.data.content == "数"


_WITHOUT_MSGSPEC = """
import json, sys
sys.modules["msgspec"] = None  # as on a machine where it is not installed
from pathlib import Path
from dshweb.core.log import structs
from dshweb.core.log.home import LogFile
from dshweb.core.fold.session import SessionTracker
assert not structs.HAVE_MSGSPEC
out = {}
for name in sys.argv[1:]:
    tracker = SessionTracker(LogFile(Path(name), 4, compressed=True))
    tracker.refresh()
    out[name] = [tracker.meter.host_state(), tracker.meter.events, tracker.error]
print(json.dumps(out))
"""


def test_without_msgspec_the_same_numbers() -> None:
    logs = [str(p) for p in LOGS]
    done = run_python("-c", _WITHOUT_MSGSPEC, *logs, timeout=300, check=True)
    found = json.loads(done.stdout)
    for name in logs:
        tracker = _fast(Path(name))
        assert found[name] == [tracker.meter.host_state(), tracker.meter.events, None], name
