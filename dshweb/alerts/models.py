"""The alert rules, with their firings and deliveries (:mod:`dshweb.alerts.watcher`).

The tables keep their first names (``live_…``): the models moved here without touching
data (:mod:`dshweb.alerts.migrations`).
"""

from __future__ import annotations

from django.conf import settings
from django.core.validators import URLValidator
from django.db import models
from django.utils.translation import gettext_lazy

from dshweb.core.alerts.conditions import ALERT_BANDS, Condition, RuleSpec, Scope, ScopeKind
from dshweb.core.fold.cost import usd_text
from dshweb.core.fold.gauge import Band

CONDITIONS = {
    Condition.BAND: gettext_lazy("band reaches"),
    Condition.PASS_SOON: gettext_lazy("fold expected within N steps"),
    Condition.COMPACTED: gettext_lazy("a fold happened"),
    Condition.COMPACTION_FAILED: gettext_lazy("a fold or its summary failed"),
    Condition.OVERFLOW: gettext_lazy("overflow recovery"),
    Condition.CACHE_LOW: gettext_lazy("cache-hit ratio below X over the last K steps"),
    Condition.READER_ERROR: gettext_lazy("the log cannot be read"),
    Condition.SESSION_COST: gettext_lazy("a session's cost reaches $X"),
    Condition.DAY_COST: gettext_lazy("a home's cost today reaches $X"),
}
"""Each condition as a person reads it (the core's labels, translated)."""


class AlertRule(models.Model):
    """One user's alert rule: a condition on sessions in a scope, and where to say it fired
    (:mod:`dshweb.core.alerts` reads the condition; :mod:`dshweb.alerts.watcher` runs it)."""

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
    usd = models.FloatField(default=10.0, help_text="A cost of $X or more (dollars).")
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
    language = models.CharField(
        max_length=16,
        blank=True,
        help_text="The language its owner saved it in: its alerts' words (empty: the default).",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "live_alertrule"
        ordering = ("name", "id")

    def __str__(self) -> str:
        return self.name

    def condition_name(self) -> str:
        """The condition as a person reads it, in the active language."""
        return str(CONDITIONS.get(Condition(self.condition), self.condition))

    def usd_text(self) -> str:
        """The amount a cost rule watches for, as every page writes dollars."""
        return usd_text(self.usd)

    def spec(self) -> RuleSpec:
        return RuleSpec(
            condition=Condition(self.condition),
            band=Band(self.band),
            steps=self.steps,
            ratio=self.ratio,
            window=self.window,
            usd=self.usd,
            scope=Scope(ScopeKind(self.scope), self.folder, self.scope_home, self.scope_session),
        )


class AlertFiring(models.Model):
    """A rule's condition came to hold (or happened) for one session: recorded once per
    condition (:mod:`dshweb.core.alerts.firing`), with its deliveries."""

    rule = models.ForeignKey(AlertRule, on_delete=models.CASCADE, related_name="firings")
    home = models.TextField()
    session_id = models.TextField(help_text="Empty: the firing is the home's (its cost today).")
    title = models.TextField(blank=True, help_text="The session's title then.")
    key = models.CharField(max_length=40, help_text='"on" (a level) or the event\'s seq.')
    summary = models.TextField()
    fired_at = models.DateTimeField()
    cleared_at = models.DateTimeField(
        null=True, blank=True, help_text="When a level stopped holding."
    )

    class Meta:
        db_table = "live_alertfiring"
        ordering = ("-fired_at", "-id")
        indexes = (models.Index(fields=("rule", "home", "session_id", "-fired_at")),)

    def __str__(self) -> str:
        return f"{self.rule} {self.home}/{self.session_id} {self.fired_at:%Y-%m-%d %H:%M:%S}"


class AlertDelivery(models.Model):
    """One way a firing is told (browser, webhook, email): its attempts and last error."""

    class Channel(models.TextChoices):
        BROWSER = "browser", gettext_lazy("Browser")
        WEBHOOK = "webhook", gettext_lazy("Webhook")
        EMAIL = "email", gettext_lazy("Email")

    class State(models.TextChoices):
        PENDING = "pending", gettext_lazy("Pending")
        SENT = "sent", gettext_lazy("Sent")
        FAILED = "failed", gettext_lazy("Failed")

    firing = models.ForeignKey(AlertFiring, on_delete=models.CASCADE, related_name="deliveries")
    channel = models.CharField(max_length=10, choices=Channel.choices)
    state = models.CharField(max_length=10, choices=State.choices, default=State.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(blank=True)
    sent_at = models.DateTimeField(null=True, blank=True)
    claimed_by = models.CharField(
        max_length=200,
        blank=True,
        help_text="The dshweb process whose attempt claimed it (host:pid:token); a claim "
        "its process left behind is let go when the next watcher of its home starts.",
    )

    class Meta:
        db_table = "live_alertdelivery"
        ordering = ("id",)
        indexes = (models.Index(fields=("state", "next_attempt_at")),)

    def __str__(self) -> str:
        return f"{self.channel} {self.state}"
