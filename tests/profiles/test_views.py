"""The settings pages: staff only, validated forms, row-only atomic saves, conflicts,
broken files left alone, the truth about rows that would not take effect, the preview,
and history with restore."""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.utils.html import escape

from dshweb.core.profile.layers import engine_config
from dshweb.core.profile.plugins import CONTEXT_TRUTH_SCHEMA
from dshweb.core.settings.dshconfig import (
    active_engine_rows,
    dump_config,
    dump_config_schema,
    find_dsh,
    validate_patch,
)
from dshweb.core.settings.occupancy.line import line_input, occupancy_line
from dshweb.core.settings.occupancy.line_settings import LineSettings, Wording
from dshweb.core.settings.patchfile import (
    PatchNotWritable,
    read_patch,
    row_config,
    write_patch_atomically,
)
from dshweb.live.service import home_view
from dshweb.profiles import patches
from dshweb.profiles.forms import initial_values
from dshweb.profiles.models import PatchRevision
from tests.conftest import FIXTURE_HOMES
from tests.support.snapshots import squeezed

pytestmark = pytest.mark.django_db

WEB_PACKAGE = (
    '{"name":"dsh-profile-web","private":true,"dependencies":{},'
    '"dsh":{"profile":{"bundles":["@deepseek-ai/dsh-base","@deepseek-ai/dsh-web-app"]}}}'
)
HAND_WRITTEN = """\
# My patches: keep this comment.

- id: session-title-llm
  disabled: true   # no title calls

# Compaction tuned by hand.
- id: compaction-basic
  config:
    thresholdRatio: 0.5
    headroomTokens: 1000
"""


@pytest.fixture
def home(tmp_path: Path, settings: Any) -> Path:
    target = tmp_path / "home"
    shutil.copytree(FIXTURE_HOMES / "auto-compact", target)
    (target / "profiles" / "sdk" / "cordis.patch.yml").write_text(HAND_WRITTEN)
    web = target / "profiles" / "web"
    web.mkdir()
    (web / "package.json").write_text(WEB_PACKAGE)
    settings.DSHWEB = {**settings.DSHWEB, "DSH_HOME": target}
    return target


@pytest.fixture
def staff() -> Client:
    client = Client()
    client.force_login(User.objects.create_user("boss", password="x-x-x-x-1", is_staff=True))
    return client


def _form_data(client: Client, url: str, **changes: object) -> dict[str, object]:
    page = client.get(url)
    assert page.status_code == 200
    form = page.context["form"]
    data: dict[str, object] = {}
    for name, field in form.fields.items():
        value = form.initial.get(name, field.initial)
        if isinstance(value, bool):
            if value:
                data[name] = "on"
            continue
        data[name] = "" if value is None else value
    for key, value in changes.items():
        if value is False:
            data.pop(key, None)
        else:
            data[key] = value
    return data


def test_only_staff(home: Path) -> None:
    assert Client().get("/settings/").status_code == 302
    client = Client()
    client.force_login(User.objects.create_user("viewer", password="x-x-x-x-1"))
    assert client.get("/settings/").status_code == 403
    assert client.get("/settings/sdk/context-truth/").status_code == 403


def test_index_lists_profiles(home: Path, staff: Client) -> None:
    page = staff.get("/settings/").content.decode()
    assert 'data-profile="sdk"' in page and 'data-profile="web"' in page


def test_save_writes_only_that_row(home: Path, staff: Client) -> None:
    url = "/settings/sdk/context-truth/"
    data = _form_data(staff, url, quantumPercent=10, language="zh", compactionRules="- one rule")
    response = staff.post(url, data)
    assert response.status_code == 302
    text = (home / "profiles" / "sdk" / "cordis.patch.yml").read_text()
    assert text.startswith(HAND_WRITTEN)  # every byte before stays
    config = row_config(read_patch(home / "profiles" / "sdk" / "cordis.patch.yml"), "context-truth")
    assert config == {"language": "zh", "quantumPercent": 10, "compactionRules": ["- one rule"]}
    assert "name: dsh-context-truth" in text
    (revision,) = PatchRevision.objects.all()
    assert (revision.section, revision.before, revision.after) == (
        "context-truth",
        HAND_WRITTEN,
        text,
    )
    assert revision.user is not None and revision.user.username == "boss"


