"""dshweb.core.settings.patchfile: minimal edits of cordis.patch.yml, read and written safely.

The hand-written fixture is a copy of the corpus web profile's patch file (comments,
blank lines, a trailing comment on a value), kept in tests/fixtures/patches/.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import pytest

from dshweb.core.errors import DshError
from dshweb.core.profile.dshyaml import JsExpr
from dshweb.core.settings.patchfile import (
    DEFAULT_PATCH_TEXT,
    EMPTY_SHA256,
    PatchConflict,
    PatchError,
    PatchNotWritable,
    PatchSyntaxError,
    find_row,
    load_entry_list,
    read_patch,
    row_config,
    set_row_config,
    unified_diff,
    write_patch_atomically,
    write_refusal,
)
from tests.conftest import REPO

PATCHES = REPO / "tests" / "fixtures" / "patches"
WEB_PATCH = (PATCHES / "web-cordis.patch.yml").read_text(encoding="utf-8")
PRUNER = {"thresholdChars": 6000, "headChars": 3000, "tailChars": 1000}
RULES = [
    "Never record the assistant's own statements about its remaining context, token "
    "budget, or context-window pressure — not even quoted, paraphrased, or listed as an "
    "example, and not when an earlier checkpoint already carries one: drop that wording "
    "instead of copying it forward.",
    "Never record a plan to stop, defer, or hand off work whose only justification was "
    "context pressure. Record the actual task state instead.",
]
JS_TEXT = """\
# rows as dsh dumps them
- id: plugin-manager
  name: '@deepseek-ai/dsh-plugin-manager'
  disabled: !!js '!ctx.get(''profileContext'')'
- id: session-telemetry-otel
  config:
    mode: !!js process.env.DSH_TELEMETRY_MODE || 'FEEDBACK_ONLY'
    exporter:
      url: !!js >-
        process.env.DSH_TELEMETRY_OTLP_URL ??
        'https://example.invalid/v1/logs'
    shutdownTimeoutMillis: 3000
- id: approval
  config:
    policy: !!js >-
      (process.env.DSH_PERMISSION_MODE ?? 'workspace-write') ===
      'danger-full-access' ? 'never' : 'ask'
