"""The settings protocol: what a page may ask of a home's settings, and the typed answers.

:class:`HomeSettings` is the one interface: a method per question, each returning a frozen
record below. Two places implement it: this process's own home
(:class:`dshweb.profiles.service.OwnHome`, which reads and writes the files) and a
collected home's collector (:class:`dshweb.profiles.remote.CollectedHome`, which asks it
over the channel layer). A view calls the same method on either and renders the answer.

The records are msgspec ``Struct``\\ s, so the one codec (:mod:`dshweb.profiles.wire`)
turns them into JSON-like values on the collector and checks what comes back on the
worker. A record that is one of several answers (a row page or a broken file; a save
saved, refused, in conflict or not made) carries its ``kind``, by which the answer is
read. Unknown keys are ignored (a newer collector may say more); a missing key or a value
of the wrong type is refused by the codec.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal, Protocol

import msgspec

from dshweb.core.fold.gauge import Band
from dshweb.core.fold.replay import ReplayKind
from dshweb.core.profile.pruner import PruneCut

Config = Mapping[str, object]
"""A plugin row's config as a form typed it, or as the file has it: JSON-like values,
which the plugin's schema checks (:func:`dshweb.core.profile.schema.validate`)."""

Which = Literal["before", "after"]
"""Which file of a revision a restore puts back."""


class Record(msgspec.Struct, frozen=True):
    """A value of the settings protocol."""


# -- the index ---------------------------------------------------------------------------


class ProfileCard(Record, frozen=True):
    name: str
    truth: bool
    """The patch file has a ``context-truth`` row, or an insert row adds it."""
    error: str | None
    """Why the patch file cannot be read."""
    web: bool
    """Built on the web-app bundle (its engines run inside the agent presets)."""


class IndexPage(Record, frozen=True):
    home_path: str
    profiles: tuple[ProfileCard, ...]
    default_profile: str
    sections: tuple[str, ...]
    """The plugin rows a form edits (:data:`dshweb.core.profile.plugins.SCHEMAS`)."""


# -- a row -------------------------------------------------------------------------------


class Presence(Record, frozen=True):
    """Whether ``dsh-context-truth`` is assembled in the profile, and where from."""

    present: bool
    sources: tuple[str, ...]
    howto: str | None


class PresetTarget(Record, frozen=True):
    """An agent preset an engine row's save is written into."""

    preset: str
    default_preset: bool


class SessionChoice(Record, frozen=True):
    """A session the page offers to preview or replay."""

    session_id: str
    title: str


class RowPage(Record, frozen=True, tag_field="kind", tag="row"):
    """A plugin row of a profile's patch file as its form shows it."""

    profile: str
    section: str
    path: str
    """The patch file, relative to the home."""
    exists: bool
    in_file: bool
    """The file has the row (else every value shown is the plugin's default)."""
    initial: Config
    """What the form shows: the row's config over the defaults, lists as lines."""
    fixed: tuple[str, ...]
    """Keys the form cannot edit (a ``!!js`` value, a key the schema does not know)."""
    sha256: str
    """The file's hash as read: a save is refused once it changed."""
    base_text: str
    unreachable: str | None
    """Why a value saved here would change nothing that runs (then nothing is offered)."""
    unwritable: str | None
    """Why the file cannot be written (a link, read only, a refused save)."""
    presence: Presence | None
    """``context-truth``'s row only."""
    presets: tuple[PresetTarget, ...]
    sources: dict[str, str]
    """Where each key's current value comes from, as a phrase."""
    sessions: tuple[SessionChoice, ...]
    """The most recent first."""


class BrokenRow(Record, frozen=True, tag_field="kind", tag="broken"):
    """A row of a patch file that cannot be edited here (it does not parse, say)."""

    profile: str
    section: str
    path: str
    problem: str


# -- a save ------------------------------------------------------------------------------


class Saved(Record, frozen=True, tag_field="kind", tag="saved"):
    path: str
    """The file written, relative to the home."""


class Refused(Record, frozen=True, tag_field="kind", tag="refused"):
    """The config does not validate (or the save failed): a message per key, or for the
    whole form under :data:`~dshweb.core.profile.schema.NON_FIELD`."""

    row: RowPage
    errors: dict[str, str]


