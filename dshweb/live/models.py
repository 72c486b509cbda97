"""What the hub keeps between runs: each session's fold state (:mod:`dshweb.live.checkpoints`)."""

from __future__ import annotations

from django.db import models


class FoldCheckpoint(models.Model):
    """One session log's fold state at a byte offset, signed, from one dshweb version."""

    home = models.TextField()
    folder = models.TextField(help_text="The session folder, relative to the home.")
    blob = models.BinaryField()
    saved_at = models.DateTimeField()

    class Meta:
        constraints = (
            models.UniqueConstraint(fields=["home", "folder"], name="one_checkpoint_per_session"),
        )

    def __str__(self) -> str:
        return self.folder
