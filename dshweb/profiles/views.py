"""Settings pages: the plugins' rows of a profile's patch file, as validated forms.

Staff only. Views translate: the forms check input against the schemas, the patch
service writes the file (only that row, atomically, refusing when the file changed
since the form was shown) and records a revision; the preview renders the occupancy
line dsh-context-truth would inject for a chosen session under the typed settings.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST

from dshweb.collect.settings_access import staff_only
from dshweb.config import get_config
from dshweb.core.errors import DshError
from dshweb.core.fold.gauge import window_share
from dshweb.core.profile.plugins import CONTEXT_TRUTH_SCHEMA, SCHEMAS
from dshweb.core.profile.profile import CONTEXT_TRUTH_ID, Profile, profile_names
from dshweb.core.profile.schema import validate
from dshweb.core.settings.dshconfig import (
    context_truth_presence,
    find_dsh,
    value_sources,
)
from dshweb.core.settings.occupancy.line import OccupancyLine, line_input, occupancy_line
from dshweb.core.settings.occupancy.line_settings import LineSettings, wording_for
from dshweb.core.settings.patchfile import (
    PatchConflict,
    PatchDocument,
    PatchNotWritable,
    read_patch,
    row_config,
    unified_diff,
    write_refusal,
)
from dshweb.live.service import home_view, own_home_name, shown_home
from dshweb.profiles import patches
from dshweb.profiles.composed import composed_config
from dshweb.profiles.forms import config_form, fixed_values, initial_values
from dshweb.profiles.models import PatchRevision

ENGINE_ROWS = ("compaction-basic", "tool-result-pruner")


def _home() -> Path:
    return shown_home().path


def _profile_or_404(profile: str) -> Profile:
    if profile not in profile_names(_home()):
        raise Http404(f"no profile {profile!r} in {_home()}")
    return Profile.read(_home(), profile)


def _has_truth_row(document: PatchDocument) -> bool:
    """The file configures ``context-truth``, or one of its insert rows adds it."""
    return row_config(document, CONTEXT_TRUTH_ID) is not None or any(
        row.is_context_truth or row.id == CONTEXT_TRUTH_ID for row in document.inserted_rows()
    )


@staff_only
@require_http_methods(["GET"])
def settings_index(request: HttpRequest) -> HttpResponse:
    home = _home()
    profiles = []
    for name in profile_names(home):
        profile = Profile.read(home, name)
        try:
            truth, error = _has_truth_row(read_patch(profile.patch_path)), None
        except DshError as problem:
            truth, error = False, str(problem)
        profiles.append({"name": name, "truth": truth, "error": error, "web": profile.web_app})
    return render(
        request,
        "settings/index.html",
        {
            "profiles": profiles,
            "default_profile": get_config().profile,
            "sections": SCHEMAS,
        },
    )


@staff_only
@require_http_methods(["GET", "POST"])
def settings_row(request: HttpRequest, profile: str, section: str) -> HttpResponse:
    read = _profile_or_404(profile)
    schema = SCHEMAS.get(section)
    if schema is None:
        raise Http404(f"no settings named {section!r}")
    path = read.patch_path
    try:
        document = read_patch(path)
        if document.not_utf8 is not None:
            raise PatchNotWritable(document.not_utf8)
    except DshError as problem:
        return render(
            request,
            "settings/broken.html",
            {"profile": profile, "path": path, "error": str(problem)},
            status=409,
        )
    current = row_config(document, section)
    targets = patches.engine_targets(read, section) if section in ENGINE_ROWS else None
    presence = context_truth_presence(read, None) if section == CONTEXT_TRUTH_ID else None
    if targets is not None and targets.presets:
        current = targets.current
    fixed = fixed_values(schema, current)
    form_class = config_form(schema)
    unreachable = targets.reason if targets is not None else None
    unwritable = write_refusal(path)  # a link or a read-only file: said before any save
    conflict = None
    if request.method == "POST" and unreachable is None:
        form = form_class(request.POST)
        if form.is_valid():
            config = {**form.cleaned_data["config"], **fixed}
            sha = form.cleaned_data["sha256"]
            try:
                if targets is not None and targets.presets:
                    patches.save_preset_engines(
                        profile=read,
                        schema=schema,
                        config=config,
                        targets=targets,
                        expected_sha256=sha,
                        user=request.user,
                    )
                else:
                    patches.save_row(
                        profile=read,
                        schema=schema,
                        config=config,
                        expected_sha256=sha,
                        user=request.user,
                        insert=presence is not None and presence.needs_insert and current is None,
                    )
            except PatchConflict as changed:
                conflict = unified_diff(
                    form.cleaned_data.get("base_text", ""), changed.current_text, path.name
                )
            except PatchNotWritable as refused:
                unwritable = str(refused)
            except DshError as problem:
                form.add_error(None, str(problem))
            else:
                messages.success(request, f"Saved {section} in {path.relative_to(read.home)}.")
                return HttpResponseRedirect(request.path)
    else:
        form = form_class(
            initial={
                **initial_values(schema, current),
                "sha256": document.sha256,
                "base_text": document.text if document.exists else "",
            }
        )
    for key in fixed:
        if key in form.fields:
            form.fields[key].disabled = True
            form.fields[key].help_text = "Set by a !!js expression in the file; edit it there."
    sources = _value_sources(read, section, targets, current)
    shots = home_view().snapshots
    return render(
        request,
        "settings/row.html",
        {
            "profile": profile,
            "section": section,
            "schema": schema,
            "form": form,
            "path": path.relative_to(read.home),
            "exists": document.exists,
            "in_file": current is not None,
            "unreachable": unreachable,
            "conflict": conflict,
            "unwritable": unwritable,
            "sessions": shots,
            "preview": section == CONTEXT_TRUTH_ID,
            "presence": presence,
            "targets": targets,
            "fields": [(field, sources.get(field.name)) for field in form.visible_fields()],
        },
    )


def _value_sources(
    profile: Profile, section: str, targets: patches.EngineTargets | None, current: Any
) -> dict[str, str]:
    """Where each key's current value comes from, as a phrase per key."""
    composed = targets.composed if targets is not None else None
    dsh = find_dsh()
    if composed is None and dsh is not None:
        try:
            composed = composed_config(profile, dsh)
        except DshError:
            composed = None
    row = None
    if composed is not None:
        if targets is not None and targets.presets:
            row = sorted(targets.presets, key=lambda t: not t.default_preset)[0].row
        else:
            row = next((r for r in composed.walk() if r.id == section), None)
    if composed is not None and row is not None:
        found = value_sources(composed, row, profile=profile)
        return {key: source.describe() for key, source in found.items()}
    if current:  # without dsh: only the visible layers are known
        writable = next(layer for layer in profile.layers if layer.writable)
        return dict.fromkeys(current, f"{writable.label} {writable.path.relative_to(profile.home)}")
    return {}