def test_invalid_values_are_refused_and_nothing_is_written(home: Path, staff: Client) -> None:
    url = "/settings/sdk/context-truth/"
    data = _form_data(staff, url, moderateAt=0.9, tightAt=0.8)
    response = staff.post(url, data)
    assert response.status_code == 200
    assert "moderateAt" in str(response.context["form"].non_field_errors())
    data = _form_data(staff, url, thresholdRatio=1.5)
    response = staff.post(url, data)
    assert "thresholdRatio" in response.context["form"].errors
    assert (home / "profiles" / "sdk" / "cordis.patch.yml").read_text() == HAND_WRITTEN
    assert PatchRevision.objects.count() == 0


def test_a_file_changed_since_the_form_was_opened_is_not_overwritten(
    home: Path, staff: Client
) -> None:
    url = "/settings/sdk/compaction-basic/"
    data = _form_data(staff, url, thresholdRatio=0.6)
    path = home / "profiles" / "sdk" / "cordis.patch.yml"
    path.write_text(HAND_WRITTEN + "- id: hmr\n  disabled: true\n")
    response = staff.post(url, data)
    assert response.status_code == 200
    assert "+- id: hmr" in response.context["conflict"]
    assert path.read_text() == HAND_WRITTEN + "- id: hmr\n  disabled: true\n"


def test_engine_row_keeps_comments_and_other_rows(home: Path, staff: Client) -> None:
    url = "/settings/sdk/compaction-basic/"
    data = _form_data(staff, url, thresholdRatio=0.6)
    assert data["headroomTokens"] == 1000  # the form starts from the file's values
    assert staff.post(url, data).status_code == 302
    text = (home / "profiles" / "sdk" / "cordis.patch.yml").read_text()
    assert "# My patches: keep this comment." in text
    assert "disabled: true   # no title calls" in text
    assert row_config(
        read_patch(home / "profiles" / "sdk" / "cordis.patch.yml"), "compaction-basic"
    ) == {"thresholdRatio": 0.6, "headroomTokens": 1000}


def test_broken_file_is_reported_with_line_and_left_alone(home: Path, staff: Client) -> None:
    path = home / "profiles" / "sdk" / "cordis.patch.yml"
    path.write_text("- id: a\n  config: {x: [1, 2}\n")
    response = staff.get("/settings/sdk/context-truth/")
    assert response.status_code == 409
    assert "line 2" in response.content.decode()
    assert path.read_text() == "- id: a\n  config: {x: [1, 2}\n"


def test_a_file_not_in_utf8_is_shown_as_dsh_reads_it_and_never_rewritten(
    home: Path, staff: Client
) -> None:
    path = home / "profiles" / "sdk" / "cordis.patch.yml"
    url = "/settings/sdk/context-truth/"
    data = _form_data(staff, url, quantumPercent=10)  # a form opened before the change
    latin1 = HAND_WRITTEN.replace("# My patches", "# Mes réglages").encode("latin-1")
    path.write_bytes(latin1)
    response = staff.get(url)
    assert response.status_code == 409
    page = response.content.decode()
    assert "cordis.patch.yml is not valid UTF-8 (byte 0xe9 on line 1)" in page
    data["sha256"] = read_patch(path).sha256  # as if opened after it: no conflict to hide
    assert staff.post(url, data).status_code == 409
    assert path.read_bytes() == latin1  # every byte kept

    # Every writer refuses, not only this page: the file is read as DSH reads it...
    document = read_patch(path)
    assert "# Mes r\ufffdglages" in document.text
    assert row_config(document, "compaction-basic") == {
        "thresholdRatio": 0.5,
        "headroomTokens": 1000,
    }
    # ...and a save that gets past the page is refused before anything is written.
    with pytest.raises(PatchNotWritable, match="not valid UTF-8"):
        write_patch_atomically(path, document.text, expected_sha256=document.sha256)
    assert path.read_bytes() == latin1


