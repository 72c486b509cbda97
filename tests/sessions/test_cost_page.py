"""What a session cost, where a person reads it: the session page's cost card and ledger,
the list, the JSON API, the ledger download and ``dsh_snapshot --json`` — the figures of
:mod:`dshweb.core.fold.cost` (checked against the registry in ``tests/core/fold/test_cost.py``),
priced with this server's peak windows and model aliases."""

from __future__ import annotations

import io
import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from dshweb.core.fold.cost import RateBook, parse_aliases, parse_windows
from dshweb.core.fold.index import HomeIndex
from dshweb.core.fold.session import SessionSnapshot
from tests.api.test_v1 import signed_in
from tests.conftest import FIXTURE_HOMES
from tests.support.snapshots import data_attributes, squeezed


def _home(name: str, tmp_path: Path, settings: Any, **config: str) -> Path:
    copy = tmp_path / name
    shutil.copytree(FIXTURE_HOMES / name, copy, ignore=shutil.ignore_patterns("checkpoints.json"))
    settings.DSHWEB = {**settings.DSHWEB, "DSH_HOME": copy, "DEMO": False, **config}
    return copy


def _snapshot(home: Path) -> SessionSnapshot:
    index = HomeIndex(home)
    index.refresh()
    (shot,) = index.snapshots()
    return shot


@pytest.mark.django_db
def test_a_session_on_a_priced_and_an_unpriced_model_shows_both_and_never_zero(
    tmp_path: Path, settings: Any, fresh_hub: None
) -> None:
    home = _home("cost-switch", tmp_path, settings, PRICE_AS="none")
    shot = _snapshot(home)
    book = RateBook()
    total, unrated = book.total(shot.cost)
    assert total is not None and total > 0 and unrated

    client, _ = signed_in()
    page = client.get(f"/homes/local/sessions/{shot.session_id}/").content.decode()
    card = data_attributes(page, "session-cost")
    assert float(card["data-total-usd"]) == total and card["data-unpriced"] == "true"
    section = page[
        page.index('id="session-cost"') : page.index("</section>", page.index('id="session-cost"'))
    ]
    rows = dict(re.findall(r'<tr data-model="([^"]+)" data-usd="([^"]*)"', section))
    assert set(rows) == {"deepseek-v4-pro", "deepseek-flash"}
    assert rows["deepseek-flash"] == ""  # no price: not $0
    assert 'price unknown: not in <span translate="no">dsh-llm-cost</span>' in section
    assert "$0<" not in section
    assert "dsh-llm-cost</span> " + book.version in section and "2026-08-17" in section
    assert "01:00–04:00, 06:00–10:00" in section

    # Each ledger row prices its fold as the core does; the flash folds say unknown.
    compactions = {f.seq: f for f in shot.ledger.compactions}
    costed_rows = re.findall(
        r'<tr data-kind="[a-z]+" data-seq="(\d+)"[^>]*'
        r'data-cost-usd="([^"]+)"\s+data-saved-usd="([^"]*)"',
        page,
        re.S,
    )
    assert len(costed_rows) >= 5
    for seq, cost, saved in costed_rows:
        costed = book.compaction(
            compactions[int(seq)].cost,
            compactions[int(seq)].summary_usage,
            compactions[int(seq)].saved,
        )
        assert float(cost) == costed.cost
        assert float(saved) == costed.not_resent
    assert page.count("price unknown") >= 1 + sum(
        1 for f in shot.ledger.compactions if f.status == "done" and f.seq < 240
    )

    listing = client.get("/").content.decode()
    (row_cost,) = re.findall(
        r'<span class="cost" data-usd="([^"]*)"\s+data-unpriced="([^"]*)"', listing
    )
    assert row_cost == (repr(total), "true")
    assert "deepseek-flash</span> price unknown" in squeezed(listing)

    detail = client.get(f"/api/v1/homes/local/sessions/{shot.session_id}").json()
    assert detail["cost"]["totalUsd"] == total and detail["costUsd"] == total
    assert detail["cost"]["unpriced"] is True and detail["costUnpriced"] is True
    by_model = {m["model"]: m for m in detail["cost"]["byModel"]}
    assert (
        by_model["deepseek-flash"]["usd"] is None and by_model["deepseek-flash"]["match"] == "none"
    )
    assert by_model["deepseek-v4-pro"]["effectiveDate"] == "2026-08-17"
    assert by_model["deepseek-v4-pro"]["tokens"]["cacheReadTokens"] > 0
    (listed,) = client.get("/api/v1/sessions").json()["sessions"]
    assert listed["costUsd"] == total and listed["costUnpriced"] is True

    # The ledger's rows (the downloads and the API give the same rows).
    table = client.get(f"/api/v1/homes/local/sessions/{shot.session_id}/ledger").json()["folds"]
    pro = [r for r in table if r["cost_usd"] is not None]
    assert len(pro) == len(costed_rows)
    assert all(r["cost_usd"] > 0 for r in pro if r["requests_after"] or r["summary_usd"])
    assert sum(r["cost_usd"] for r in pro) == pytest.approx(
        detail["cost"]["folds"]["costUsd"], rel=1e-9
    )


