"""What the live layer keeps in the database: each session's fold state
(:mod:`dshweb.live.checkpoints`), the collectors' leases and what they folded, and the
alert rules with their firings and deliveries (:mod:`dshweb.live.alerts`)."""

from __future__ import annotations

from django.conf import settings
from django.core.validators import URLValidator
from django.db import models

from dshweb.core.alerts.conditions import ALERT_BANDS, Condition, RuleSpec, Scope, ScopeKind
from dshweb.core.fold.gauge import Band


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
        constraints = (
            models.UniqueConstraint(fields=["home", "session_id"], name="one_row_per_session"),
        )
        # A web worker reads a home's rows written since the version it holds: an index
        # scan of what changed, not of the home.
        indexes = (models.Index(fields=["home", "version"], name="rows_by_version"),)

    def __str__(self) -> str:
        return self.session_id


class AlertRule(models.Model):
    """One user's alert rule: a condition on sessions in a scope, and where to say it fired
    (:mod:`dshweb.core.alerts` reads the condition; :mod:`dshweb.live.alerts` runs it)."""

    class WebhookFormat(models.TextChoices):
        JSON = "json", "JSON"
        SLACK = "slack", "Slack-compatible"

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="alert_rules"
    )
    name = models.CharField(max_length=100)
    enabled = models.BooleanField(default=True)
    condition = models.CharField(max_length=20, choices=[(c.value, c.label) for c in Condition])
    band = models.CharField(
        max_length=10, default=Band.TIGHT.value, choices=[(b.value, b.value) for b in ALERT_BANDS]
    )
    steps = models.PositiveIntegerField(default=3, help_text="Fold expected within N steps.")
    ratio = models.FloatField(default=0.5, help_text="Cache-hit ratio below X (0 to 1).")
    window = models.PositiveIntegerField(default=10, help_text="Over the last K steps.")
    scope = models.CharField(
        max_length=10, default=ScopeKind.ALL.value, choices=[(k.value, k.value) for k in ScopeKind]
    )
    folder = models.CharField(max_length=500, blank=True, help_text="A project folder.")
    scope_home = models.CharField(max_length=64, blank=True)
    scope_session = models.CharField(max_length=500, blank=True)
    cooldown_seconds = models.PositiveIntegerField(default=600)
    notify_browser = models.BooleanField(default=True)
    # Not a URLField: its form field warns of Django 6's https default on every form.
    webhook_url = models.CharField(
        max_length=500, blank=True, validators=[URLValidator(schemes=["http", "https"])]
    )
    webhook_format = models.CharField(
        max_length=10, choices=WebhookFormat.choices, default=WebhookFormat.JSON
    )
    webhook_secret = models.CharField(
        max_length=64, help_text="Signs each webhook body (HMAC-SHA256); shown once."
    )
    email_to = models.EmailField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ("name", "id")

    def __str__(self) -> str:
        return self.name

    def spec(self) -> RuleSpec:
        return RuleSpec(
            condition=Condition(self.condition),
            band=Band(self.band),
            steps=self.steps,
            ratio=self.ratio,
            window=self.window,
            scope=Scope(ScopeKind(self.scope), self.folder, self.scope_home, self.scope_session),
        )


class AlertFiring(models.Model):
    """A rule's condition came to hold (or happened) for one session: recorded once per
    condition (:mod:`dshweb.core.alerts.firing`), with its deliveries."""

    rule = models.ForeignKey(AlertRule, on_delete=models.CASCADE, related_name="firings")
    home = models.TextField()
    session_id = models.TextField()
    title = models.TextField(blank=True, help_text="The session's title then.")
    key = models.CharField(max_length=40, help_text='"on" (a level) or the event\'s seq.')
    summary = models.TextField()
    fired_at = models.DateTimeField()
    cleared_at = models.DateTimeField(
        null=True, blank=True, help_text="When a level stopped holding."
    )

    class Meta:
        ordering = ("-fired_at", "-id")
        indexes = (models.Index(fields=("rule", "home", "session_id", "-fired_at")),)

    def __str__(self) -> str:
        return f"{self.rule} {self.home}/{self.session_id} {self.fired_at:%Y-%m-%d %H:%M:%S}"


class AlertDelivery(models.Model):
    """One way a firing is told (browser, webhook, email): its attempts and last error."""

    class Channel(models.TextChoices):
        BROWSER = "browser"
        WEBHOOK = "webhook"
        EMAIL = "email"

    class State(models.TextChoices):
        PENDING = "pending"
        SENT = "sent"
        FAILED = "failed"

    firing = models.ForeignKey(AlertFiring, on_delete=models.CASCADE, related_name="deliveries")
    channel = models.CharField(max_length=10, choices=Channel.choices)
    state = models.CharField(max_length=10, choices=State.choices, default=State.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(blank=True)
    sent_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ("id",)
        indexes = (models.Index(fields=("state", "next_attempt_at")),)

    def __str__(self) -> str:
        return f"{self.channel} {self.state}"
