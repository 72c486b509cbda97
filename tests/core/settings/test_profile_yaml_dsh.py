"""One reading of a patch file, DSH's: checked against the real ``dsh --dump-config``.

Each case is a profile patch of tricky scalars and structures. When ``dsh`` composes it,
the compaction-basic config dshweb reads equals the one ``dsh`` composed, and the
dashboard's ``thresholdTokens`` is the one that config gives (none when the engine would
refuse it and not start). When ``dsh`` refuses the file, the session page says the profile
is invalid at the same line and column.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from dshweb.core.fold.compaction import compaction_point
from dshweb.core.fold.index import HomeIndex
from dshweb.core.profile.effective import EngineConfig, EngineConfigError
from dshweb.core.profile.layers import engine_config
from dshweb.core.settings.dshconfig.errors import DshConfigError
from dshweb.core.settings.dshconfig.run import dump_config, find_dsh
from tests.support.logbuilder import event, frame, header

pytestmark = pytest.mark.dsh

WINDOW, MAX_TOKENS = 200_000, 16_000
ROW = "- id: compaction-basic\n  config:\n"

CASES = {
    # scalars DSH's JSON schema reads its own way
    "underscore": ROW + "    headroomTokens: 1_000\n",
    "hex": ROW + "    headroomTokens: 0x4000\n",
    "octal": ROW + "    headroomTokens: 0o20000\n",
    "leading-zero": ROW + "    headroomTokens: 010000\n",
    "exponent": ROW + "    headroomTokens: 2e4\n",
    "dot-fraction": ROW + "    thresholdRatio: .5\n",
    "signed-dot": ROW + "    thresholdRatio: -.5\n",
    "yes": ROW + "    auto: yes\n",
    "on": ROW + "    auto: on\n",
    "true": ROW + "    auto: True\n    thresholdRatio: 0.6\n",
    "tilde": ROW + "    retainTokens: ~\n    thresholdRatio: 0.7\n",
    "quoted-number": ROW + '    headroomTokens: "1000"\n',
    "single-quoted": ROW + "    thresholdRatio: '0.5'\n",
    "explicit-int": ROW + '    headroomTokens: !!int "4096"\n',
    "explicit-str": ROW + "    summarizationModel: !!str 5\n",
    "float-as-int": ROW + "    headroomTokens: 4096.0\n",
    "nan": ROW + "    thresholdRatio: .nan\n",
    "date": ROW + "    summarizationModel: 2001-12-14\n",
    # anchors, aliases, merge keys
    "alias": ROW + "    headroomTokens: &h 3000\n    retainTokens: *h\n",
    "merge-key": "- id: x\n  config: &base {headroomTokens: 2000}\n" + ROW + "    <<: *base\n",
    "alias-row": (
        "- id: compaction-basic\n  config: &c {thresholdRatio: 0.4}\n- id: y\n  config: *c\n"
    ),
    "unknown-alias": ROW + "    headroomTokens: *nope\n",
    # duplicates
    "duplicate-key": ROW + "    headroomTokens: 1000\n    headroomTokens: 2000\n",
    "duplicate-number-key": ROW + "    thresholdRatio: 0.5\n    1: a\n    '1': b\n",
    "same-row-twice": ROW + "    headroomTokens: 1000\n" + ROW + "    headroomTokens: 3000\n",
    # tabs
    "tab-indent": "- id: compaction-basic\n\tconfig: {headroomTokens: 1000}\n",
    "tab-after-value": ROW + "    headroomTokens: 5000\t# five thousand\n",
    "tab-after-colon": ROW + "    headroomTokens:\t6000\n",
    "tab-in-flow": (
        "- id: compaction-basic\n  config: {headroomTokens: 7000,\tthresholdRatio: 0.3}\n"
    ),
    # structure
    "not-a-list": "id: compaction-basic\nconfig: {}\n",
    "empty-file": "# nothing here\n",
    "unknown-tag": ROW + "    headroomTokens: !!timestamp 2001-12-14\n",
    "bad-indent": ROW + "    headroomTokens: 1000\n   thresholdRatio: 0.5\n",
}


@pytest.fixture(scope="module")
def dsh() -> Path:
    found = find_dsh()
    if found is None:
        pytest.skip("no `dsh`: pip install deepseek-harness-sdk==0.2.1rc2")
    return found


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory, dsh: Path) -> Path:
    home = tmp_path_factory.mktemp("home")
    dump_config(home, "sdk", dsh=dsh, create=True)  # dsh creates the profile
    log = home / "sessions" / "--w--" / "s" / "session.v4.jsonl.zstd"
    log.parent.mkdir(parents=True)
    config = {"provider": "p", "model": "m", "maxTokens": MAX_TOKENS}
    log.write_bytes(
        frame(header("s"))
        + frame(
            event(0, "request/header", header={"config": config}, reason="initial"),
            event(1, "request/context", contextWindow=WINDOW),
        )
    )
    return home


def _threshold(config: dict[str, object] | None) -> int | None:
    try:
        engine = EngineConfig.from_config(config)
    except EngineConfigError:
        return None  # DSH logs "invalid config" and runs without compaction
    point = compaction_point(context_window=WINDOW, reserved=MAX_TOKENS, engine=engine)
    return point.threshold_tokens


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_dashboard_reads_a_patch_as_dsh_does(name: str, home: Path, dsh: Path) -> None:
    patch = home / "profiles" / "sdk" / "cordis.patch.yml"
    patch.write_text(CASES[name], "utf-8")
    index = HomeIndex(home, profile="sdk")
    index.refresh()
    (folder,) = index.trackers
    shot = index.snapshot(folder)
    try:
        composed = dump_config(home, "sdk", dsh=dsh)
    except DshConfigError as refused:
        where = re.search(r"\((\d+):(\d+)\)", str(refused))
        said = str(refused).splitlines()[1] if "\n" in str(refused) else str(refused)
        assert shot.point is None, said
        assert len(shot.errors) == 1 and shot.errors[0].startswith("DSH cannot load profile")
        if where is not None:  # dsh names a place: ours is the same
            assert f"line {where[1]}, column {where[2]}" in shot.errors[0], (said, shot.errors)
        return
    row = composed.top("compaction-basic")
    assert row is not None
    ours = engine_config(home, "sdk")
    assert ours == row.config, name
    threshold = _threshold(row.config)
    assert (shot.point.threshold_tokens if shot.point else None) == threshold, shot.errors
    if threshold is None:
        assert shot.errors and "compaction-basic does not start" in shot.errors[0]


def test_the_cases_cover_both_outcomes(home: Path, dsh: Path) -> None:
    """Some cases compose with a point, some with an engine DSH refuses, some not at all."""
    outcomes = set()
    for name in ("hex", "underscore", "duplicate-key"):
        (home / "profiles" / "sdk" / "cordis.patch.yml").write_text(CASES[name], "utf-8")
        try:
            row = dump_config(home, "sdk", dsh=dsh).top("compaction-basic")
        except DshConfigError:
            outcomes.add("refused")
            continue
        assert row is not None
        outcomes.add("point" if _threshold(row.config) is not None else "no point")
    assert outcomes == {"point", "no point", "refused"}
