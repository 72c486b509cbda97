"""The settings of the DSH home this process reads, as data: what a settings page shows,
and the saves, previews and restores it asks for.

:class:`OwnHome` answers the settings protocol (:class:`~dshweb.profiles.pages.HomeSettings`)
for this process's home with the typed records of :mod:`dshweb.profiles.pages`: a web page
of this process calls it directly, and a collector calls it for a web worker that asked it
(:mod:`dshweb.profiles.remote`), which renders the answer as it renders its own. What a
page shows of a profile's patch file, the composed profile (``dsh --dump-config``,
:mod:`dshweb.profiles.composed`) and a save's outcome are computed here, on the machine
holding the files; forms, messages and templates are the page's.

A save validates the config against the plugin's schema again (the page did), keeps the
``!!js`` values and unknown keys of the row as they are, writes only that row when the
file has not changed since the page read it, and records a revision as the user named.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from pathlib import Path

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser

from dshweb.config import get_config
from dshweb.core.errors import DshError
from dshweb.core.fold.gauge import window_share
from dshweb.core.fold.replay import Recording, record_log, replay
from dshweb.core.log.home import LogFile
from dshweb.core.profile.effective import EngineConfig, EngineConfigError, effective_settings
from dshweb.core.profile.layers import ENGINE_ID, PRUNER_ID
from dshweb.core.profile.plugins import CONTEXT_TRUTH_SCHEMA, SCHEMAS
from dshweb.core.profile.profile import CONTEXT_TRUTH_ID, Profile, profile_names
from dshweb.core.profile.pruner import DEFAULT_CUT, PruneCut, PrunerConfigError
from dshweb.core.profile.schema import NON_FIELD, Schema, validate
from dshweb.core.settings.dshconfig import context_truth_presence, find_dsh, value_sources
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
from dshweb.live.service import home_view, own_home, own_home_name
from dshweb.profiles import patches
from dshweb.profiles.composed import composed_config
from dshweb.profiles.forms import fixed_values, initial_values
from dshweb.profiles.models import PatchRevision
from dshweb.profiles.pages import (
    BrokenRow,
    Config,
    Conflict,
    Edges,
    IndexPage,
    Line,
    NotFound,
    NotRestored,
    NotSaved,
    Presence,
    PresetTarget,
    PreviewPage,
    ProfileCard,
    Refused,
    Replay,
    ReplayedStep,
    ReplayPage,
    Restored,
    RestoreOutcome,
    Ring,
    RowPage,
    Saved,
    SaveOutcome,
    SessionChoice,
    Which,
)

ENGINE_ROWS = (ENGINE_ID, PRUNER_ID)
"""The compaction engine's rows: saved into each agent preset on a web-app profile, and
shown with a session replayed under them."""


def _profile(name: str) -> Profile:
    home = own_home().path
    if name not in profile_names(home):
        raise NotFound(f"no profile {name!r} in {home}")
    return Profile.read(home, name)


def _schema(section: str) -> Schema:
    schema = SCHEMAS.get(section)
    if schema is None:
        raise NotFound(f"no settings named {section!r}")
    return schema


def _user(user_id: int | None) -> AbstractBaseUser | AnonymousUser:
    found = get_user_model().objects.filter(pk=user_id).first() if user_id else None
    return found if found is not None else AnonymousUser()


def _has_truth_row(document: PatchDocument) -> bool:
    """The file configures ``context-truth``, or one of its insert rows adds it."""
    return row_config(document, CONTEXT_TRUTH_ID) is not None or any(
        row.is_context_truth or row.id == CONTEXT_TRUTH_ID for row in document.inserted_rows()
    )


class _Row:
    """A settings row as read now: the file, where a save goes, what the form edits."""

    def __init__(self, profile: str, section: str) -> None:
        self.profile = _profile(profile)
        self.schema = _schema(section)
        self.section = section
        self.path = self.profile.patch_path
        # DshError: the file cannot be edited here
        self.document = read_patch(self.path, home=self.profile.home)
        if self.document.not_utf8 is not None:
            raise PatchNotWritable(self.document.not_utf8)
        self.current = row_config(self.document, section)
        self.targets = (
            patches.engine_targets(self.profile, section) if section in ENGINE_ROWS else None
        )
        self.presence = (
            context_truth_presence(self.profile, None) if section == CONTEXT_TRUTH_ID else None
        )
        if self.targets is not None and self.targets.presets:
            self.current = self.targets.current
        self.fixed = fixed_values(self.schema, self.current)
        self.unreachable = self.targets.reason if self.targets is not None else None

    @property
    def relative_path(self) -> str:
        return str(self.path.relative_to(self.profile.home))

    def page(self, *, unwritable: str | None = None) -> RowPage:
        presence = self.presence
        return RowPage(
            profile=self.profile.name,
            section=self.section,
            path=self.relative_path,
            exists=self.document.exists,
            in_file=self.current is not None,
            initial=initial_values(self.schema, self.current),
            fixed=tuple(sorted(self.fixed)),
            sha256=self.document.sha256,
            base_text=self.document.text if self.document.exists else "",
            unreachable=self.unreachable,
            # a link or a read-only file: said before any save
            unwritable=unwritable or write_refusal(self.path),
            presence=None
            if presence is None
            else Presence(
                present=presence.present, sources=tuple(presence.sources), howto=presence.howto
            ),
            presets=tuple(
                PresetTarget(preset=str(t.preset), default_preset=t.default_preset)
                for t in (self.targets.presets if self.targets is not None else ())
            ),
            sources=self._value_sources(),
            # The most recent first: the preview starts with it.
            sessions=tuple(
                SessionChoice(session_id=s.session_id, title=s.title or "")
                for s in sorted(home_view().snapshots, key=lambda s: -(s.last_time or 0))
            ),
        )

    def save(
        self, config: Mapping[str, object], sha256: str, user: AbstractBaseUser | AnonymousUser
    ) -> None:
        config = {**config, **self.fixed}
        if self.targets is not None and self.targets.presets:
            patches.save_preset_engines(
                profile=self.profile,
                schema=self.schema,
                config=config,
                targets=self.targets,
                expected_sha256=sha256,
                user=user,
            )
        else:
            presence = self.presence
            patches.save_row(
                profile=self.profile,
                schema=self.schema,
                config=config,
                expected_sha256=sha256,
                user=user,
                insert=presence is not None and presence.needs_insert and self.current is None,
            )

    def _value_sources(self) -> dict[str, str]:
        """Where each key's current value comes from, as a phrase per key."""
        targets, profile = self.targets, self.profile
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
                row = next((r for r in composed.walk() if r.id == self.section), None)
        if composed is not None and row is not None:
            found = value_sources(composed, row, profile=profile)
            return {key: source.describe() for key, source in found.items()}
        if self.current:  # without dsh: only the visible layers are known
            writable = next(layer for layer in profile.layers if layer.writable)
            phrase = f"{writable.label} {writable.path.relative_to(profile.home)}"
            return dict.fromkeys(self.current, phrase)
        return {}