"""


def changed_lines(before: str, after: str) -> list[str]:
    """The -/+ lines of the diff, without headers."""
    diff = unified_diff(before, after, "p.yml").splitlines()
    return [line for line in diff[2:] if line[:1] in "+-"]


def rows_of(text: str) -> list[Any]:
    return load_entry_list(text)[0]


# --- reading ---------------------------------------------------------------------------


def test_read_patch_of_the_hand_written_file(tmp_path: Path) -> None:
    path = tmp_path / "cordis.patch.yml"
    path.write_text(WEB_PATCH, encoding="utf-8")
    doc = read_patch(path)
    assert doc.exists and doc.text == WEB_PATCH and len(doc.sha256) == 64
    assert [row["id"] for row in doc.rows] == [
        "compaction-basic",
        "tool-result-pruner",
        "session-title-llm",
    ]
    assert row_config(doc, "tool-result-pruner") == PRUNER
    assert row_config(doc, "session-title-llm") is None
    assert row_config(doc, "nowhere") is None


def test_a_missing_file_reads_as_the_file_dsh_creates(tmp_path: Path) -> None:
    doc = read_patch(tmp_path / "cordis.patch.yml")
    assert not doc.exists
    assert doc.text == DEFAULT_PATCH_TEXT and doc.text.startswith("# Your patch layer")
    assert doc.sha256 == EMPTY_SHA256 and doc.rows == ()


def test_find_row_tells_where_the_row_is(tmp_path: Path) -> None:
    path = tmp_path / "p.yml"
    path.write_text(
        "- id: context-truth\n  disabled: true\n"
        "- insert:\n    - id: other\n      name: other\n"
        "    - id: context-truth\n      name: dsh-context-truth\n      config: {language: zh}\n"
        "- id: compaction-basic\n  config: {auto: false}\n"
        "- id: compaction-basic\n  disabled: false\n"
    )
    doc = read_patch(path)
    truth = find_row(doc, "context-truth")
    assert truth is not None
    assert (truth.where, truth.index, truth.insert_index) == ("insert", 1, 1)
    assert truth.config == {"language": "zh"}
    engine = find_row(doc, "compaction-basic")  # the last row that sets a config decides
    assert engine is not None and (engine.where, engine.index) == ("top", 2)


@pytest.mark.parametrize(
    ("text", "line", "column"),
    [
        ("- id: x\n  config:\n    a: 1\n   b: 2\n", 4, 4),  # dsh: bad indentation (4:4)
        ("- id: x\n  config:\n    a: 1\n    a: 2\n", 4, 5),  # dsh: duplicated key (4:5)
        ("- id: x\n\tconfig: 1\n", 2, 1),  # dsh: tab in indentation (2:1)
        ("- id: x\n  config: {a: 1\n- id: y\n", 3, 5),
        ("- id: x\n  config: !!js {a: 1}\n", 2, 22),  # dsh: unknown tag, at the end of the node
        ("- id: 'x\n", 2, 1),
    ],
)
def test_a_file_that_does_not_parse_names_line_and_column(
    tmp_path: Path, text: str, line: int, column: int
) -> None:
    path = tmp_path / "cordis.patch.yml"
    path.write_text(text)
    with pytest.raises(PatchSyntaxError) as caught:
        read_patch(path)
    assert (caught.value.line, caught.value.column) == (line, column)
    assert str(caught.value).endswith(f" at line {line}, column {column}")
    assert isinstance(caught.value, DshError)


def test_a_mapping_is_not_a_patch_list(tmp_path: Path) -> None:
    path = tmp_path / "p.yml"
    path.write_text("id: compaction-basic\n")
    with pytest.raises(PatchError, match="must be a top-level YAML array of loader patch entries"):
        read_patch(path)


def test_scalars_read_the_way_dsh_reads_them() -> None:
    rows = rows_of("- a: yes\n  b: 1_000\n  c: 2024-01-01\n  d: 0x1F\n  e: ~\n  f: !!js x\n")
    assert rows == [
        {"a": "yes", "b": "1_000", "c": "2024-01-01", "d": 31, "e": None, "f": JsExpr("x")}
    ]


# --- editing ---------------------------------------------------------------------------


def test_changing_the_pruner_touches_only_its_changed_lines() -> None:
    config = {**PRUNER, "thresholdChars": 9000, "headChars": 3500}
    after = set_row_config(WEB_PATCH, "tool-result-pruner", config)
    assert changed_lines(WEB_PATCH, after) == [
        "-    thresholdChars: 6000",
        "-    headChars: 3000",
        "+    thresholdChars: 9000",
        "+    headChars: 3500",
    ]
    before_lines, after_lines = WEB_PATCH.splitlines(), after.splitlines()
    assert [x for x in after_lines if x.startswith("#") or not x.strip()] == [
        x for x in before_lines if x.startswith("#") or not x.strip()
    ]
    assert "    headroomTokens: 32768   # also the summary's maxTokens" in after_lines
    assert rows_of(after)[1]["config"] == config


def test_the_same_config_changes_nothing() -> None:
    assert set_row_config(WEB_PATCH, "tool-result-pruner", dict(PRUNER)) == WEB_PATCH
    same = {"tailChars": 1000.0, "headChars": 3000, "thresholdChars": 6000}  # 1000 == 1000.0 in JS
    assert set_row_config(WEB_PATCH, "tool-result-pruner", same) == WEB_PATCH


def test_a_changed_value_keeps_its_comment_removed_and_new_keys() -> None:
    config = {"thresholdRatio": 0.7, "headroomTokens": 40000, "compactionRetries": 2, "auto": False}
    after = set_row_config(WEB_PATCH, "compaction-basic", config)
    assert changed_lines(WEB_PATCH, after) == [
        "-    headroomTokens: 32768   # also the summary's maxTokens",
        "-    retainRatio: 0.2",
        "+    headroomTokens: 40000   # also the summary's maxTokens",
        "+    auto: false",
    ]


def test_an_empty_config_removes_the_config_key() -> None:
    after = set_row_config(WEB_PATCH, "tool-result-pruner", {})
    assert changed_lines(WEB_PATCH, after) == [
        "-  config:",
        "-    thresholdChars: 6000",
        "-    headChars: 3000",
        "-    tailChars: 1000",
    ]
    assert rows_of(after)[1] == {"id": "tool-result-pruner"}


def test_a_row_without_config_gets_one_after_its_last_key() -> None:
    after = set_row_config(WEB_PATCH, "session-title-llm", {"targetWords": 3})
    assert after == WEB_PATCH + "  config:\n    targetWords: 3\n"


def test_a_missing_row_is_appended_as_an_id_row() -> None:
    after = set_row_config(WEB_PATCH, "spill-policy", {"maxInlineTokens": 20000})
    assert after == WEB_PATCH + "\n- id: spill-policy\n  config:\n    maxInlineTokens: 20000\n"


def test_context_truth_goes_into_the_empty_file_dsh_creates() -> None:
    after = set_row_config(
        DEFAULT_PATCH_TEXT, "context-truth", {"language": "zh"}, insert_name="dsh-context-truth"
    )
    header = DEFAULT_PATCH_TEXT.removesuffix("[]\n")
    assert after == header + (
        "- insert:\n"
        "    - id: context-truth\n"
        "      name: dsh-context-truth\n"
        "      config:\n"
        "        language: zh\n"
    )
    assert set_row_config("[]\n", "context-truth", {}, insert_name="dsh-context-truth") == (
        "- insert:\n    - id: context-truth\n      name: dsh-context-truth\n"
    )


def test_context_truth_goes_after_the_commented_rows() -> None:
    config = {"foldAtIdle": True, "foldAtIdleMarginPercent": 5}
    after = set_row_config(WEB_PATCH, "context-truth", config, insert_name="dsh-context-truth")
    assert after.startswith(WEB_PATCH)
    assert after[len(WEB_PATCH) :] == (
        "\n- insert:\n"
        "    - id: context-truth\n"
        "      name: dsh-context-truth\n"
        "      config:\n"
        "        foldAtIdle: true\n"
        "        foldAtIdleMarginPercent: 5\n"
    )
    # saved again: the inserted row is edited in place, not inserted twice
    again = set_row_config(
        after, "context-truth", {"foldAtIdle": False}, insert_name="dsh-context-truth"
    )
    assert changed_lines(after, again) == [
        "-        foldAtIdle: true",
        "-        foldAtIdleMarginPercent: 5",
        "+        foldAtIdle: false",
    ]


@pytest.mark.parametrize("text", ["", "# nothing yet\n", "# no newline at the end"])
def test_a_row_is_appended_to_a_file_without_rows(text: str) -> None:
    after = set_row_config(text, "compaction-basic", {"auto": False})
    assert after.startswith(text)
    assert rows_of(after) == [{"id": "compaction-basic", "config": {"auto": False}}]


def test_compaction_rules_are_written_readably() -> None:
    config = {"language": "en", "compactionRules": RULES}
    after = set_row_config("[]\n", "context-truth", config, insert_name="dsh-context-truth")
    lines = after.splitlines()
    assert "        compactionRules:" in lines
    assert lines.count("          - >-") == 2  # one folded block per rule, no quoting
    assert max(len(line) for line in lines) <= 100
    assert rows_of(after)[0]["insert"][0]["config"]["compactionRules"] == RULES


def test_js_values_elsewhere_survive_byte_for_byte() -> None:
    after = set_row_config(JS_TEXT, "session-telemetry-otel", {"mode": "DISABLED"})
    assert changed_lines(JS_TEXT, after) == [
        "-    mode: !!js process.env.DSH_TELEMETRY_MODE || 'FEEDBACK_ONLY'",
        "-    exporter:",
        "-      url: !!js >-",
        "-        process.env.DSH_TELEMETRY_OTLP_URL ??",
        "-        'https://example.invalid/v1/logs'",
        "-    shutdownTimeoutMillis: 3000",
        "+    mode: DISABLED",
    ]
    assert after.endswith(JS_TEXT[JS_TEXT.index("- id: approval") :])
    policy = rows_of(after)[2]["config"]["policy"]
    assert isinstance(policy, JsExpr) and policy.source.startswith("(process.env")


def test_js_values_are_written_as_js_tags() -> None:
    config = {"mode": JsExpr("process.env.DSH_TELEMETRY_MODE || 'DISABLED'"), "n": 1}
    after = set_row_config(JS_TEXT, "approval", config)
    assert "    mode: !!js \"process.env.DSH_TELEMETRY_MODE || 'DISABLED'\"" in after.splitlines()
    assert rows_of(after)[2]["config"] == config


@pytest.mark.parametrize(
    "value", ["yes", "on", "No", "1_000", "2024-01-01", "0o17", "", "null", "12"]
)
def test_strings_other_yaml_readers_take_for_something_else_are_quoted(value: str) -> None:
    after = set_row_config("[]\n", "x", {"v": value})
    assert f"    v: '{value}'" in after.splitlines()
    assert rows_of(after)[0]["config"]["v"] == value


def test_flow_styles_become_block_style_only_where_edited() -> None:
    text = "- {id: compaction-basic, disabled: true}\n- id: other\n  config: {a: 1}  # keep\n"
    after = set_row_config(text, "compaction-basic", {"auto": False})
    assert after == (
        "- id: compaction-basic\n  disabled: true\n  config:\n    auto: false\n"
        "- id: other\n  config: {a: 1}  # keep\n"
    )
    after = set_row_config(text, "other", {"a": 2, "b": [1, 2]})
    assert after.endswith(
        "- id: other\n  config:\n    a: 2\n    b:\n      - 1\n      - 2  # keep\n"
    )


def test_crlf_files_stay_crlf() -> None:
    text = "# c\r\n- id: compaction-basic\r\n  config:\r\n    auto: true\r\n"
    after = set_row_config(text, "compaction-basic", {"auto": False, "retainRatio": 0.2})
    assert after.split("\r\n") == [
        "# c",
        "- id: compaction-basic",
        "  config:",
        "    auto: false",
        "    retainRatio: 0.2",
        "",
    ]


def test_values_a_patch_cannot_hold_are_refused() -> None:
    with pytest.raises(TypeError):
        set_row_config("[]\n", "x", {"v": object()})
    with pytest.raises(TypeError):
        set_row_config("[]\n", "x", {"v": float("nan")})


def test_a_broken_file_is_not_edited() -> None:
    with pytest.raises(PatchSyntaxError):
        set_row_config("- id: x\n  config:\n    a: 1\n   b: 2\n", "x", {"a": 2})


# --- writing ---------------------------------------------------------------------------


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


def test_write_keeps_the_mode_and_leaves_no_temp_file(tmp_path: Path) -> None:
    path = tmp_path / "cordis.patch.yml"
    path.write_text(WEB_PATCH)
    path.chmod(0o600)
    doc = read_patch(path)
    new = set_row_config(doc.text, "tool-result-pruner", {**PRUNER, "tailChars": 2048})
    write_patch_atomically(path, new, expected_sha256=doc.sha256)
    assert path.read_text() == new
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert leftovers(tmp_path) == []


def test_a_new_file_is_0644(tmp_path: Path) -> None:
    path = tmp_path / "cordis.patch.yml"
    doc = read_patch(path)
    new = set_row_config(doc.text, "compaction-basic", {"auto": False})
    old_umask = os.umask(0o077)
    try:
        write_patch_atomically(path, new, expected_sha256=doc.sha256)
    finally:
        os.umask(old_umask)
    assert stat.S_IMODE(path.stat().st_mode) == 0o644
    assert read_patch(path).rows == ({"id": "compaction-basic", "config": {"auto": False}},)


def test_a_file_changed_since_it_was_read_is_not_overwritten(tmp_path: Path) -> None:
    path = tmp_path / "cordis.patch.yml"
    path.write_text(WEB_PATCH)
    doc = read_patch(path)
    someone_else = WEB_PATCH + "- id: spill-policy\n  disabled: true\n"
    path.write_text(someone_else)
    new = set_row_config(doc.text, "tool-result-pruner", {})
    with pytest.raises(PatchConflict) as caught:
        write_patch_atomically(path, new, expected_sha256=doc.sha256)
    assert caught.value.current_text == someone_else
    assert caught.value.current_sha256 == read_patch(path).sha256
    assert path.read_text() == someone_else
    assert leftovers(tmp_path) == []


def test_a_file_created_since_it_was_found_missing_is_a_conflict(tmp_path: Path) -> None:
    path = tmp_path / "cordis.patch.yml"
    doc = read_patch(path)
    path.write_text("[]\n")
    with pytest.raises(PatchConflict):
        write_patch_atomically(path, "- id: x\n", expected_sha256=doc.sha256)
    assert path.read_text() == "[]\n"


def test_a_failed_write_leaves_the_file_and_no_temp_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "cordis.patch.yml"
    path.write_text(WEB_PATCH)
    doc = read_patch(path)

    def refuse(src: str, dst: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", refuse)
    with pytest.raises(PatchError, match="was not written: No space left on device"):
        write_patch_atomically(path, "[]\n", expected_sha256=doc.sha256)
    assert path.read_text() == WEB_PATCH
    assert leftovers(tmp_path) == []


def test_a_symlinked_file_is_refused_and_its_target_kept(tmp_path: Path) -> None:
    real = tmp_path / "outside" / "web.patch.yml"
    real.parent.mkdir()
    real.write_text(WEB_PATCH)
    link = tmp_path / "home" / "cordis.patch.yml"
    link.parent.mkdir()
    link.symlink_to(real)
    with pytest.raises(PatchError, match="is a symbolic link: dshweb does not follow links"):
        read_patch(link)  # what it points to is never shown either
    with pytest.raises(PatchNotWritable, match="is a symbolic link"):
        write_patch_atomically(link, "[]\n", expected_sha256=EMPTY_SHA256)
    assert link.is_symlink() and real.read_text() == WEB_PATCH
    assert leftovers(tmp_path / "home") == [] and leftovers(real.parent) == []


def test_a_dangling_symlink_is_refused_and_nothing_created(tmp_path: Path) -> None:
    link = tmp_path / "cordis.patch.yml"
    link.symlink_to(tmp_path / "elsewhere" / "made.yml")
    (tmp_path / "elsewhere").mkdir()
    with pytest.raises(PatchError, match="is a symbolic link"):
        read_patch(link)
    with pytest.raises(PatchNotWritable, match="is a symbolic link"):
        write_patch_atomically(link, "[]\n", expected_sha256=EMPTY_SHA256)
    assert list((tmp_path / "elsewhere").iterdir()) == []
    assert link.is_symlink() and leftovers(tmp_path) == []


@pytest.mark.parametrize("mode", [0o444, 0o400, 0o000])
def test_a_read_only_file_is_refused(tmp_path: Path, mode: int) -> None:
    path = tmp_path / "cordis.patch.yml"
    path.write_text(WEB_PATCH)
    doc = read_patch(path)
    os.chmod(path, mode)  # the tests run as root, where only the mode bits can tell
    with pytest.raises(PatchNotWritable, match=f"read-only \\(mode {mode:04o}\\)"):
        write_patch_atomically(path, "[]\n", expected_sha256=doc.sha256)
    assert stat.S_IMODE(path.stat().st_mode) == mode
    os.chmod(path, 0o644)
    assert path.read_text() == WEB_PATCH and leftovers(tmp_path) == []


def test_write_refusal(tmp_path: Path) -> None:
    path = tmp_path / "cordis.patch.yml"
    assert write_refusal(path) is None  # missing: created on save
    path.write_text("[]\n")
    os.chmod(path, 0o200)  # writable by its owner only: allowed
    assert write_refusal(path) is None
    folder = tmp_path / "folder.yml"
    folder.mkdir()
    assert "not a regular file" in str(write_refusal(folder))


def test_unified_diff() -> None:
    assert unified_diff("a\n", "a\n", "p.yml") == ""
    assert unified_diff("a\nb\n", "a\nc", "p.yml") == (
        "--- a/p.yml\n+++ b/p.yml\n@@ -1,2 +1,2 @@\n a\n-b\n+c\n\\ No newline at end of file\n"
    )
