"""Telling people an alert fired: a browser notification, a webhook, an email; each retried.

A firing (:class:`~dshweb.alerts.models.AlertFiring`) gets one
:class:`~dshweb.alerts.models.AlertDelivery` per way its rule asks for. :func:`attempt`
tries one: a browser notification is a message to the rule owner's group on the channel
layer (every page of theirs with a socket shows it, as a system notification when the
browser allows them, see ``dshweb/site/static/dshweb/live.js``); a webhook is a JSON POST of
:func:`firing_payload` (or, in the Slack-compatible format, ``{"text": …}``) signed with
the rule's secret (:func:`signature`); an email goes through Django's mail system. An
attempt that fails is tried again :data:`~dshweb.live.timing.ALERT_RETRY_FIRST` seconds
later, then twice as long each time; after :data:`~dshweb.live.timing.ALERT_ATTEMPTS` the
delivery is *failed*, with its last error in words a person reads (``could not deliver
(HTTP 5xx)``, ``could not deliver (timeout)``: the class of what went wrong, never the
receiver's words). Anything an attempt raises is that delivery's recorded failure: one
broken receiver, mail server or title never stops the others.

An attempt claims its delivery first (:func:`_claimed`: its next attempt moved
:data:`~dshweb.live.timing.ALERT_CLAIM` seconds ahead, and the process named), so two
watchers never send it at once. A webhook or email attempt still running when its
process is asked to stop is waited for for the stop's grace, then recorded as
interrupted (:func:`record_interrupted`: due again at once, not counted as an attempt);
no attempt starts once the stop is asked (:mod:`dshweb.live.stopping`). A claim whose
process is gone (a kill, a crash) is let go when the next watcher of the home starts
(:func:`release_dead_claims`), so the delivery is tried at once rather than after the
claim. The receiver may then hear twice of a firing whose first attempt reached it but
whose answer never came back: a delivery is told at least once. Where a webhook may go and
its one deadline are :mod:`dshweb.alerts.webhooks`'; mail goes to its rule owner's own
address or to a domain staff allowed (``DSHWEB_MAIL_ALLOWED_DOMAINS``).

The webhook's signature header, ``X-Dshweb-Signature: t=<unix seconds>,v1=<hex>``, is
HMAC-SHA256 with the rule's secret over ``"<t>." + body``; a receiver recomputes it and
refuses an old ``t`` (a replayed request).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import time
from collections.abc import Collection
from dataclasses import dataclass
from datetime import timedelta
from typing import Any
from urllib.parse import quote

from django.core.mail import send_mail
from django.db import transaction
from django.db.models import F, Window
from django.db.models.functions import RowNumber
from django.utils import timezone
from django.utils.translation import gettext as _

from dshweb.alerts.models import AlertDelivery, AlertFiring, AlertRule
from dshweb.alerts.webhooks import PostFailed, TargetRefused, post, target_key, webhook_target
from dshweb.alerts.words import in_language
from dshweb.collect.owners import owner_alive, process_owner
from dshweb.config import get_config
from dshweb.core.log.jsjson import printable
from dshweb.core.said import say
from dshweb.live import timing
from dshweb.live.protocol import AlertFired, alerts_group, sent
from dshweb.live.stopping import in_flight, stop_asked

log = logging.getLogger(__name__)

SIGNATURE_HEADER = "X-Dshweb-Signature"
USER_AGENT = "dshweb-alerts/1"


class DeliveryError(Exception):
    """An attempt failed; the message says why, to a person."""


@dataclass(frozen=True, slots=True)
class BrowserMessage:
    """What the watcher sends on the channel layer for a browser delivery."""

    group: str
    message: dict[str, Any]


def session_url(home: str, session_id: str) -> str:
    """The session's page: ``PUBLIC_URL`` + its path (the path alone without one); for a
    firing of the home (no session: its cost today), the cost page."""
    if not session_id:
        return get_config().public_url + "/cost/"
    path = f"/homes/{quote(home, safe='')}/sessions/{quote(session_id, safe='')}/"
    return get_config().public_url + path


def firing_payload(firing: AlertFiring) -> dict[str, Any]:
    """The webhook's JSON body (and the browser's message): what fired, where, when."""
    rule = firing.rule
    return {
        "id": firing.pk,
        "rule": {"id": rule.pk, "name": rule.name, "condition": rule.condition},
        "home": firing.home,
        "session": firing.session_id,
        "title": firing.title,
        "summary": firing.summary,
        "key": firing.key,
        "firedAt": firing.fired_at.isoformat(),
        "url": session_url(firing.home, firing.session_id),
    }


def headline(firing: AlertFiring) -> str:
    """One line: the rule and the session, or the home for a firing of the home (a title's
    line breaks made spaces: it is also an email's subject)."""
    what = firing.title or firing.session_id or firing.home
    return " ".join(f"{firing.rule.name}: {what}".split())


def signature(secret: str, timestamp: int, body: bytes) -> str:
    mac = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256)
    return f"t={timestamp},v1={mac.hexdigest()}"