def _said(errors: Mapping[str, str]) -> dict[str, str]:
    """A schema's messages as plain text (a :class:`~dshweb.core.profile.schema.Problem`
    is a ``str`` that says more than the protocol carries)."""
    return {key: str(message) for key, message in errors.items()}


def _broken(profile: str, section: str, problem: DshError) -> BrokenRow:
    path = _profile(profile).patch_path
    return BrokenRow(profile=profile, section=section, path=str(path), problem=str(problem))


@functools.lru_cache(maxsize=16)
def _recording(path: str, version: int, last_seq: int) -> Recording:
    """A session's recording, read once per state of its log (``last_seq``)."""
    return record_log(LogFile(Path(path), version, path.endswith(".zstd")))


def _line(line: OccupancyLine) -> Line:
    edges = line.edges
    return Line(
        text=line.text,
        band=line.band,
        used=line.used,
        window=line.window,
        threshold=line.threshold,
        headroom=line.headroom,
        edges=None if edges is None else Edges(moderate=edges.moderate, tight=edges.tight),
    )


def preview_ring(line: OccupancyLine) -> Ring:
    """Where the preview's ring marks sit, as percents of the window."""
    edges, window = line.edges, line.window
    return Ring(
        used=window_share(line.used, window),
        moderate=window_share(edges.moderate, window) if edges else None,
        tight=window_share(edges.tight, window) if edges else None,
        threshold=window_share(line.threshold, window),
    )


