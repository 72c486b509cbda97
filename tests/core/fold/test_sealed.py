"""Sealed sessions (dshweb.core.fold.sealed): what one process folded, opened by another."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest
import zstandard

from dshweb.core.fold.checkpoint import seal, unseal
from dshweb.core.fold.gauge import context_gauge
from dshweb.core.fold.index import HomeIndex
from dshweb.core.fold.sealed import open_session, seal_session, sealed_tag
from tests.conftest import FIXTURE_HOMES
from tests.support.pickles import ForgedGetattr, asks_getattr, enums_pickled_by_name

HOMES = sorted(p for p in FIXTURE_HOMES.iterdir() if (p / "sessions").is_dir())


@pytest.mark.parametrize("home", HOMES, ids=[h.name for h in HOMES])
def test_every_fixture_session_opens_equal_to_what_was_sealed(home: Path) -> None:
    index = HomeIndex(home, profile="sdk")
    index.refresh(None)
    assert index.trackers
    for folder in index.trackers:
        snapshot = index.snapshot(folder)
        gauge = context_gauge(snapshot)
        blob = seal_session(snapshot, gauge, key=b"k")
        assert open_session(blob, key=b"k") == (snapshot, gauge)


class _Boom:
    def __reduce__(self) -> tuple[object, tuple[str]]:
        return (print, ("ran",))


@pytest.mark.parametrize(
    "blob",
    [
        b"",
        b"dshweb-checkpoint 3 ...",
        seal(zstandard.compress(pickle.dumps(("a", "b"))), key=b"k", tag=sealed_tag()),
        seal(zstandard.compress(pickle.dumps(_Boom())), key=b"k", tag=sealed_tag()),
        seal(b"not zstd", key=b"k", tag=sealed_tag()),
        seal(b"x", key=b"other", tag=sealed_tag()),
    ],
    ids=["empty", "other-tag", "not-a-session", "code", "corrupt", "other-key"],
)
def test_what_this_code_did_not_seal_opens_as_none(
    blob: bytes, capsys: pytest.CaptureFixture[str]
) -> None:
    assert open_session(blob, key=b"k") is None
    assert capsys.readouterr().out == ""  # nothing ran


def test_a_session_whose_enums_were_pickled_by_name_opens(monkeypatch: pytest.MonkeyPatch) -> None:
    """Some Python 3.11 releases (Debian 12's 3.11.2) pickle an enum member as
    ``getattr(cls, name)``: a collector on one seals what a worker on another opens."""
    index = HomeIndex(FIXTURE_HOMES / "auto-compact", profile="sdk")
    index.refresh(None)
    (folder, *_) = index.trackers
    snapshot = index.snapshot(folder)
    gauge = context_gauge(snapshot)
    with enums_pickled_by_name(monkeypatch):
        blob = seal_session(snapshot, gauge, key=b"k")
    body = unseal(blob, key=b"k", tag=sealed_tag())
    assert isinstance(body, bytes) and asks_getattr(body)
    assert open_session(blob, key=b"k") == (snapshot, gauge)


def test_a_forged_getattr_of_anything_but_an_enum_member_opens_as_none() -> None:
    body = zstandard.compress(pickle.dumps(ForgedGetattr(HomeIndex, "refresh"), protocol=5))
    assert open_session(seal(body, key=b"k", tag=sealed_tag()), key=b"k") is None