@staff_only
@require_POST
def settings_preview(request: HttpRequest, profile: str) -> HttpResponse:
    """The occupancy line for one session under the settings as typed (htmx)."""
    read = _profile_or_404(profile)
    schema = CONTEXT_TRUTH_SCHEMA
    form = config_form(schema)(request.POST)
    form.is_valid()
    typed = {k: v for k, v in (form.cleaned_data.get("config") or {}).items()}
    checked = validate(schema, typed)
    snapshot = home_view().session(request.POST.get("session", ""))
    line = None
    if snapshot is not None:
        line = occupancy_line(
            line_input(snapshot),
            LineSettings.from_config(
                checked.config,
                wording=wording_for(read.context_truth.version),
            ),
        )
    return render(
        request,
        "settings/_preview.html",
        {
            "line": line,
            "ring": preview_ring(line) if line is not None else None,
            "language": checked.config.get("language", "en"),
            "session": snapshot,
            "errors": {**form.errors, **checked.errors},
        },
    )


@staff_only
@require_http_methods(["GET"])
def settings_history(request: HttpRequest, profile: str) -> HttpResponse:
    _profile_or_404(profile)
    revisions = PatchRevision.objects.filter(home=own_home_name(), profile=profile)
    revisions = revisions.select_related("user")[:100]
    rows = [
        {"revision": r, "lines": diff_lines(unified_diff(r.before, r.after, Path(r.path).name))}
        for r in revisions
    ]
    return render(request, "settings/history.html", {"profile": profile, "rows": rows})


@staff_only
@require_POST
def settings_restore(request: HttpRequest, revision_id: int) -> HttpResponse:
    revision = get_object_or_404(PatchRevision, pk=revision_id, home=own_home_name())
    which = "before" if request.POST.get("which") == "before" else "after"
    try:
        patches.restore(home=_home(), revision=revision, which=which, user=request.user)
    except DshError as problem:
        messages.error(request, f"Not restored: {problem}")
    else:
        messages.success(request, f"Restored {revision.path} as it was {which} that save.")
    return HttpResponseRedirect(reverse("dashboard:settings-history", args=[revision.profile]))


def diff_lines(diff: str) -> list[tuple[str, str]]:
    """A unified diff as (kind, line) pairs: ``add``, ``del``, ``hunk`` or ``same``."""
    kinds = {"+": "add", "-": "del", "@": "hunk"}
    return [
        ("hunk" if line.startswith(("+++", "---")) else kinds.get(line[:1], "same"), line)
        for line in diff.splitlines()
    ]


def preview_ring(line: OccupancyLine) -> dict[str, float | None]:
    """Where the preview's ring marks sit, as percents of the window."""
    edges, window = line.edges, line.window
    return {
        "used": window_share(line.used, window),
        "moderate": window_share(edges.moderate, window) if edges else None,
        "tight": window_share(edges.tight, window) if edges else None,
        "threshold": window_share(line.threshold, window),
    }