def test_without_dsh_a_web_profile_engine_row_is_not_offered(
    home: Path, staff: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(patches, "find_dsh", lambda: None)
    url = "/settings/web/compaction-basic/"
    page = staff.get(url)
    assert "would change nothing" in page.content.decode()
    response = staff.post(url, {"thresholdRatio": "0.5", "sha256": "x"})
    assert response.status_code == 200
    assert not (home / "profiles" / "web" / "cordis.patch.yml").exists()


needs_dsh = pytest.mark.skipif(find_dsh() is None, reason="the dsh program is not installed")


@pytest.mark.dsh
@needs_dsh
def test_web_profile_engine_is_saved_into_the_presets_that_run_it(
    home: Path, staff: Client
) -> None:
    url = "/settings/web/compaction-basic/"
    page = staff.get(url)
    assert 'id="engine-targets"' in page.content.decode()
    assert staff.post(url, _form_data(staff, url, thresholdRatio=0.6)).status_code == 302
    dsh = find_dsh()
    assert dsh is not None
    composed = dump_config(home, "web", dsh=dsh)
    running = [r for r in active_engine_rows(composed) if r.engine == "compaction-basic"]
    assert running and all(r.preset is not None for r in running)
    assert all(r.config.get("thresholdRatio") == 0.6 for r in running)
    top = composed.top("compaction-basic")
    assert top is not None and top.disabled is True
    # and the dashboard's compaction point for web sessions follows the saved value
    assert engine_config(home, "web") == {"thresholdRatio": 0.6}
    path = home / "profiles" / "web" / "cordis.patch.yml"
    schema = dump_config_schema(home, "web", dsh=dsh)
    assert validate_patch(list(read_patch(path).rows), schema) == []


@pytest.mark.dsh
@needs_dsh
def test_sdk_saves_compose_in_the_real_program(home: Path, staff: Client) -> None:
    for section, changes in (
        ("compaction-basic", {"thresholdRatio": 0.6}),
        ("context-truth", {"quantumPercent": 10, "language": "zh"}),
    ):
        url = f"/settings/sdk/{section}/"
        assert staff.post(url, _form_data(staff, url, **changes)).status_code == 302
    dsh = find_dsh()
    assert dsh is not None
    composed = dump_config(home, "sdk", dsh=dsh)
    engine = composed.top("compaction-basic")
    assert engine is not None and engine.runs is True
    assert engine.config == {"thresholdRatio": 0.6, "headroomTokens": 1000}
    truth = [row for row in composed.walk() if row.id == "context-truth"]
    assert [row.config for row in truth] == [{"language": "zh", "quantumPercent": 10}]
    path = home / "profiles" / "sdk" / "cordis.patch.yml"
    schema = dump_config_schema(home, "sdk", dsh=dsh)
    assert validate_patch(list(read_patch(path).rows), schema) == []


def test_preview_renders_the_line_for_a_session(home: Path, staff: Client) -> None:
    data = _form_data(staff, "/settings/sdk/context-truth/", language="zh")
    data["session"] = "auto-compact"
    page = staff.post("/settings/sdk/preview/", data).content.decode()
    assert 'id="occupancy-line"' in page
    assert "上下文" in page
    data["language"] = "en"
    page = staff.post("/settings/sdk/preview/", data).content.decode()
    assert "Context occupancy" in page
    # the plugin's own mirror of the engine: 24,000 window, 3,000 reserved, so the point is
    # min(0.8 x 24000, 24000 - 3000 - headroomTokens) with the typed headroom
    data["headroomTokens"] = 1000
    page = staff.post("/settings/sdk/preview/", data).content.decode()
    assert 'id="preview-ring"' in page and 'data-threshold="19200"' in page
    data["thresholdRatio"] = 0.5
    page = staff.post("/settings/sdk/preview/", data).content.decode()
    assert 'data-threshold="12000"' in page


def test_history_and_restore(home: Path, staff: Client) -> None:
    url = "/settings/sdk/context-truth/"
    staff.post(url, _form_data(staff, url, quantumPercent=10))
    saved = (home / "profiles" / "sdk" / "cordis.patch.yml").read_text()
    (revision,) = PatchRevision.objects.all()
    page = staff.get("/settings/sdk/history/").content.decode()
    assert f'id="revision-{revision.pk}"' in page and "+    - id: context-truth" in page
    response = staff.post(f"/settings/revisions/{revision.pk}/restore/", {"which": "before"})
    assert response.status_code == 302
    assert (home / "profiles" / "sdk" / "cordis.patch.yml").read_text() == HAND_WRITTEN
    restore = PatchRevision.objects.first()
    assert restore is not None
    assert (restore.action, restore.restored_from_id, restore.before) == (
        "restore",
        revision.pk,
        saved,
    )


def test_initial_values_show_lists_as_lines() -> None:
    values = initial_values(CONTEXT_TRUTH_SCHEMA, {"compactionRules": ["a", "b"]})
    assert values["compactionRules"] == "a\nb"
    assert values["language"] == "en"


@pytest.mark.dsh
@needs_dsh
def test_each_value_says_where_it_comes_from(home: Path, staff: Client) -> None:
    page = squeezed(staff.get("/settings/sdk/compaction-basic/").content.decode())
    profile_patch = 'data-source-of="thresholdRatio">Now from <span translate="no">profile patch'
    assert profile_patch in page
    assert 'data-source-of="retainRatio"' not in page  # a default says nothing


@needs_dsh
def test_dump_config_runs_again_only_when_a_patch_file_changed(
    home: Path, staff: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    runs: list[str] = []

    def counted(home: Path, profile: str, **kwargs: Any) -> Any:
        runs.append(profile)
        return dump_config(home, profile, **kwargs)

    monkeypatch.setattr("dshweb.profiles.composed.dump_config", counted)
    for _ in range(3):
        page = squeezed(staff.get("/settings/sdk/compaction-basic/").content.decode())
        assert 'data-source-of="thresholdRatio">Now from <span translate="no">profile patch' in page
    assert runs == ["sdk"]  # three GETs, one run
    url = "/settings/sdk/compaction-basic/"
    saved = staff.post(url, _form_data(staff, url, thresholdRatio="0.6"))
    assert saved.status_code == 302
    staff.get("/settings/sdk/compaction-basic/")
    staff.get("/settings/sdk/compaction-basic/")
    assert runs == ["sdk", "sdk"]  # the save changed the patch file: one run more


def test_without_dsh_sources_come_from_the_visible_file(
    home: Path, staff: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(patches, "find_dsh", lambda: None)
    monkeypatch.setattr("dshweb.profiles.service.find_dsh", lambda: None)
    page = squeezed(staff.get("/settings/sdk/compaction-basic/").content.decode())
    assert (
        'data-source-of="headroomTokens">Now from <span translate="no">profile patch '
        "profiles/sdk/cordis.patch.yml</span>" in page
    )
    assert 'data-source-of="retainRatio"' not in page  # a default says nothing


def test_django_admin_links_to_the_settings(home: Path) -> None:
    client = Client()
    client.force_login(User.objects.create_superuser("root", password="x-x-x-x-1"))
    page = client.get("/admin/").content.decode()
    assert 'id="dsh-settings-link"' in page and 'href="/settings/"' in page


def test_preview_speaks_the_installed_plugin_version(home: Path, staff: Client) -> None:
    package = home / "profiles" / "sdk" / "node_modules" / "dsh-context-truth" / "package.json"
    package.parent.mkdir(parents=True)
    package.write_text('{"name": "dsh-context-truth", "version": "0.1.3"}')
    data = _form_data(staff, "/settings/sdk/context-truth/")
    data["session"] = "auto-compact"
    page = staff.post("/settings/sdk/preview/", data).content.decode()
    snapshot = home_view().session("auto-compact")
    assert snapshot is not None
    old = occupancy_line(
        line_input(snapshot), LineSettings.from_config({}, wording=Wording.SOURCE_0_1_3)
    )
    new = occupancy_line(line_input(snapshot), LineSettings.from_config({}))
    assert old.text != new.text
    assert escape(old.text) in page


def _home_files(home: Path) -> dict[str, tuple[str, int]]:
    """Every file and link of the home: its sha256 (or link target) and mode."""
    import hashlib
    import os

    found: dict[str, tuple[str, int]] = {}
    for folder, dirs, files in os.walk(home):
        for name in [*dirs, *files]:
            path = Path(folder) / name
            info = path.lstat()
            if path.is_symlink():
                digest = os.readlink(path)
            elif path.is_file():
                digest = hashlib.sha256(path.read_bytes()).hexdigest()
            else:
                digest = "dir"
            found[str(path.relative_to(home))] = (digest, info.st_mode)
    return found


@pytest.mark.dsh
@needs_dsh
def test_a_get_of_any_settings_page_changes_nothing_on_disk(home: Path, staff: Client) -> None:
    # dsh rewrites a cordis.yml that is not its own text each time it composes a profile.
    (home / "profiles" / "sdk" / "cordis.yml").write_text("# mine, by hand\n[]\n")
    before = _home_files(home)
    pages = ["/settings/", "/settings/engine/"]
    for profile in ("sdk", "web"):
        pages += [
            f"/settings/{profile}/{s}/"
            for s in ("context-truth", "compaction-basic", "tool-result-pruner")
        ]
        pages.append(f"/settings/{profile}/history/")
    for url in pages:
        assert staff.get(url).status_code == 200, url
    assert _home_files(home) == before


@pytest.mark.parametrize(
    ("key", "value", "words"),
    [
        ("quantumPercent", "9" * 400, "quantumPercent"),
        ("order", "9" * 400, "order"),
        ("paceSamples", "1" + "0" * 309, "paceSamples"),
        ("paceMargin", "1e999", "paceMargin"),
        ("sha256", "", "__all__"),
        ("sha256", "x" * 100_000, "__all__"),
        ("compactionRules", "- " + "x" * 200_000, "compactionRules"),
    ],
)
def test_absurd_input_is_a_field_error_never_a_500(
    home: Path, staff: Client, key: str, value: str, words: str
) -> None:
    url = "/settings/sdk/context-truth/"
    before = (home / "profiles" / "sdk" / "cordis.patch.yml").read_bytes()
    response = staff.post(url, _form_data(staff, url, **{key: value}))
    assert response.status_code == 200
    errors = response.context["form"].errors
    assert words in errors, errors
    assert (home / "profiles" / "sdk" / "cordis.patch.yml").read_bytes() == before


def test_a_profile_folder_without_write_permission_is_a_clear_page(
    home: Path, staff: Client
) -> None:
    url = "/settings/sdk/context-truth/"
    data = _form_data(staff, url, quantumPercent=10)
    folder = home / "profiles" / "sdk"
    folder.chmod(0o555)
    try:
        response = staff.post(url, data)
    finally:
        folder.chmod(0o755)
    assert response.status_code == 200
    assert "sdk/ has no write permission (mode 0555)" in response.content.decode()


@pytest.mark.parametrize("name", ["nope", "x" * 5000, "..", "sdk\u0000"])
@pytest.mark.parametrize("page", ["preview/", "history/", "context-truth/"])
def test_a_profile_that_does_not_exist_is_not_found(
    home: Path, staff: Client, name: str, page: str
) -> None:
    data = _form_data(staff, "/settings/sdk/context-truth/") | {"session": "auto-compact"}
    url = f"/settings/{quote(name)}/{page}"
    response = staff.post(url, data) if page == "preview/" else staff.get(url)
    assert response.status_code == 404
    assert staff.post("/settings/sdk/preview/", data).status_code == 200  # the real one is


def test_the_form_groups_its_fields_and_opens_with_a_preview(home: Path, staff: Client) -> None:
    page = staff.get("/settings/sdk/context-truth/").content.decode()
    legends = re.findall(r"<legend>([^<]+)</legend>", page)
    assert legends[:3] == [
        "The line the model reads",
        "Bands",
        "The compaction point, as the line names it",
    ]
    # Each key under a label in words, the key itself small, its unit beside the input.
    moderate = page.split('data-key="moderateAt"', 1)[1].split("</div>\n", 3)
    block = "".join(moderate[:3])
    assert 'Moderate from <code class="key">moderateAt</code>' in block
    assert '<span class="unit">fraction of the compaction point, 0–1</span>' in block
    quantum = page.split('data-key="quantumPercent"', 1)[1][:600]
    assert '<span class="unit">percent of the window</span>' in quantum
    # The picker first, the most recent session picked, and its line already shown.
    assert page.index('id="preview-session"') < page.index("<legend>")
    assert 'id="occupancy-line"' in page
    other = staff.get("/settings/sdk/tool-result-pruner/").content.decode()
    assert re.findall(r"<legend>([^<]+)</legend>", other) == [
        "Which tool results are cut, and what stays"
    ]


def test_a_refused_value_is_said_in_the_pages_language(home: Path, staff: Client) -> None:
    url = "/settings/sdk/context-truth/"
    bad = _form_data(staff, url, moderateAt="1.5")
    english = staff.post(url, bad, HTTP_ACCEPT_LANGUAGE="en").content.decode()
    assert "must be between 0 and 1, exclusive" in english  # the schema's own words
    chinese = staff.post(url, bad, HTTP_ACCEPT_LANGUAGE="zh-CN").content.decode()
    assert "须在 0 到 1 之间（不含两端）" in chinese and "must be between" not in chinese
    crossed = _form_data(staff, url, moderateAt="0.9", tightAt="0.8")
    chinese = staff.post(url, crossed, HTTP_ACCEPT_LANGUAGE="zh-CN").content.decode()
    assert "moderateAt 须小于 tightAt。" in chinese