class Conflict(Record, frozen=True, tag_field="kind", tag="conflict"):
    """The file changed on disk since the form read it."""

    row: RowPage
    diff: str
    """From the file the form read to the file now."""


class NotSaved(Record, frozen=True, tag_field="kind", tag="not-saved"):
    """Nothing could be saved: the row says why (broken, unreachable or unwritable)."""

    row: RowPage | BrokenRow


SaveOutcome = Saved | Refused | Conflict | NotSaved


# -- the preview of the occupancy line ---------------------------------------------------


class Edges(Record, frozen=True):
    """Where the moderate and tight bands start, in tokens."""

    moderate: float
    tight: float


class Line(Record, frozen=True):
    """The occupancy line ``dsh-context-truth`` would inject, and its figures."""

    text: str
    band: Band
    used: int | None
    window: int | None
    threshold: int | None
    headroom: int | None
    edges: Edges | None


class Ring(Record, frozen=True):
    """Where the preview's ring marks sit, as percents of the window."""

    used: float | None
    moderate: float | None
    tight: float | None
    threshold: float | None


class PreviewPage(Record, frozen=True):
    line: Line | None
    """``None``: no such session."""
    engine_point: int | None
    """Where the engine compacts the session, which the line should name."""
    ring: Ring | None
    language: str
    errors: dict[str, str]


# -- the replay of a session under an engine row -----------------------------------------


class ReplayedStep(Record, frozen=True):
    """A pass the replay made (a check that pruned, compacted or failed to)."""

    step: int
    kind: ReplayKind
    before: int
    after: int


class Replay(Record, frozen=True):
    """What the settings would have done to the session."""

    passes: tuple[ReplayedStep, ...]
    automatic: tuple[int, ...]
    peak: int
    lowest: int | None
    summary_input: int
    summary_output: int
    threshold: int | None


class ReplayPage(Record, frozen=True):
    """A session replayed under the form's settings, beside what it did. Without
    ``replayed`` (no such session, or settings the engine refuses: ``errors``) the
    figures of the session are left at their zeros."""

    session_id: str
    errors: dict[str, str]
    replayed: Replay | None
    real: tuple[int, ...] = ()
    """The steps at which the session really folded."""
    steps: int = 0
    summary: int = 0
    """The size a summary is estimated at."""
    summary_own: bool = False
    """``summary`` is the median of the session's own summaries."""
    pruner: bool = False
    """The pruner runs in the replay."""
    cut: PruneCut | None = None
    """The cut it cuts at (``None``: it is off)."""


# -- a restore ---------------------------------------------------------------------------


class Restored(Record, frozen=True, tag_field="kind", tag="restored"):
    profile: str
    path: str
    which: Which


class NotRestored(Record, frozen=True, tag_field="kind", tag="not-restored"):
    profile: str
    error: str


RestoreOutcome = Restored | NotRestored


# -- the interface -----------------------------------------------------------------------


class NotFound(Exception):
    """No such profile, settings row or revision in the home: the page's 404."""


class HomeSettings(Protocol):
    """A home's settings, read and saved where its files are.

    Each method raises :class:`NotFound` for a profile, row or revision the home does
    not have; a remote one also raises when the home cannot be asked or its answer
    cannot be read (:class:`dshweb.profiles.remote.Unanswered`).
    """

    def profiles(self) -> tuple[str, ...]:
        """The names of the home's profiles."""
        ...

    def index(self) -> IndexPage: ...

    def row(self, profile: str, section: str) -> RowPage | BrokenRow:
        """What the form of ``section`` in ``profile`` shows."""
        ...

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
        ``sha256`` was read (``base_text``: the file then, for the diff); the save is
        recorded as the user ``user_id``."""
        ...

    def preview(self, *, profile: str, config: Config, session_id: str) -> PreviewPage:
        """The occupancy line ``session_id`` would be told under ``config``."""
        ...

    def replay(
        self, *, profile: str, section: str, config: Config, session_id: str, pruner: bool | None
    ) -> ReplayPage:
        """``session_id``'s growth replayed under ``config`` (the row ``section``'s) with
        the pruner on, off, or (``None``) as the profile has it."""
        ...

    def restore(self, *, revision_id: int, which: Which, user_id: int | None) -> RestoreOutcome:
        """Put back the file as it was ``which`` the save ``revision_id``."""
        ...
