"""The alert rule form: a condition, its parameters, a scope, a cooldown and the deliveries.

Only the condition's own parameters are checked (a band rule has no cache window) and
kept; a scope names what it needs (a project folder, or a home and a session); a rule
tells someone at least one way. A webhook must go to a public address or a host staff
allowed (:mod:`dshweb.alerts.webhooks`); mail to the owner's own address or a domain staff
allowed. A user has at most ``WEBHOOK_RULES_PER_USER`` rules with a webhook (staff too):
a rule gets one only below it, checked again under a lock on the owner when it is saved
(:func:`save_rule`), so saves at once cannot pass it together. A person reads every error
next to its field.
"""

from __future__ import annotations

import secrets
from pathlib import PurePosixPath
from typing import Any, ClassVar
from urllib.parse import urlsplit

from django import forms
from django.contrib.auth import get_user_model
from django.db import transaction
from django.forms import BoundField
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from dshweb.alerts.deliveries import mail_allowed
from dshweb.alerts.models import CONDITIONS, AlertRule
from dshweb.alerts.webhooks import SCHEMES, TargetRefused, webhook_target
from dshweb.config import get_config
from dshweb.core.alerts.conditions import ALERT_BANDS, MAX_WINDOW, Condition, ScopeKind
from dshweb.words import BANDS, named, said

MAX_STEPS = 100
MAX_COOLDOWN = 7 * 24 * 3600
MAX_USD = 1_000_000.0
PARAMETERS = {
    Condition.BAND: ("band",),
    Condition.PASS_SOON: ("steps",),
    Condition.CACHE_LOW: ("ratio", "window"),
    Condition.SESSION_COST: ("usd",),
    Condition.DAY_COST: ("usd", "scope_home"),
}
"""The parameters each condition reads; the others have none."""
SCOPE_FIELDS = {
    ScopeKind.FOLDER.value: ("folder",),
    ScopeKind.SESSION.value: ("scope_home", "scope_session"),
}
"""What each scope names (every session: nothing)."""
ALWAYS_SHOWN = (
    "name",
    "enabled",
    "condition",
    "scope",
    "cooldown_seconds",
    "notify_browser",
    "webhook_url",
    "webhook_format",
    "email_to",
)

FIELDS_SEEN = "fields_seen"
"""The form's hidden input naming the condition's and the scope's fields the page showed
(``steps folder``): a rule whose condition or scope uses one it did not show is not
saved (the form comes back showing it), so no value the person did not see is stored."""


SCOPES = {
    ScopeKind.ALL: gettext_lazy("all"),
    ScopeKind.FOLDER: gettext_lazy("in a project folder"),
    ScopeKind.SESSION: gettext_lazy("one session"),
}


def new_secret() -> str:
    return secrets.token_hex(32)