def webhook_body(rule: AlertRule, firing: AlertFiring) -> bytes:
    if rule.webhook_format == AlertRule.WebhookFormat.SLACK:
        url = session_url(firing.home, firing.session_id)
        with in_language(rule.language):
            link = _("Open the session") if firing.session_id else _("Open the cost page")
        text = f"*{headline(firing)}*\n{firing.summary}\n<{url}|{link}>"
        return json.dumps({"text": text}).encode()
    return json.dumps(firing_payload(firing)).encode()


def send_webhook(rule: AlertRule, firing: AlertFiring) -> None:
    body = webhook_body(rule, firing)
    headers = {
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
        SIGNATURE_HEADER: signature(rule.webhook_secret, int(time.time()), body),
    }
    try:
        target = webhook_target(rule.webhook_url, get_config().webhook_allowed_hosts)
        post(target, body, headers, timeout=timing.ALERT_TIMEOUT)
    except (TargetRefused, PostFailed) as error:
        raise DeliveryError(say("delivery-failed", problem=error)) from error


def mail_allowed(address: str, owner_email: str) -> bool:
    """Whether a rule whose owner's address is ``owner_email`` may mail ``address``."""
    address = address.strip().lower()
    if address and address == owner_email.strip().lower():
        return True
    domain = address.rpartition("@")[2]
    return bool(domain) and domain in get_config().mail_allowed_domains


def send_email(rule: AlertRule, firing: AlertFiring) -> None:
    if not mail_allowed(rule.email_to, rule.owner.email):
        raise DeliveryError(say("delivery-not-allowed"))
    with in_language(rule.language):
        body = "\n\n".join(
            [
                firing.summary,
                (_("Session: %(url)s") if firing.session_id else _("Cost: %(url)s"))
                % {"url": session_url(firing.home, firing.session_id)},
                _("Rule: %(name)s (%(condition)s)")
                % {"name": rule.name, "condition": rule.condition_name()},
            ]
        )
    try:
        send_mail(f"[dshweb] {headline(firing)}", body, None, [rule.email_to])
    except Exception as error:
        log.warning("alert mail to %s not taken: %s", rule.email_to, error)
        raise DeliveryError(say("delivery-mail-refused")) from error


def browser_message(firing: AlertFiring) -> BrowserMessage:
    payload = AlertFired(
        type="alert.fired", headline=headline(firing), alert=firing_payload(firing)
    )
    return BrowserMessage(alerts_group(firing.rule.owner_id), sent(payload))