class OwnHome:
    """The settings protocol answered for this process's own home, from its files."""

    def profiles(self) -> tuple[str, ...]:
        """The names of this home's profiles."""
        return tuple(profile_names(own_home().path))

    def index(self) -> IndexPage:
        home = own_home().path
        cards = []
        for name in profile_names(home):
            profile = Profile.read(home, name)
            try:
                truth, error = _has_truth_row(read_patch(profile.patch_path, home=home)), None
            except DshError as problem:
                truth, error = False, str(problem)
            cards.append(ProfileCard(name=name, truth=truth, error=error, web=profile.web_app))
        return IndexPage(
            home_path=str(home),
            profiles=tuple(cards),
            default_profile=get_config().profile,
            sections=tuple(SCHEMAS),
        )

    def row(self, profile: str, section: str) -> RowPage | BrokenRow:
        """What the form of ``section`` in ``profile`` shows."""
        try:
            return _Row(profile, section).page()
        except DshError as problem:
            return _broken(profile, section, problem)

    def save(
        self,
        *,
        profile: str,
        section: str,
        config: Config,
        sha256: str,
        base_text: str,
        user_id: int | None,
    ) -> SaveOutcome:
        """Write ``config`` (the form's, whole) as the row, unless the file changed since
        ``sha256`` was read; the outcome, with the row as it is now when not saved."""
        try:
            read = _Row(profile, section)
        except DshError as problem:
            return NotSaved(row=_broken(profile, section, problem))
        if read.unreachable is not None:
            return NotSaved(row=read.page())
        checked = validate(read.schema, config)
        if checked.errors:
            return Refused(row=read.page(), errors=_said(checked.errors))
        try:
            read.save(checked.config, sha256, _user(user_id))
        except PatchConflict as changed:
            diff = unified_diff(base_text, changed.current_text, read.path.name)
            return Conflict(row=read.page(), diff=diff)
        except PatchNotWritable as refused:
            return NotSaved(row=read.page(unwritable=str(refused)))
        except DshError as problem:
            return Refused(row=read.page(), errors={NON_FIELD: str(problem)})
        return Saved(path=read.relative_path)

    def preview(self, *, profile: str, config: Config, session_id: str) -> PreviewPage:
        """The occupancy line ``dsh-context-truth`` would inject into ``session_id`` under
        ``config`` (the form's, as typed)."""
        read = _profile(profile)
        checked = validate(CONTEXT_TRUTH_SCHEMA, config)
        snapshot = home_view().session(session_id)
        line = None
        if snapshot is not None:
            line = occupancy_line(
                line_input(snapshot),
                LineSettings.from_config(
                    checked.config, wording=wording_for(read.context_truth.version)
                ),
            )
        return PreviewPage(
            line=_line(line) if line is not None else None,
            # The point the engine folds this session at, which the line should name.
            engine_point=None if snapshot is None else snapshot.threshold,
            ring=preview_ring(line) if line is not None else None,
            language=str(checked.config.get("language", "en")),
            errors=_said(checked.errors),
        )

    def replay(
        self, *, profile: str, section: str, config: Config, session_id: str, pruner: bool | None
    ) -> ReplayPage:
        """What ``session_id``'s recorded growth would have done under ``config`` (the form's,
        as typed: on the engine's page, the engine's, with the profile's pruner; on the
        pruner's page, the pruner's cut, with the profile's engine) and the pruner on or off
        (``None``: as the profile has it; on where the profile has it off: its defaults),
        beside what it did."""
        read = _profile(profile)
        settings = effective_settings(read.home, profile)
        engine, cut, errors = settings.engine, settings.pruner, dict[str, str]()
        if section == ENGINE_ID:
            try:
                engine = EngineConfig.from_config(dict(config))
            except EngineConfigError as problem:
                engine, errors = None, {NON_FIELD: str(problem)}
        elif section == PRUNER_ID:
            try:
                cut = PruneCut.from_config(config)
            except PrunerConfigError as problem:  # nothing to replay the form's cut with
                engine, errors = None, {NON_FIELD: str(problem)}
        snapshot = home_view().session(session_id)
        if snapshot is None or engine is None:
            return ReplayPage(session_id=session_id, errors=errors, replayed=None)
        runs = settings.pruner is not None if pruner is None else pruner
        cut = (cut or DEFAULT_CUT) if runs else None
        path = str(own_home().path / snapshot.path)
        recording = _recording(path, snapshot.format_version or 4, snapshot.last_seq)
        said = replay(recording, engine, pruner=cut)
        return ReplayPage(
            session_id=session_id,
            errors=errors,
            replayed=Replay(
                passes=tuple(
                    ReplayedStep(step=f.check, kind=f.kind, before=f.before, after=f.after)
                    for f in said.passes
                ),
                automatic=said.automatic,
                peak=said.peak,
                lowest=said.lowest,
                summary_input=said.summary_input,
                summary_output=said.summary_output,
                threshold=said.threshold,
            ),
            real=recording.acted,
            steps=len(recording.checks),
            summary=recording.summary,
            summary_own=bool(recording.summaries),
            pruner=runs,
            cut=cut,
        )

    def restore(self, *, revision_id: int, which: Which, user_id: int | None) -> RestoreOutcome:
        """Put back the file as it was ``which`` that revision."""
        revision = PatchRevision.objects.filter(pk=revision_id, home=own_home_name()).first()
        if revision is None:
            raise NotFound(f"no revision {revision_id} of this home")
        try:
            patches.restore(
                home=own_home().path, revision=revision, which=which, user=_user(user_id)
            )
        except DshError as problem:
            return NotRestored(profile=revision.profile, error=str(problem))
        return Restored(profile=revision.profile, path=str(revision.path), which=which)


OWN_HOME = OwnHome()
"""This process's home (:class:`~dshweb.profiles.pages.HomeSettings`)."""