class AlertRuleForm(forms.ModelForm[AlertRule]):
    class Meta:
        model = AlertRule
        fields = (
            "name",
            "enabled",
            "condition",
            "band",
            "steps",
            "ratio",
            "window",
            "usd",
            "scope",
            "folder",
            "scope_home",
            "scope_session",
            "cooldown_seconds",
            "notify_browser",
            "webhook_url",
            "webhook_format",
            "email_to",
        )
        labels: ClassVar[dict[str, Any]] = {
            "name": gettext_lazy("Name"),
            "enabled": gettext_lazy("On"),
            "condition": gettext_lazy("Condition"),
            "band": gettext_lazy("Band"),
            "steps": gettext_lazy("Within N steps"),
            "ratio": gettext_lazy("Cache-hit ratio below"),
            "window": gettext_lazy("Over the last K steps"),
            "usd": gettext_lazy("Cost of at least ($)"),
            "scope": gettext_lazy("Sessions"),
            "folder": gettext_lazy("Project folder"),
            "scope_home": gettext_lazy("Home"),
            "scope_session": gettext_lazy("Session id"),
            "cooldown_seconds": gettext_lazy("Cooldown (seconds)"),
            "notify_browser": gettext_lazy("Browser notification"),
            "webhook_url": gettext_lazy("Webhook URL"),
            "webhook_format": gettext_lazy("Webhook format"),
            "email_to": gettext_lazy("Email to"),
        }
        help_texts: ClassVar[dict[str, Any]] = {
            "steps": gettext_lazy("Fires when the forecast puts the next fold this close."),
            "ratio": gettext_lazy("From 0 to 1: 0.5 is half of the prompt read from the cache."),
            "window": gettext_lazy("How many recent steps the ratio is taken over."),
            "usd": gettext_lazy(
                "In dollars, as the cost page prices it; fires once when the cost reaches it."
            ),
            "scope_home": gettext_lazy(
                "A home's name; for its cost today, empty: each home on its own."
            ),
            "folder": gettext_lazy("A project folder, as DSH records it (/home/me/app)."),
            "cooldown_seconds": gettext_lazy("At most one firing per session in this long."),
            "webhook_url": gettext_lazy(
                "A JSON POST for each firing, signed (X-Dshweb-Signature)."
            ),
        }

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._had_webhook = bool(self.instance.pk and self.instance.webhook_url)
        # Each choice as a person reads it, in the page's language.
        self._choices("condition", [(c.value, CONDITIONS[c]) for c in Condition])
        self._choices("band", [(b.value, named(BANDS, b.value)) for b in ALERT_BANDS])
        self._choices("scope", [(k.value, SCOPES[k]) for k in ScopeKind])
        self._choices("webhook_format", [("json", "JSON"), ("slack", _("Slack-compatible"))])

    def _value(self, name: str) -> str:
        """What the form holds for ``name`` now: as posted, else as asked for, else saved."""
        if self.is_bound:
            return str(self.data.get(name) or "")
        return str(self.initial.get(name) or self.fields[name].initial or "")

    def shown(self) -> list[BoundField]:
        """The fields a person fills in for the chosen condition and scope (a band rule has
        no cache window; a rule on every session names no folder)."""
        used = self.used_fields()
        return [field for field in self if field.name in used]

    def kept(self) -> list[BoundField]:
        """The other fields: sent along unseen, so a change of condition loses nothing."""
        used = self.used_fields()
        return [field for field in self if field.name not in used]

    def fields_seen(self) -> str:
        """What the form's ``FIELDS_SEEN`` input says: the condition's and the scope's
        fields it shows."""
        return " ".join(sorted(self.used_fields() - set(ALWAYS_SHOWN)))

    def ask_fields_at(self, path: str) -> None:
        """A change of condition or scope asks ``path`` for the form again (htmx), from
        the select itself: a request of the form would check it first, and a required
        field still empty (Name) would stop it without a word."""
        for name in ("condition", "scope"):
            self.fields[name].widget.attrs.update({"hx-get": path, "hx-trigger": "change"})

    def used_fields(self) -> set[str]:
        try:
            condition = Condition(self._value("condition"))
        except ValueError:
            condition = Condition.BAND
        used = set(ALWAYS_SHOWN) | set(PARAMETERS.get(condition, ()))
        used |= set(SCOPE_FIELDS.get(self._value("scope"), ()))
        return used

    def _choices(self, name: str, choices: list[tuple[str, Any]]) -> None:
        field = self.fields[name]
        assert isinstance(field, forms.ChoiceField)
        field.choices = choices

    def clean_steps(self) -> int:
        return _within(self.cleaned_data.get("steps"), 1, MAX_STEPS, IN_STEPS)

    def clean_window(self) -> int:
        return _within(self.cleaned_data.get("window"), 1, MAX_WINDOW, IN_STEPS)

    def clean_cooldown_seconds(self) -> int:
        return _within(self.cleaned_data.get("cooldown_seconds"), 0, MAX_COOLDOWN, IN_SECONDS)

    def clean_usd(self) -> float:
        usd = self.cleaned_data.get("usd")
        if usd is None or not 0 < usd <= MAX_USD:
            raise forms.ValidationError(
                _("An amount in dollars above 0 and at most %(most)s (10 is $10).")
                % {"most": f"{MAX_USD:,.0f}"}
            )
        return float(usd)

    def clean_ratio(self) -> float:
        ratio = self.cleaned_data.get("ratio")
        if ratio is None or not 0 < ratio <= 1:
            raise forms.ValidationError(_("A ratio above 0 and at most 1 (0.5 is half)."))
        return float(ratio)

    def clean_webhook_url(self) -> str:
        url = str(self.cleaned_data.get("webhook_url") or "").strip()
        if url and urlsplit(url).scheme.lower() in SCHEMES:  # else the URL's own error
            try:
                webhook_target(url, get_config().webhook_allowed_hosts)
            except TargetRefused as refused:
                raise forms.ValidationError(
                    _("Not a webhook dshweb posts to: %(reason)s.") % {"reason": said(str(refused))}
                ) from None
        if url and (full := self.webhook_rules_full()) is not None:
            raise forms.ValidationError(full)
        return url

    def webhook_rules_full(self) -> str | None:
        """Why this rule may not get a webhook (its owner has as many rules with one as
        anyone may), or None. A rule that has one keeps it (saved before a lower cap)."""
        if self._had_webhook:
            return None
        most = get_config().webhook_rules_per_user
        if most == 0:
            return _("This server sends no webhooks: staff allow none.")
        others = AlertRule.objects.filter(owner_id=self.instance.owner_id).exclude(webhook_url="")
        if self.instance.pk:
            others = others.exclude(pk=self.instance.pk)
        if (count := others.count()) < most:
            return None
        return _(
            "Your rules with a webhook: %(count)s, the most one person may have (%(most)s)."
            " Take the webhook off one of them, or delete one, first."
        ) % {"count": count, "most": most}

    def clean_email_to(self) -> str:
        address = str(self.cleaned_data.get("email_to") or "").strip()
        owner = self.instance.owner.email if self.instance.owner_id else ""
        if address and not mail_allowed(address, owner):
            domains = ", ".join(sorted(get_config().mail_allowed_domains)) or _("none")
            raise forms.ValidationError(
                _("Your own address (%(owner)s), or one in a domain staff allowed (%(domains)s).")
                % {"owner": owner or _("none set in your account"), "domains": domains}
            )
        return address

    def clean_folder(self) -> str:
        folder = str(self.cleaned_data.get("folder") or "").strip()
        if folder and not PurePosixPath(folder).is_absolute():
            raise forms.ValidationError(_("An absolute path, as DSH records it (/home/me/app)."))
        return folder

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        condition = data.get("condition")
        if condition:
            kept = set(PARAMETERS.get(Condition(condition), ()))
            for name in ("band", "steps", "ratio", "window", "usd"):
                if name not in kept and name in self.errors:
                    # Not this condition's: the saved value stays, the error is not its.
                    del self.errors[name]
                    data[name] = getattr(self.instance, name)
        seen = self.data.get(FIELDS_SEEN)
        if seen is not None and not self.used_fields() - set(ALWAYS_SHOWN) <= set(seen.split()):
            self.add_error(
                None,
                _(
                    "The condition or the sessions changed: the form now shows the fields"
                    " they use. Check them, then save."
                ),
            )
        scope = data.get("scope")
        if condition == Condition.DAY_COST and scope != ScopeKind.ALL:
            self.add_error(
                "scope",
                _(
                    "A home's cost today is that of all its sessions:"
                    " choose all (and a home below)."
                ),
            )
        if scope == ScopeKind.FOLDER and not data.get("folder"):
            self.add_error("folder", _("Name the project folder this rule watches."))
        if scope == ScopeKind.SESSION:
            for name in ("scope_home", "scope_session"):
                if not str(data.get(name) or "").strip():
                    self.add_error(name, _("Name the session this rule watches (home and id)."))
        if not (data.get("notify_browser") or data.get("webhook_url") or data.get("email_to")):
            raise forms.ValidationError(
                _("Choose at least one way to be told: browser, webhook or email.")
            )
        return data

    def save(self, commit: bool = True) -> AlertRule:
        rule = super().save(commit=False)
        if not rule.webhook_secret:
            rule.webhook_secret = new_secret()
        if commit:
            rule.save()
        return rule


def save_rule(form: AlertRuleForm) -> AlertRule | None:
    """Save the valid ``form``'s rule, its owner locked meanwhile, so the cap on rules
    with a webhook holds against saves at once; None (the error on the form) when another
    save filled it since the form was checked."""
    with transaction.atomic():
        owner = get_user_model().objects.select_for_update().filter(pk=form.instance.owner_id)
        list(owner.values_list("pk", flat=True))
        if form.cleaned_data.get("webhook_url") and (full := form.webhook_rules_full()):
            form.add_error("webhook_url", full)
            return None
        return form.save()


IN_STEPS = gettext_lazy("From %(low)s to %(high)s steps.")
IN_SECONDS = gettext_lazy("From %(low)s to %(high)s seconds.")


def _within(value: int | None, low: int, high: int, bounds: Any) -> int:
    """``value`` if it is from ``low`` to ``high``; else ``bounds``, the refusal that says so."""
    if value is None or not low <= value <= high:
        raise forms.ValidationError(str(bounds) % {"low": low, "high": f"{high:,}"})
    return value
