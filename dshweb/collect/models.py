"""What collectors keep in the database: each session's fold state
(:mod:`dshweb.collect.checkpoints`), the collectors' leases and the sessions they folded.

The tables keep their first names (``live_…``): the models moved here without touching
data (:mod:`dshweb.collect.migrations`).
"""

from __future__ import annotations

from django.db import models


class FoldCheckpoint(models.Model):
    """One session log's fold state at a byte offset, signed, from one dshweb version."""

    home = models.TextField()
    folder = models.TextField(help_text="The session folder, relative to the home.")
    blob = models.BinaryField()
    saved_at = models.DateTimeField()

    class Meta:
        db_table = "live_foldcheckpoint"
        constraints = (
            models.UniqueConstraint(fields=["home", "folder"], name="one_checkpoint_per_session"),
        )

    def __str__(self) -> str:
        return self.folder


class CollectorLease(models.Model):
    """Which process collects a DSH home (``manage.py dshweb_collect``), and when it was
    last heard from.

    One row per home name, kept after its collector stops (``released_at``), so pages can
    say when the home was last seen. A row is held while it is not released and its
    heartbeat is younger than :data:`~dshweb.live.timing.STALE_AFTER_BEATS` of its own
    ``heartbeat_every``; ``token`` tells the holding process from any other.
    """

    name = models.TextField(unique=True)
    path = models.TextField(help_text="The home's absolute path on its host.")
    host = models.TextField()
    pid = models.IntegerField()
    token = models.CharField(max_length=64)
    started_at = models.DateTimeField()
    heartbeat_at = models.DateTimeField()
    heartbeat_every = models.FloatField(help_text="Seconds between the holder's heartbeats.")
    released_at = models.DateTimeField(null=True, blank=True)
    version = models.BigIntegerField(
        default=0, help_text="Counts the collector's writes; never goes back, across restarts."
    )
    error = models.TextField(blank=True, help_text="Why the home cannot be read, if it cannot.")

    class Meta:
        db_table = "live_collectorlease"
        constraints = (
            # One home per folder of one machine; two machines may each have a ~/.dsh.
            models.UniqueConstraint(fields=["host", "path"], name="one_lease_per_home_folder"),
        )

    def __str__(self) -> str:
        return self.name


class CollectedSession(models.Model):
    """One session of a collected home as its collector last folded it: the snapshot and
    the gauge, sealed (:mod:`dshweb.core.fold.sealed`)."""

    home = models.TextField(help_text="The home's name (CollectorLease.name).")
    session_id = models.TextField()
    version = models.BigIntegerField(help_text="The lease's version when this was written.")
    blob = models.BinaryField()
    updated_at = models.DateTimeField()

    class Meta:
        db_table = "live_collectedsession"
        constraints = (
            models.UniqueConstraint(fields=["home", "session_id"], name="one_row_per_session"),
        )
        # A web worker reads a home's rows written since the version it holds: an index
        # scan of what changed, not of the home.
        indexes = (models.Index(fields=["home", "version"], name="rows_by_version"),)

    def __str__(self) -> str:
        return self.session_id
