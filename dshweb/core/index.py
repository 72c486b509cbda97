"""A whole DSH home followed at once: one :class:`SessionTracker` per session log.

``refresh()`` rescans the session folders (new sessions, new generations, deletions),
folds what each log gained and returns the ids of the sessions that changed. One bad
session never stops the others: its error is kept on its own snapshot.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from dshweb.core.compaction import EngineConfig
from dshweb.core.errors import DshError
from dshweb.core.home import check_home, is_live, locked_files, session_logs
from dshweb.core.profiles import engine_config
from dshweb.core.session import SessionSnapshot, SessionTracker, take_snapshot

DEFAULT_PROFILE = "sdk"


@dataclass(slots=True)
class HomeIndex:
    home: Path
    profile: str = DEFAULT_PROFILE
    stop_after_seq: int | None = None
    extra_patches: tuple[Path, ...] = ()
    trackers: dict[Path, SessionTracker] = field(default_factory=dict)
    engine: EngineConfig = field(default_factory=EngineConfig)
    profile_error: str | None = None

    def refresh(self) -> set[Path]:
        """Rescan and fold; the session folders whose state changed."""
        check_home(self.home)
        self._load_engine()
        changed: set[Path] = set()
        seen: set[Path] = set()
        for log in session_logs(self.home):
            folder = log.session_dir
            seen.add(folder)
            tracker = self.trackers.get(folder)
            if tracker is None or tracker.log != log:
                tracker = SessionTracker(log, stop_after_seq=self.stop_after_seq)
                self.trackers[folder] = tracker
            if tracker.refresh():
                changed.add(folder)
        for gone in set(self.trackers) - seen:
            del self.trackers[gone]
            changed.add(gone)
        return changed

    def _load_engine(self) -> None:
        try:
            self.engine = EngineConfig.from_config(
                engine_config(self.home, self.profile, self.extra_patches)
            )
            self.profile_error = None
        except (DshError, ValueError, TypeError) as error:
            self.engine = EngineConfig()
            self.profile_error = f"compaction settings ignored: {error}"

    def snapshots(self) -> list[SessionSnapshot]:
        held = locked_files()
        shots = [
            take_snapshot(
                tracker,
                home=self.home,
                live=is_live(folder, held),
                engine=self.engine,
                extra_errors=(self.profile_error,) if self.profile_error else (),
            )
            for folder, tracker in self.trackers.items()
        ]
        return sorted(shots, key=lambda s: (-(s.last_time or 0), s.session_id))