def attempt(delivery_id: int) -> BrowserMessage | None:
    """Try webhook or email delivery ``delivery_id`` once, claimed first, and record how it
    went; for a browser delivery, the message to send (then :func:`browser_sent`)."""
    delivery = (
        AlertDelivery.objects.select_related("firing__rule__owner").filter(pk=delivery_id).first()
    )
    if delivery is None or stop_asked() or not _claimed(delivery):
        return None  # deleted with its rule meanwhile, done, another watcher's, or stopping
    firing = delivery.firing
    if delivery.channel == AlertDelivery.Channel.BROWSER:
        return browser_message(firing)
    what = f"alert delivery {delivery_id} ({delivery.channel})"
    with in_flight(what, lambda: record_interrupted(delivery_id)):
        try:
            if delivery.channel == AlertDelivery.Channel.WEBHOOK:
                send_webhook(firing.rule, firing)
            else:
                send_email(firing.rule, firing)
        except DeliveryError as error:
            record_failure(delivery, str(error))
        except Exception as error:  # a bug or a surprise: this delivery's failure only
            log.exception("alert delivery %s failed unexpectedly", delivery_id)
            record_failure(delivery, say("delivery-unexpected", error=type(error).__name__))
        else:
            record_sent(delivery)
    return None


def _claimed(delivery: AlertDelivery) -> bool:
    """Claim a pending delivery for this attempt (one conditional update: of two watchers
    trying it at once, one sends)."""
    if delivery.state != AlertDelivery.State.PENDING:
        return False
    claimed_until = timezone.now() + timedelta(seconds=timing.ALERT_CLAIM)
    owner = process_owner()
    claimed = AlertDelivery.objects.filter(
        pk=delivery.pk,
        state=AlertDelivery.State.PENDING,
        attempts=delivery.attempts,
        next_attempt_at=delivery.next_attempt_at,
    ).update(next_attempt_at=claimed_until, claimed_by=owner)
    delivery.next_attempt_at, delivery.claimed_by = claimed_until, owner
    return claimed == 1


def record_interrupted(delivery_id: int) -> bool:
    """A stop of this process cut its attempt at ``delivery_id`` short: due again at once,
    its claim let go, the attempt not counted (unless the attempt ended meanwhile);
    whether it was recorded."""
    return bool(
        AlertDelivery.objects.filter(
            pk=delivery_id, state=AlertDelivery.State.PENDING, claimed_by=process_owner()
        ).update(next_attempt_at=timezone.now(), claimed_by="")
    )


def release_dead_claims(home: str) -> int:
    """Make due at once the pending deliveries of ``home`` claimed by a process that is
    gone (killed or crashed during an attempt), which would otherwise wait out their
    claim; how many. A claim of a live process, or of one on another machine (nothing
    here can tell), is left to run out."""
    claimed = (
        AlertDelivery.objects.filter(state=AlertDelivery.State.PENDING, firing__home=home)
        .exclude(claimed_by="")
        .values_list("pk", "claimed_by")
    )
    dead: dict[str, list[int]] = {}
    for pk, owner in claimed:
        if not owner_alive(owner):
            dead.setdefault(owner, []).append(pk)
    now = timezone.now()
    return sum(
        AlertDelivery.objects.filter(
            pk__in=pks, state=AlertDelivery.State.PENDING, claimed_by=owner
        ).update(next_attempt_at=now, claimed_by="")
        for owner, pks in dead.items()
    )


def browser_sent(delivery_id: int, error: BaseException | None) -> None:
    delivery = AlertDelivery.objects.filter(pk=delivery_id).first()
    if delivery is None:
        return
    if error is None:
        record_sent(delivery)
    else:
        record_failure(delivery, say("delivery-channel", error=error))


def record_sent(delivery: AlertDelivery) -> None:
    delivery.attempts += 1
    delivery.state, delivery.sent_at = AlertDelivery.State.SENT, timezone.now()
    delivery.next_attempt_at, delivery.last_error, delivery.claimed_by = None, "", ""
    fields = ["attempts", "state", "sent_at", "next_attempt_at", "last_error", "claimed_by"]
    delivery.save(update_fields=fields)