@pytest.mark.django_db
def test_the_peak_windows_and_a_models_price_are_this_servers_to_set(
    tmp_path: Path, settings: Any, fresh_hub: None
) -> None:
    """``cost-pro`` ran on a weekday evening, off-peak: a peak window over it doubles its
    cost on the page; DSH's own ``deepseek-flash`` is priced as the registry's
    ``deepseek-v4-flash`` unless ``PRICE_AS`` says otherwise, and the page names the entry
    used."""
    home = _home("cost-pro", tmp_path, settings)
    shot = _snapshot(home)
    off_peak = RateBook().total(shot.cost)[0]
    assert off_peak is not None
    client, _ = signed_in()
    url = f"/homes/local/sessions/{shot.session_id}/"
    assert (
        float(data_attributes(client.get(url).content.decode(), "session-cost")["data-total-usd"])
        == off_peak
    )

    start = shot.first_time or 0
    minute = start // 60_000 % (24 * 60)
    first, last = minute // 15, min(96, minute // 15 + 4)
    text = f"{first // 4:02d}:{first % 4 * 15:02d}-{last // 4:02d}:{last % 4 * 15:02d}"
    assert parse_windows(text)
    settings.DSHWEB = {**settings.DSHWEB, "PEAK_WINDOWS": text}
    peak = RateBook(windows=parse_windows(text)).total(shot.cost)[0]
    assert peak == pytest.approx(2 * off_peak)
    page = client.get(url).content.decode()
    assert float(data_attributes(page, "session-cost")["data-total-usd"]) == peak

    settings.DSHWEB = {k: v for k, v in settings.DSHWEB.items() if k != "PRICE_AS"}
    flash = _home("auto-compact", tmp_path, settings)  # no PRICE_AS: the default
    shot = _snapshot(flash)
    page = client.get(f"/homes/local/sessions/{shot.session_id}/").content.decode()
    expected = RateBook(aliases=parse_aliases("deepseek-flash=deepseek-v4-flash")).total(shot.cost)
    assert expected[0] is not None and expected[0] > 0
    card = data_attributes(page, "session-cost")
    assert (float(card["data-total-usd"]), card["data-unpriced"]) == (expected[0], "false")
    assert 'priced as <span translate="no">deepseek-v4-flash</span> (this server’s setting)' in page
    # Another entry, as the setting names it, and none at all.
    settings.DSHWEB = {**settings.DSHWEB, "PRICE_AS": "deepseek-flash=deepseek-v4-pro"}
    page = client.get(f"/homes/local/sessions/{shot.session_id}/").content.decode()
    pro = RateBook(aliases=parse_aliases("deepseek-flash=deepseek-v4-pro")).total(shot.cost)[0]
    assert pro is not None and pro > expected[0]
    assert float(data_attributes(page, "session-cost")["data-total-usd"]) == pro
    settings.DSHWEB = {**settings.DSHWEB, "PRICE_AS": "none"}
    page = client.get(f"/homes/local/sessions/{shot.session_id}/").content.decode()
    assert data_attributes(page, "session-cost")["data-total-usd"] == ""


def test_dsh_snapshot_prices_with_the_windows_it_is_given(tmp_path: Path) -> None:
    home = FIXTURE_HOMES / "cost-pro"
    out = io.StringIO()
    call_command("dsh_snapshot", "--home", str(home), "--json", stdout=out)
    (listed,) = json.loads(out.getvalue())
    off_peak = RateBook().total(_snapshot(home).cost)[0]
    assert off_peak is not None and listed["cost"]["totalUsd"] == off_peak
    assert listed["cost"]["peakWindowsUtc"] == ["01:00-04:00", "06:00-10:00"]
    out = io.StringIO()
    call_command(
        "dsh_snapshot", "--home", str(home), "--json", "--peak-windows", "00:00-24:00", stdout=out
    )
    (listed,) = json.loads(out.getvalue())
    assert listed["cost"]["totalUsd"] == pytest.approx(2 * off_peak)
    with pytest.raises(CommandError, match="--peak-windows: '25:00-26:00'"):
        call_command("dsh_snapshot", "--home", str(home), "--peak-windows", "25:00-26:00")


@pytest.mark.django_db
def test_a_session_on_a_model_without_a_price_says_so_once(
    tmp_path: Path, settings: Any, fresh_hub: None
) -> None:
    home = _home("auto-compact", tmp_path, settings, PRICE_AS="none")
    shot = _snapshot(home)
    assert RateBook().total(shot.cost) == (None, True)
    client, _ = signed_in()
    listing = client.get("/").content.decode()
    (row,) = re.findall(
        r'<span class="cost" data-usd="([^"]*)"\s+data-unpriced="([^"]*)">([^<]*)', listing
    )
    assert (row[0], row[1], row[2].strip()) == ("", "true", "cost unknown")
    page = client.get(f"/homes/local/sessions/{shot.session_id}/").content.decode()
    assert data_attributes(page, "session-cost") == {"data-total-usd": "", "data-unpriced": "true"}
    assert "no model of this session has a price in the registry" in page
    # Its compactions have no price either: no count of what was not counted, no verdict
    # (at f4ab7dd: "They paid for themselves: $0 ahead", in green).
    assert shot.ledger.total > 0
    said = squeezed(page)
    assert "They paid for themselves" not in said and "have not paid off" not in said
    assert "folds on a model without a price are left out, so there is no verdict" in said
    assert f"{shot.ledger.total} folds cost" not in said
