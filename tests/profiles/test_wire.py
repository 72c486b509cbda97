"""The settings protocol over the channel layer (dshweb.profiles.wire): a collector's
answers, carried as JSON, read back into the very records this process's own home gives;
a question or an answer of another shape is refused with a message saying where."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import msgspec
import pytest

from dshweb.collect.commands import CollectorPlace
from dshweb.core.profile.plugins import SCHEMAS
from dshweb.live.service import home_view, own_home_name
from dshweb.profiles import remote
from dshweb.profiles.models import PatchRevision
from dshweb.profiles.pages import (
    BrokenRow,
    Config,
    Conflict,
    HomeSettings,
    NotFound,
    Refused,
    ReplayPage,
    Restored,
    RowPage,
    Saved,
    SaveOutcome,
)
from dshweb.profiles.remote import CollectedHome, Unanswered
from dshweb.profiles.service import OWN_HOME
from dshweb.profiles.wire import Malformed, RowQuestion, question_message, read_question
from tests.profiles.test_views import home  # noqa: F401 (a fixture)

pytestmark = pytest.mark.django_db

Reply = dict[str, Any]


def _through_a_collector(message: dict[str, Any], *, answered: list[Reply]) -> Reply:
    """What the collector of this process's own home answers ``message``, both ways as
    JSON (what crosses the channel layer, sealed)."""
    place = CollectorPlace("h", Path("/nowhere"), "collector/x")
    with (
        mock.patch.object(remote, "answer", lambda _m, reply: answered.append(reply)),
        # A collector's thread closes its connections; this test's is the test's own.
        mock.patch.object(remote, "close_old_connections", lambda: None),
    ):
        remote.run_settings_request(json.loads(json.dumps(message)), place)
    (reply,) = answered[-1:]
    return dict(json.loads(json.dumps(reply)))


@pytest.fixture
def collected(home: Path) -> Iterator[tuple[HomeSettings, list[Reply]]]:  # noqa: F811
    """The same home as a collected one: every question goes through its collector."""
    answered: list[Reply] = []

    def ask(name: str, message: dict[str, Any], *, timeout: float) -> Reply:
        assert name == "h" and timeout > 0
        return _through_a_collector(message, answered=answered)

    with mock.patch.object(remote, "ask_collector", ask):
        yield CollectedHome("h"), answered


def _same(local: object, carried: object) -> None:
    assert type(carried) is type(local)
    assert carried == local


def test_a_collected_home_gives_the_records_the_own_home_gives(
    collected: tuple[HomeSettings, list[Reply]],
) -> None:
    far, answered = collected
    _same(OWN_HOME.profiles(), far.profiles())
    assert set(far.profiles()) == {"sdk", "web"}
    _same(OWN_HOME.index(), far.index())
    assert [card.name for card in far.index().profiles] == ["sdk", "web"]
    rows = 0
    for profile in ("sdk", "web"):
        for section in SCHEMAS:
            local = OWN_HOME.row(profile, section)
            _same(local, far.row(profile, section))
            rows += isinstance(local, RowPage)
    assert rows >= len(SCHEMAS)  # real pages, not only broken ones
    # Each answer crossed as JSON; a row's says which kind of answer it is.
    kinds = [reply["data"].get("kind") for reply in answered if isinstance(reply["data"], dict)]
    assert kinds.count("row") == rows


def test_previews_and_replays_carry_every_figure(
    collected: tuple[HomeSettings, list[Reply]],
) -> None:
    far, _ = collected
    session_id = next(iter(home_view().sessions))
    truth = OWN_HOME.row("sdk", "context-truth")
    assert isinstance(truth, RowPage) and truth.sessions[0].session_id == session_id
    config = {k: v for k, v in truth.initial.items() if k != "compactionRules"}
    local = OWN_HOME.preview(profile="sdk", config=config, session_id=session_id)
    assert local.line is not None and local.ring is not None and local.line.edges is not None
    _same(local, far.preview(profile="sdk", config=config, session_id=session_id))
    engine = OWN_HOME.row("sdk", "compaction-basic")
    assert isinstance(engine, RowPage)

    def replayed(place: HomeSettings, config: Config, pruner: bool | None) -> ReplayPage:
        return place.replay(
            profile="sdk",
            section="compaction-basic",
            config=config,
            session_id=session_id,
            pruner=pruner,
        )

    lower = {**engine.initial, "thresholdRatio": 0.4}
    for pruner in (None, True, False):
        shown = replayed(OWN_HOME, lower, pruner)
        assert shown.replayed is not None and shown.replayed.passes and shown.steps > 0
        assert (shown.cut is None) is (pruner is False)
        _same(shown, replayed(far, lower, pruner))
    refused = replayed(far, {"thresholdRatio": 7}, None)
    assert refused.replayed is None and refused.errors
    _same(replayed(OWN_HOME, {"thresholdRatio": 7}, None), refused)


def test_saves_and_restores_give_the_same_outcomes(
    home: Path,  # noqa: F811
    collected: tuple[HomeSettings, list[Reply]],
) -> None:
    far, _ = collected
    page = OWN_HOME.row("sdk", "context-truth")
    assert isinstance(page, RowPage)

    def save(place: HomeSettings, config: Config, sha256: str) -> SaveOutcome:
        return place.save(
            profile="sdk",
            section="context-truth",
            config=config,
            sha256=sha256,
            base_text=page.base_text,
            user_id=None,
        )

    bad = {"moderateAt": 0.9, "tightAt": 0.8}
    refused = save(OWN_HOME, bad, page.sha256)
    assert isinstance(refused, Refused) and refused.errors
    _same(refused, save(far, bad, page.sha256))
    conflict = save(OWN_HOME, {"language": "zh"}, "0" * 64)
    assert isinstance(conflict, Conflict)
    _same(conflict, save(far, {"language": "zh"}, "0" * 64))
    saved = save(OWN_HOME, {"language": "zh"}, page.sha256)
    assert saved == Saved(path="profiles/sdk/cordis.patch.yml")
    again = OWN_HOME.row("sdk", "context-truth")
    assert isinstance(again, RowPage) and again.initial["language"] == "zh"
    _same(saved, save(far, {"language": "en"}, again.sha256))
    # The first save's revision (its number is the database's: an earlier test in this
    # process may have taken 1).
    first = PatchRevision.objects.filter(home=own_home_name()).order_by("pk")[0].pk
    restored = far.restore(revision_id=first, which="before", user_id=None)
    assert restored == Restored(profile="sdk", path="profiles/sdk/cordis.patch.yml", which="before")
    _same(OWN_HOME.restore(revision_id=first, which="before", user_id=None), restored)
    with pytest.raises(NotFound, match="no revision 99"):
        far.restore(revision_id=99, which="after", user_id=None)
    with pytest.raises(NotFound, match="no profile 'nope'"):
        far.row("nope", "context-truth")


def test_a_broken_file_is_the_same_broken_row(
    home: Path,  # noqa: F811
    collected: tuple[HomeSettings, list[Reply]],
) -> None:
    far, _ = collected
    (home / "profiles" / "sdk" / "cordis.patch.yml").write_text("- id: [unclosed\n")
    broken = OWN_HOME.row("sdk", "context-truth")
    assert isinstance(broken, BrokenRow) and broken.problem
    _same(broken, far.row("sdk", "context-truth"))


def _answering(reply: Reply) -> Any:
    return mock.patch.object(remote, "ask_collector", lambda *_a, **_k: reply)


@pytest.mark.parametrize(
    ("reply", "said"),
    [
        ({"data": "<html>oops</html>"}, "Expected `object`, got `str` - at `$.data`"),
        ({}, "Expected `object`, got `null` - at `$.data`"),
        ({"data": {"kind": "page"}}, "Invalid value 'page' - at `$.data.kind`"),
        ({"data": {"kind": "broken", "profile": "sdk"}}, "missing required field `section`"),
        (
            {"data": {"kind": "broken", "profile": 1, "section": "s", "path": "p", "problem": ""}},
            "Expected `str`, got `int` - at `$.data.profile`",
        ),
    ],
)
def test_an_answer_of_another_shape_is_said_not_thrown(reply: Reply, said: str) -> None:
    with _answering(reply), pytest.raises(Unanswered) as unread:
        CollectedHome("h").row("sdk", "context-truth")
    assert unread.value.status == 502
    message = str(unread.value)
    assert message.startswith("The collector of h answered in a form this dshweb cannot read")
    assert said in message and "another version of dshweb" in message


def test_an_older_collectors_row_without_its_kind_is_refused(home: Path) -> None:  # noqa: F811
    """A collector of the untyped protocol answered the row's fields alone."""
    page = OWN_HOME.row("sdk", "context-truth")
    old = msgspec.to_builtins(page)
    del old["kind"]
    with (
        _answering({"data": old}),
        pytest.raises(Unanswered, match="missing required field `kind`"),
    ):
        CollectedHome("h").row("sdk", "context-truth")
    with _answering({"data": msgspec.to_builtins(page)}):
        assert CollectedHome("h").row("sdk", "context-truth") == page


