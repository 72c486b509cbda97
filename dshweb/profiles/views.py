"""Settings pages: the plugins' rows of a profile's patch file, as validated forms.

Staff only. Each view is given the :class:`~dshweb.profiles.remote.Place` of its home
(this process's own, or a collected home's collector) and calls the typed methods of its
``settings`` (:class:`~dshweb.profiles.pages.HomeSettings`); the view builds the form,
checks what was typed against the plugin's schema, shows messages and renders, the same
for both.
The preview renders the occupancy line dsh-context-truth would inject for a chosen
session under the typed settings.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from django.contrib import messages
from django.forms import BoundField
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.utils.functional import Promise
from django.utils.safestring import mark_safe
from django.utils.translation import gettext as _
from django.views.decorators.http import require_http_methods, require_POST

from dshweb.core.profile.plugins import CONTEXT_TRUTH_SCHEMA, SCHEMAS
from dshweb.core.profile.profile import CONTEXT_TRUTH_ID
from dshweb.core.profile.schema import NON_FIELD, Kind
from dshweb.core.settings.patchfile import unified_diff
from dshweb.profiles.forms import ConfigForm, config_form
from dshweb.profiles.labels import GROUPS, LABELS, OTHER
from dshweb.profiles.models import PatchRevision
from dshweb.profiles.pages import (
    BrokenRow,
    Config,
    Conflict,
    NotFound,
    NotRestored,
    Record,
    Refused,
    RowPage,
    Saved,
    Which,
)
from dshweb.profiles.remote import Place, settings_page
from dshweb.profiles.service import ENGINE_ROWS

FIXED_HELP = "Set by a !!js expression in the file; edit it there."


def _context(place: Place, **values: object) -> dict[str, object]:
    """A settings page's context: ``settings_home``, the collected home shown, if any
    (its links then stay under ``/homes/<home>/``)."""
    return {"settings_home": place if place.collected else None, **values}


def _fields(record: Record) -> dict[str, object]:
    """A record's fields by name, as a template's context (the record's own values)."""
    return {name: getattr(record, name) for name in record.__struct_fields__}


def _user_id(request: HttpRequest) -> int | None:
    pk = request.user.pk
    return pk if isinstance(pk, int) else None


@settings_page
@require_http_methods(["GET"])
def settings_index(request: HttpRequest, place: Place) -> HttpResponse:
    page = place.settings.index()
    return render(request, "settings/index.html", _context(place, **_fields(page)))


@settings_page
@require_http_methods(["GET", "POST"])
def settings_row(request: HttpRequest, place: Place, profile: str, section: str) -> HttpResponse:
    schema = SCHEMAS.get(section)
    if schema is None:
        raise NotFound(f"no settings named {section!r}")
    form_class = config_form(schema)
    conflict = None
    row: RowPage | BrokenRow
    if request.method == "POST":
        form = form_class(request.POST)
        if form.is_valid():
            outcome = place.settings.save(
                profile=profile,
                section=section,
                config=form.cleaned_data["config"],
                sha256=form.cleaned_data["sha256"],
                base_text=form.cleaned_data.get("base_text", ""),
                user_id=_user_id(request),
            )
            if isinstance(outcome, Saved):
                said = {"section": section, "path": outcome.path}
                messages.success(request, _("Saved %(section)s in %(path)s.") % said)
                return HttpResponseRedirect(request.path)
            row = outcome.row
            if isinstance(outcome, Conflict):
                conflict = outcome.diff
            if isinstance(outcome, Refused):
                for key, message in outcome.errors.items():
                    form.add_error(None if key == NON_FIELD else key, message)
        else:
            row = place.settings.row(profile, section)
    else:
        row = place.settings.row(profile, section)
        if isinstance(row, RowPage):
            form = form_class(
                initial={**row.initial, "sha256": row.sha256, "base_text": row.base_text}
            )
    if isinstance(row, BrokenRow):
        context = _context(place, profile=profile, path=row.path, error=row.problem)
        return render(request, "settings/broken.html", context, status=409)
    return _row_page(request, place, row, form, conflict)


def _row_page(
    request: HttpRequest, place: Place, row: RowPage, form: ConfigForm, conflict: str | None
) -> HttpResponse:
    for key in row.fixed:
        if key in form.fields:
            form.fields[key].disabled = True
            form.fields[key].help_text = FIXED_HELP
    return render(
        request,
        "settings/row.html",
        _context(
            place,
            **_fields(row),
            form=form,
            conflict=conflict,
            preview=row.section == CONTEXT_TRUTH_ID,
            replay=row.section in ENGINE_ROWS,
            groups=field_groups(row.section, form, row.sources),
            title_is_data=True,  # the row's id and the profile's name
            **first_preview(place, row, form),
            **first_replay(place, row, form),
        ),
    )


def first_replay(place: Place, row: RowPage, form: ConfigForm) -> dict[str, object]:
    """The replay a page of an engine row opens with: the most recent session under the
    settings as they are (nothing for another row, or while the form shows errors)."""
    if row.section not in ENGINE_ROWS or not row.sessions or form.errors:
        return {}
    shown = place.settings.replay(
        profile=row.profile,
        section=row.section,
        config=row.initial,  # the engine's or the pruner's, as shown
        session_id=row.sessions[0].session_id,
        pruner=None,
    )
    return _fields(shown)


def first_preview(place: Place, row: RowPage, form: ConfigForm) -> dict[str, object]:
    """The preview a page of the ``context-truth`` row opens with: the line for the most
    recent session under the settings as they are (nothing for another row, or while the
    form shows errors)."""
    if row.section != CONTEXT_TRUTH_ID or not row.sessions or form.errors:
        return {}
    lines_of = {spec.key for spec in CONTEXT_TRUTH_SCHEMA.fields if spec.kind is not Kind.STRINGS}
    config: Config = {key: value for key, value in row.initial.items() if key in lines_of}
    shown = place.settings.preview(
        profile=row.profile, config=config, session_id=row.sessions[0].session_id
    )
    return _fields(shown)


@dataclass(frozen=True, slots=True)
class ShownField:
    field: BoundField
    source: str | None
    """Where its current value comes from (None: the plugin's default)."""
    unit: Promise | None


def field_groups(
    section: str, form: ConfigForm, sources: Mapping[str, str]
) -> list[tuple[Promise, list[ShownField]]]:
    """The form's fields by what they change (:data:`dshweb.profiles.labels.GROUPS`), each
    with its label and help in words (the key shown beside), its unit and its source."""
    labels = LABELS.get(section, {})
    visible = {field.name: field for field in form.visible_fields()}
    for name, field in visible.items():
        shown = labels.get(name)
        if shown is not None:
            field.label = str(shown.label)
            if not field.field.disabled:  # a fixed value keeps its FIXED_HELP
                field.help_text = mark_safe(str(shown.help))

    def fields(names: Iterable[str]) -> list[ShownField]:
        found = [visible.pop(name) for name in names if name in visible]
        return [
            ShownField(f, sources.get(f.name), getattr(labels.get(f.name), "unit", None))
            for f in found
        ]

    groups = [(title, fields(names)) for title, names in GROUPS.get(section, ())]
    rest = fields(list(visible))
    return [(title, shown) for title, shown in [*groups, (OTHER, rest)] if shown]


@settings_page
@require_POST
def settings_preview(request: HttpRequest, place: Place, profile: str) -> HttpResponse:
    """The occupancy line for one session under the settings as typed (htmx)."""
    form = config_form(CONTEXT_TRUTH_SCHEMA)(request.POST)
    form.is_valid()
    shown = place.settings.preview(
        profile=profile,
        config=dict(form.cleaned_data.get("config") or {}),
        session_id=request.POST.get("session", ""),
    )
    errors = {**form.errors, **shown.errors}
    return render(request, "settings/_preview.html", {**_fields(shown), "errors": errors})


@settings_page
@require_POST
def settings_replay(request: HttpRequest, place: Place, profile: str, section: str) -> HttpResponse:
    """A session's recorded growth replayed under the settings as typed (htmx)."""
    schema = SCHEMAS.get(section)
    if schema is None or section not in ENGINE_ROWS:
        raise NotFound(f"no replay for {section!r}")
    form = config_form(schema)(request.POST)
    if not form.is_valid():  # replay nothing the engine would refuse to run
        return render(request, "settings/_replay.html", {"errors": form.errors})
    pruner = {"on": True, "off": False}.get(request.POST.get("pruner", ""))
    shown = place.settings.replay(
        profile=profile,
        section=section,
        config=dict(form.cleaned_data.get("config") or {}),
        session_id=request.POST.get("session", ""),
        pruner=pruner,
    )
    return render(request, "settings/_replay.html", _fields(shown))


@settings_page
@require_http_methods(["GET"])
def settings_history(request: HttpRequest, place: Place, profile: str) -> HttpResponse:
    if profile not in place.settings.profiles():
        raise NotFound(f"no profile {profile!r} in {place.name}")
    revisions = PatchRevision.objects.filter(home=place.name, profile=profile)
    revisions = revisions.select_related("user")[:100]
    rows = [
        {"revision": r, "lines": diff_lines(unified_diff(r.before, r.after, Path(r.path).name))}
        for r in revisions
    ]
    context = _context(place, profile=profile, rows=rows)
    return render(request, "settings/history.html", context)


@settings_page
@require_POST
def settings_restore(request: HttpRequest, place: Place, revision_id: int) -> HttpResponse:
    which: Which = "before" if request.POST.get("which") == "before" else "after"
    restored = place.settings.restore(
        revision_id=revision_id, which=which, user_id=_user_id(request)
    )
    if isinstance(restored, NotRestored):
        messages.error(request, _("Not restored: %(error)s") % {"error": restored.error})
    else:
        said = {"path": restored.path}
        messages.success(
            request,
            _("Restored %(path)s as it was before that save.") % said
            if restored.which == "before"
            else _("Restored %(path)s as it was after that save.") % said,
        )
    return HttpResponseRedirect(place.url("settings-history", restored.profile))


def diff_lines(diff: str) -> list[tuple[str, str]]:
    """A unified diff as (kind, line) pairs: ``add``, ``del``, ``hunk`` or ``same``."""
    kinds = {"+": "add", "-": "del", "@": "hunk"}
    return [
        ("hunk" if line.startswith(("+++", "---")) else kinds.get(line[:1], "same"), line)
        for line in diff.splitlines()
    ]
