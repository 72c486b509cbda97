"""The fold preview on the session page and in ``dsh_snapshot --json``: what the next
automatic fold and a Compact now would take away, the figures of
:mod:`dshweb.core.fold.preview` (proven against the real engine's folds in
``tests/core/fold/test_compaction_preview.py``)."""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import dataclass
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.template.loader import render_to_string
from django.utils import translation

from dshweb.core.fold.index import HomeIndex
from dshweb.core.fold.preview import AutomaticPreview
from dshweb.core.fold.preview import CompactionPreview as ManualPreview
from tests.api.test_v1 import signed_in
from tests.conftest import FIXTURE_HOMES
from tests.support.previewed import judge_home
from tests.support.snapshots import data_attributes

HOME = FIXTURE_HOMES / "pace-mixed"


@pytest.fixture
def home(tmp_path: Path, settings: Any, fresh_hub: None) -> Path:
    copy = tmp_path / "home"
    shutil.copytree(HOME, copy, ignore=shutil.ignore_patterns("checkpoints.json"))
    settings.DSHWEB = {**settings.DSHWEB, "DSH_HOME": copy, "DEMO": False}
    return copy


@pytest.mark.django_db
def test_the_page_and_dsh_snapshot_show_what_the_next_compaction_would_take_away(
    home: Path,
) -> None:
    index = HomeIndex(home)
    index.refresh()
    (shot,) = index.snapshots()
    auto, manual = shot.automatic_preview, shot.manual_preview
    assert auto is not None and auto.first is not None and auto.last is not None
    assert manual.first is not None and manual.last is not None
    # A Compact keeps nothing but the newest message: it takes more than the automatic
    # fold, which keeps the session's retainTokens.
    assert manual.shadowed_tokens > auto.shadowed_tokens > 0
    assert auto.retained_tokens >= shot.point.retain_tokens  # type: ignore[union-attr]
    assert auto.after is not None and auto.after[0] <= auto.after[1] < shot.measured_tokens

    client, _ = signed_in()
    page = client.get(f"/homes/local/sessions/{shot.session_id}/").content.decode()
    assert data_attributes(page, "fold-preview") == {
        "data-from-seq": str(auto.first.seq),
        "data-to-seq": str(auto.last.seq),
        "data-shadowed-tokens": str(auto.shadowed_tokens),
        "data-pruned-tokens": str(auto.pruned_tokens),
        "data-outcomes": "1",
        "data-unknown": "",
    }
    shown = data_attributes(page, "fold-preview-manual")
    assert shown["data-from-seq"] == str(manual.first.seq)
    assert shown["data-messages"] == str(manual.messages)
    assert shown["data-shadowed-tokens"] == str(manual.shadowed_tokens)
    # Beside the ring, under the Compact card.
    assert page.index('id="context-ring"') < page.index('id="fold-preview"')
    assert page.index('id="compact-card"') < page.index('id="fold-preview"')

    out = StringIO()
    call_command("dsh_snapshot", "--home", str(home), "--json", stdout=out)
    (listed,) = json.loads(out.getvalue())
    said = listed["compaction"]["preview"]
    assert said["automatic"]["fromSeq"] == auto.first.seq
    assert said["automatic"]["toSeq"] == auto.last.seq
    assert said["automatic"]["shadowedTokens"] == auto.shadowed_tokens
    assert said["automatic"]["retainedTokens"] == auto.retained_tokens
    assert said["automatic"]["messages"] == auto.messages
    outcomes = said["automaticOutcomes"]
    assert [o["fromSeq"] for o in outcomes["outcomes"]] == [auto.first.seq]
    assert outcomes["unknown"] is None and outcomes["outcomes"][0]["when"] == []
    assert outcomes["settings"]["retainTokens"] == {
        "low": shot.point.retain_tokens,  # type: ignore[union-attr]
        "high": shot.point.retain_tokens,  # type: ignore[union-attr]
        "source": "profile",
    }
    assert outcomes["settings"]["pruner"]["thresholdChars"]["low"] == 8_192
    assert said["manual"]["fromSeq"] == manual.first.seq
    assert said["manual"]["shadowedTokens"] == manual.shadowed_tokens
    assert set(said["automatic"]) >= {
        "fromSeq",
        "toSeq",
        "messages",
        "shadowedTokens",
        "retainedTokens",
        "prunedResults",
        "prunedTokens",
    }


@pytest.mark.django_db
def test_each_ledger_row_shows_the_preview_beside_what_the_engine_did(home: Path) -> None:
    index = HomeIndex(home)
    index.refresh()
    (shot,) = index.snapshots()
    compactions = [f for f in shot.ledger.compactions if f.kind == "automatic"]
    assert len(compactions) >= 5
    client, _ = signed_in()
    page = client.get(f"/homes/local/sessions/{shot.session_id}/ledger.html").content.decode()
    for compaction in compactions:
        said, done = compaction.previewed, compaction.shadowed_range
        assert said is not None and done is not None and compaction.as_previewed is True
        row = re.search(rf'<tr data-kind="automatic" data-seq="{compaction.seq}"[^>]*>', page)
        assert row is not None, compaction.seq
        attrs = dict(re.findall(r'(data-[a-z-]+)="([^"]*)"', row.group(0)))
        assert (attrs["data-previewed-from"], attrs["data-previewed-to"]) == (
            str(done[0]),
            str(done[1]),
        )
        assert attrs["data-previewed-tokens"] == str(compaction.shadowed_tokens)
        assert attrs["data-as-previewed"] == "yes"


def test_where_the_settings_are_unrecorded_the_card_lists_each_outcome_or_says_so() -> None:
    """A session run under a ``dsh --patch`` the log does not record: at a pass where
    the retain is not known yet the card says so; where it is known to a range, it lists
    each outcome with the range that makes it; the settings say where each came from."""
    seen: dict[str, AutomaticPreview] = {}
    for home in ("hidden-sdk-1", "hidden-sdk-2"):
        for session in judge_home(FIXTURE_HOMES / home):
            for judged in session.judged:
                seen.setdefault(judged.verdict, judged.said)
    held, unknown = seen["held"], seen["unknown"]
    with translation.override("en"):
        page = render_to_string(
            "dashboard/_compaction_preview.html", {"session": _Shown(held, ManualPreview("manual"))}
        )
        assert data_attributes(page, "fold-preview")["data-outcomes"] == str(len(held.outcomes))
        for number, outcome in enumerate(held.outcomes, 1):
            (condition,) = outcome.when
            assert f'data-low="{condition.low}"' in page
            one = data_attributes(page, f"fold-preview-automatic-{number}")
            assert one["data-shadowed-tokens"] == str(outcome.shadowed_tokens)
        assert "if the engine keeps" in page and "inferred from what the engine did" in page
        page = render_to_string(
            "dashboard/_compaction_preview.html",
            {"session": _Shown(unknown, ManualPreview("manual"))},
        )
        assert data_attributes(page, "fold-preview")["data-unknown"] == unknown.unknown
        assert "Not known yet" in page and "nothing has shown it yet" in page


@dataclass
class _Shown:
    automatic: AutomaticPreview
    manual_preview: ManualPreview

    @property
    def automatic_preview(self) -> ManualPreview | None:
        return self.automatic.one