def record_failure(delivery: AlertDelivery, error: str) -> None:
    """Count a failed attempt at ``delivery`` and say when to try again, while the attempt
    still holds its claim: one that a stop cut short, and that was recorded as interrupted
    meanwhile (:func:`record_interrupted`: its claim let go), failed only because the
    process was going, and is not counted."""
    attempts = delivery.attempts + 1
    state, next_attempt_at = AlertDelivery.State.PENDING, None
    if attempts >= timing.ALERT_ATTEMPTS:
        state = AlertDelivery.State.FAILED
    else:
        wait = timing.ALERT_RETRY_FIRST * 2 ** (attempts - 1)
        next_attempt_at = timezone.now() + timedelta(seconds=wait)
    counted = AlertDelivery.objects.filter(
        pk=delivery.pk, state=AlertDelivery.State.PENDING, claimed_by=delivery.claimed_by
    ).update(
        attempts=attempts,
        last_error=error,
        state=state,
        next_attempt_at=next_attempt_at,
        claimed_by="",
    )
    if counted:
        delivery.attempts, delivery.last_error, delivery.claimed_by = attempts, error, ""
        delivery.state, delivery.next_attempt_at = state, next_attempt_at


@dataclass(frozen=True, slots=True)
class Due:
    """A delivery due now: its way of telling, whose it is and where it goes."""

    delivery_id: int
    channel: str
    owner: int
    target: str
    """A webhook's ``host:port`` (:func:`~dshweb.alerts.webhooks.target_key`); else empty."""


def due_deliveries(
    home: str, *, leaving_out: Collection[int] = (), per_owner: int | None = None
) -> tuple[list[Due], float | None]:
    """The pending deliveries of ``home``'s firings due now, oldest first (but those in
    ``leaving_out``: attempts under way), at most each owner's oldest ``per_owner`` per
    way of telling (:data:`~dshweb.live.timing.DUE_LOOKED_AT`): one owner's thousands
    hide no one else's; and in how many seconds the next one not due yet is (``None``:
    none)."""
    now = timezone.now()
    pending = AlertDelivery.objects.filter(state=AlertDelivery.State.PENDING, firing__home=home)
    oldest_first = (F("next_attempt_at").asc(), F("id").asc())
    in_turn = Window(
        RowNumber(),
        partition_by=[F("channel"), F("firing__rule__owner_id")],
        order_by=oldest_first,
    )
    rows = (
        pending.filter(next_attempt_at__lte=now)
        .exclude(pk__in=list(leaving_out))
        .annotate(turn=in_turn)
        .filter(turn__lte=timing.DUE_LOOKED_AT if per_owner is None else per_owner)
        .order_by(*oldest_first)
        .values_list("pk", "channel", "firing__rule__owner_id", "firing__rule__webhook_url")
    )
    due = [
        Due(pk, channel, owner, target_key(url) if channel == AlertDelivery.Channel.WEBHOOK else "")
        for pk, channel, owner, url in rows
    ]
    later = pending.filter(next_attempt_at__gt=now).order_by("next_attempt_at").first()
    wait = (
        None
        if later is None or later.next_attempt_at is None
        else ((later.next_attempt_at - now).total_seconds())
    )
    return due, wait


def channels_of(rule: AlertRule) -> list[str]:
    channels: list[str] = []
    if rule.notify_browser:
        channels.append(AlertDelivery.Channel.BROWSER)
    if rule.webhook_url:
        channels.append(AlertDelivery.Channel.WEBHOOK)
    if rule.email_to:
        channels.append(AlertDelivery.Channel.EMAIL)
    return channels


@transaction.atomic
def record_firing(
    rule: AlertRule, *, home: str, session_id: str, title: str, key: str, summary: str
) -> AlertFiring:
    """A firing and one delivery per way its rule tells, due now."""
    now = timezone.now()
    firing = AlertFiring.objects.create(  # texts from a log: storable in any database
        rule=rule,
        home=home,
        session_id=printable(session_id),
        title=printable(title),
        key=printable(key),
        summary=printable(summary),
        fired_at=now,
    )
    AlertDelivery.objects.bulk_create(
        AlertDelivery(firing=firing, channel=channel, next_attempt_at=now)
        for channel in channels_of(rule)
    )
    return firing