def test_a_question_of_another_shape_is_refused_with_where(home: Path) -> None:  # noqa: F811
    message = dict(question_message(RowQuestion(profile="sdk", section="context-truth")))
    assert message == {
        "type": "settings.request",
        "verb": "row",
        "arguments": {"profile": "sdk", "section": "context-truth"},
    }
    assert read_question(message) == RowQuestion(profile="sdk", section="context-truth")
    wrong: list[tuple[dict[str, Any], str]] = [
        ({**message, "verb": "format_disk"}, "Invalid value 'format_disk' - at `$.verb`"),
        ({**message, "arguments": {"rm": "-rf"}}, "missing required field `profile`"),
        (
            {**message, "arguments": {"profile": "sdk", "section": ["x"]}},
            "Expected `str`, got `array` - at `$.arguments.section`",
        ),
        ({**message, "arguments": "profile=sdk"}, "the arguments are not an object"),
        (
            {"verb": "restore", "arguments": {"revision_id": 1, "which": "all", "user_id": 1}},
            "Invalid enum value 'all' - at `$.arguments.which`",
        ),
    ]
    for question, said in wrong:
        with pytest.raises(Malformed) as unread:
            read_question(question)
        assert said in str(unread.value), question
        reply = _through_a_collector(question, answered=[])
        assert reply == {"failed": f"The collector could not read the question: {unread.value}"}
