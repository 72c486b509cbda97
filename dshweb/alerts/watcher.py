"""The alert watcher: every rule against every session that changed, and the deliveries.

One watcher runs beside each hub that folds (the embedded process's, a collector's), on
the publisher's event loop, and follows the same :class:`~dshweb.live.publisher.ChangeSource`:
what it reads is the session's snapshot and gauge the hub just published, so a rule costs
a few comparisons per changed session, never a read of the home. For each changed session
in a rule's scope it takes the condition's reading (:mod:`dshweb.core.alerts.conditions`)
and decides (:mod:`dshweb.core.alerts.firing`) whether the rule fires; a firing is written
with one delivery per way the rule tells (:mod:`dshweb.alerts.deliveries`), which it then
tries, and tries again with back-off while they fail. Attempts run in daemon threads of
their own, each within its own deadline, never in the round, in three lanes that share
no slot (:func:`lane_limits`: browser notices, emails, webhooks), each taking due attempts in
fair turns (:mod:`dshweb.core.alerts.lanes`): at most a few of one owner's at once and a
few to one receiver. A receiver that is slow, trickles or breaks holds up no evaluation,
no browser notice nor email, and no other user's webhook; an attempt waiting for its
turn stays due in the database, and is not counted as failed. Once the process is asked
to stop, no attempt starts (what is due stays due for the next start); the attempts
under way get the stop's grace, then are recorded as interrupted, due again at once
(:mod:`dshweb.live.stopping`; each runs in a daemon thread, which no stop waits for
past the grace). When a watcher starts, the claims of attempts whose process is gone (a
kill, a crash) are let go, so those deliveries are tried at once.

A rule on a home's cost today (:attr:`~dshweb.core.alerts.conditions.Condition.is_home`)
is looked at once per round in which some session of the home changed, against the
home's spend as its sessions list keeps it (:attr:`HomeView.home_tree
<dshweb.live.hub.HomeView.home_tree>`: what changed, not the home, is summed again), with
the server's rates and time zone; its firings name the home and no session.

An event rule fires once per fold (:func:`~dshweb.core.alerts.firing.decide_events`):
every fold past the last one told, oldest first, each written as its own firing before
the next is decided. What each rule last fired for, per session, is taken back from the
firings in the database when the rule is first seen (or its condition changed), so a
restart does not fire again for a band still held or a fold already told: an event
rule's is the highest fold seq it fired for, and the folds past it fire. Rules are read
again at most every :data:`~dshweb.live.timing.ALERT_RULES_EVERY` seconds when any was
added, changed or removed. While the database cannot be reached, the watcher says so
once and keeps the sessions that changed for when it is back (their newest state is what
it reads then).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import ParamSpec, TypeVar

from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer
from django.db import close_old_connections, connections
from django.db.models import Count, Max
from django.db.utils import IntegrityError, InterfaceError, OperationalError
from django.utils import timezone

from dshweb.alerts import deliveries
from dshweb.alerts.models import AlertDelivery, AlertFiring, AlertRule
from dshweb.alerts.words import summary_in
from dshweb.config import get_config
from dshweb.core.alerts.conditions import (
    Condition,
    Reading,
    RuleSpec,
    condition_reading,
    day_cost_reading,
    event_readings,
)
from dshweb.core.alerts.firing import (
    Armed,
    Decision,
    compaction_seq,
    decide,
    decide_events,
    told_through,
)
from dshweb.core.alerts.lanes import Attempt, Lane, LaneLimits
from dshweb.core.listing.spend import day_amount, local_date
from dshweb.live import timing
from dshweb.live.hub import ChangeSource, HomeChange, HomeView, SessionView
from dshweb.live.hubtask import HubTask, next_within
from dshweb.live.outage import Outage
from dshweb.live.stopping import stop_asked

log = logging.getLogger(__name__)

P = ParamSpec("P")
T = TypeVar("T")
ArmedKey = tuple[int, str]
"""(rule id, session id): the watcher follows one home; a home rule's session id is
:data:`HOME`."""
HOME = ""
"""The session id of a firing that is the home's (its cost today)."""


@dataclass(frozen=True, slots=True)
class _Rule:
    row: AlertRule
    spec: RuleSpec
    since_ms: int


class AlertWatcher:
    def __init__(self, source: ChangeSource, home: str) -> None:
        self.source = source
        self.home = home
        self._changes: asyncio.Queue[HomeChange | None] = asyncio.Queue()
        """Changes of the home; None when a delivery ended (look for more due)."""
        self._view: HomeView | None = None
        self._changed: set[str] = set()
        self._rules: list[_Rule] = []
        self._rules_stamp: tuple[object, ...] | None = None
        self._rules_read_at = -float("inf")
        self._rules_unseen = False
        """Rules were read that not every session has been looked at under yet."""
        self._armed: dict[ArmedKey, Armed] = {}
        self._outage = Outage("alert watcher", first=1.0, most=timing.OUTAGE_RETRY_MAX, log=log)
        self.fired = 0
        self.round_at: float | None = None
        """When the last round ended, well or not (``time.monotonic()``; for ``/metrics``)."""
        self._deliveries_at = 0.0
        """When to look for due deliveries again (monotonic): at once after a firing or
        when an attempt ended, else when the next retry is due; never while none is
        pending (this watcher alone makes its home's)."""
        self._attempting: dict[int, asyncio.Task[None]] = {}
        self._lanes = {channel: Lane(limits) for channel, limits in lane_limits().items()}
        self._claims_looked_at = False
        """Whether the claims a process that is gone left have been let go."""

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        unsubscribe = self.source.subscribe(
            lambda change: loop.call_soon_threadsafe(self._changes.put_nowait, change)
        )
        wait: float | None = 0.0
        try:
            while True:
                for change in await next_within(self._changes, wait):
                    self._take(change)
                wait = await self._round()
                self.round_at = time.monotonic()
        finally:
            unsubscribe()
            for task in list(self._attempting.values()):
                task.cancel()

    def _take(self, change: HomeChange | None) -> None:
        if change is None or change.view.name != self.home:
            return
        self._view = change.view
        self._changed |= change.changed

    async def _round(self) -> float:
        """Evaluate what changed and make the deliveries due; the seconds until the next
        round is due (a delivery to try again, the rules to read again)."""
        if self._view is None:
            # Started after the source's first round, or that round told nothing (a home
            # with no session): what the source published then.
            current = self.source.view()
            if current is not None and current.version > 0:
                self._take(HomeChange(current, frozenset(current.sessions), frozenset()))
        try:
            changed, self._changed = self._changed, set()
            try:
                await _in_thread(self._evaluate, changed)
            except BaseException:
                self._changed |= changed
                raise
            wait = await self._deliver()
        except (OperationalError, InterfaceError) as error:
            return self._outage.failed(error)
        except Exception:
            log.exception("alert watcher of %s: a round failed; trying again", self.home)
            return timing.OUTAGE_RETRY_MAX
        self._outage.ended()
        return min(wait, timing.ALERT_RULES_EVERY) if wait is not None else timing.ALERT_RULES_EVERY

    def _evaluate(self, changed: set[str]) -> None:
        if self._read_rules():
            self._rules_unseen = True
        view = self._view
        if view is None:
            return
        if self._rules_unseen:  # rules read since the last look at every session
            changed = set(view.sessions)
        if changed and self._rules:
            self._evaluate_sessions(view, changed)
            self._evaluate_home(view, changed)
        if self._rules_unseen:
            self._rules_unseen = False
            reading = sum(not session.read_to_end for session in view.sessions.values())
            log.info(
                "alert watcher of %s: rules in force: %d (%d sessions looked at, %d still read)",
                self.home,
                len(self._rules),
                len(view.sessions) - reading,
                reading,
            )

    def _evaluate_sessions(self, view: HomeView, changed: set[str]) -> None:
        now = time.time()
        for session_id in sorted(changed):
            session = view.sessions.get(session_id)
            if session is None or not session.read_to_end:
                continue  # gone, or its past still being read: looked at once it is read
            for rule in self._rules:
                if not rule.spec.condition.is_home and rule.spec.scope.covers(
                    self.home, session.snapshot
                ):
                    self._evaluate_rule(rule, session_id, session, now)

    def _evaluate_home(self, view: HomeView, changed: set[str]) -> None:
        """The rules on the home's cost today, once the home changed."""
        rules = [
            rule
            for rule in self._rules
            if rule.spec.condition.is_home and rule.spec.covers_home(self.home)
        ]
        if not rules or view.error is not None:
            return
        now = time.time()
        zone = timezone.get_default_timezone()
        today = local_date(int(now * 1000), zone)
        spent = day_amount([view.home_tree.spend], get_config().rate_book, zone, today)
        latest = max(
            (
                session.snapshot.last_time or 0
                for session_id in changed
                if (session := view.sessions.get(session_id)) is not None
            ),
            default=None,
        )
        for rule in rules:
            reading = day_cost_reading(
                rule.spec, self.home, today, spent.usd, spent.unrated, latest
            )
            armed = self._armed.get((rule.row.pk, HOME))
            cooldown = rule.row.cooldown_seconds
            decision = decide(armed, reading, now=now, cooldown=cooldown, since_ms=rule.since_ms)
            self._record(rule, HOME, "", [(reading, decision)])

    def _evaluate_rule(
        self, rule: _Rule, session_id: str, session: SessionView, now: float
    ) -> None:
        """Decide ``rule`` on one session, write what fires, and keep its state."""
        decided = _decisions(rule, session, self._armed.get((rule.row.pk, session_id)), now)
        self._record(rule, session_id, session.snapshot.title or "", decided)

    def _record(
        self,
        rule: _Rule,
        session_id: str,
        title: str,
        decided: list[tuple[Reading, Decision]],
    ) -> None:
        """Write what fires of ``rule``'s decisions on a session (or the home), and keep
        its state."""
        key = (rule.row.pk, session_id)
        for reading, decision in decided:
            # Recorded before it is kept: a write that fails is decided again next round.
            if decision.fire and reading.key is not None:
                try:
                    deliveries.record_firing(
                        rule.row,
                        home=self.home,
                        session_id=session_id,
                        title=title,
                        key=reading.key,
                        summary=summary_in(rule.row.language, reading),
                    )
                except IntegrityError:  # the rule was deleted since it was read
                    self._rules_read_at = -float("inf")
                    return
                self.fired += 1
                self._deliveries_at = 0.0
            if decision.cleared:
                AlertFiring.objects.filter(
                    rule_id=rule.row.pk, home=self.home, session_id=session_id, cleared_at=None
                ).update(cleared_at=timezone.now())
            self._armed[key] = decision.armed
        # Seen, even with no fold to read yet: whatever comes next is new, whatever its time.
        self._armed.setdefault(key, Armed())

    def _read_rules(self) -> bool:
        """Read the rules again if any changed (at most every ALERT_RULES_EVERY); whether
        they did (every session is then looked at again, for the new rules)."""
        if time.monotonic() - self._rules_read_at < timing.ALERT_RULES_EVERY:
            return False
        self._rules_read_at = time.monotonic()
        enabled = AlertRule.objects.filter(enabled=True)
        stamp = tuple(enabled.aggregate(Count("id"), Max("updated_at")).values())
        if stamp == self._rules_stamp:
            return False
        self._rules_stamp = stamp
        rows = list(enabled)
        # A rule whose condition changed starts afresh, from its firings, as a new one.
        known = {rule.row.pk: rule.spec.condition for rule in self._rules}
        self._rules = [
            _Rule(row, row.spec(), int(row.updated_at.timestamp() * 1000)) for row in rows
        ]
        new = [row.pk for row in rows if known.get(row.pk) is not Condition(row.condition)]
        kept = {row.pk for row in rows} - set(new)
        self._armed = {k: v for k, v in self._armed.items() if k[0] in kept}
        self._armed.update(_armed_from_firings(new, self.home))
        return True

    async def _deliver(self) -> float | None:
        """Start the due deliveries whose turn it is; the seconds until the next one not
        due yet is (``None``: none)."""
        if stop_asked():
            return None  # what is due stays due, for the next start
        if not self._claims_looked_at:
            released = await _in_thread(deliveries.release_dead_claims, self.home)
            self._claims_looked_at = True
            if released:
                log.info(
                    "alert watcher of %s: %d delivery(ies) a stopped dshweb left claimed are "
                    "due again",
                    self.home,
                    released,
                )
        if time.monotonic() < self._deliveries_at:
            return self._deliveries_at - time.monotonic()
        if all(lane.full for lane in self._lanes.values()):
            self._deliveries_at = float("inf")  # the next attempt to end looks again
            return None
        # An attempt that ends while the look reads sets this to 0 (look again at once):
        # kept below, so that end is not lost.
        self._deliveries_at = float("inf")
        try:
            due, wait = await _in_thread(
                deliveries.due_deliveries, self.home, leaving_out=frozenset(self._attempting)
            )
        except BaseException:
            self._deliveries_at = 0.0  # the round's outage retry looks again
            raise
        waiting: dict[str, list[Attempt]] = {channel: [] for channel in self._lanes}
        for item in due:
            if item.channel in waiting:
                waiting[item.channel].append(Attempt(item.delivery_id, item.owner, item.target))
        for channel, lane in self._lanes.items():
            for attempt in lane.take(waiting[channel]):
                task = asyncio.create_task(self._attempt(channel, attempt.delivery_id))
                self._attempting[attempt.delivery_id] = task
        # One that waits for its turn is taken when an attempt ends (that looks again).
        later = time.monotonic() + (wait if wait is not None else float("inf"))
        self._deliveries_at = min(self._deliveries_at, later)
        return wait

    async def _attempt(self, channel: str, delivery_id: int) -> None:
        """One delivery, in a thread of its own; whatever happens, the watcher looks again
        after."""
        try:
            message = await _on_a_thread_of_its_own(deliveries.attempt, delivery_id)
            if message is not None:
                layer = get_channel_layer()
                error: BaseException | None = None
                try:
                    if layer is None:
                        raise RuntimeError("no channel layer is configured")
                    await layer.group_send(message.group, message.message)
                except Exception as failure:
                    error = failure
                await _on_a_thread_of_its_own(deliveries.browser_sent, delivery_id, error)
        except Exception:
            log.exception("alert watcher of %s: delivery %s", self.home, delivery_id)
        finally:
            self._lanes[channel].ended(delivery_id)
            del self._attempting[delivery_id]
            self._deliveries_at = 0.0
            self._changes.put_nowait(None)


def lane_limits() -> dict[str, LaneLimits]:
    """Each way of telling's lane, its limits read from :mod:`~dshweb.live.timing` now (a
    watcher's start): a browser notice never waits behind an email or a webhook, an email
    never behind a webhook. Only webhooks go to receivers of their own (a cap each)."""
    return {
        AlertDelivery.Channel.BROWSER: LaneLimits(
            timing.BROWSER_SLOTS, timing.BROWSER_SLOTS_PER_OWNER, timing.BROWSER_SLOTS
        ),
        AlertDelivery.Channel.EMAIL: LaneLimits(
            timing.EMAIL_SLOTS, timing.EMAIL_SLOTS_PER_OWNER, timing.EMAIL_SLOTS
        ),
        AlertDelivery.Channel.WEBHOOK: LaneLimits(
            timing.WEBHOOK_SLOTS, timing.WEBHOOK_SLOTS_PER_OWNER, timing.WEBHOOK_SLOTS_PER_TARGET
        ),
    }


def _decisions(
    rule: _Rule, session: SessionView, armed: Armed | None, now: float
) -> list[tuple[Reading, Decision]]:
    """What ``rule`` reads off the session and decides: a level's one reading, or one per
    fold of an event's past the last one told, oldest first."""
    spec, cooldown = rule.spec, rule.row.cooldown_seconds
    if spec.condition.is_event:
        readings = event_readings(spec, session.snapshot, after=told_through(armed))
        decided = decide_events(armed, readings, now=now, cooldown=cooldown, since_ms=rule.since_ms)
        return list(zip(readings, decided, strict=True))
    book = get_config().rate_book
    reading = condition_reading(spec, session.snapshot, session.gauge, int(now * 1000), book)
    return [(reading, decide(armed, reading, now=now, cooldown=cooldown, since_ms=rule.since_ms))]


def _armed_from_firings(rule_ids: list[int], home: str) -> Mapping[ArmedKey, Armed]:
    """What each rule last fired for in each session of ``home``, from its firings: a
    level's last firing (held while not cleared), an event's highest fold seq told, and
    when each last fired (a firing of what the rule watched before an edit is not its)."""
    armed: dict[ArmedKey, Armed] = {}
    firings = (
        AlertFiring.objects.filter(rule_id__in=rule_ids, home=home)
        .select_related("rule")
        .order_by("fired_at", "id")
    )
    for firing in firings:
        key = (firing.rule_id, firing.session_id)
        fired_at = firing.fired_at.timestamp()
        seq = compaction_seq(firing.key)
        if not Condition(firing.rule.condition).is_event:
            if seq is None:
                armed[key] = Armed(firing.key if firing.cleared_at is None else None, fired_at)
        elif seq is not None:
            told = told_through(armed.get(key))
            armed[key] = Armed(str(seq if told is None else max(seq, told)), fired_at)
    return armed


def _dropping_broken_connections(function: Callable[P, T]) -> Callable[P, T]:
    """``function``, dropping its thread's database connection when it broke."""

    def run(*args: P.args, **kwargs: P.kwargs) -> T:
        try:
            return function(*args, **kwargs)
        except (OperationalError, InterfaceError):
            close_old_connections()
            raise

    return run


async def _on_a_thread_of_its_own(function: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    """``function(*args, **kwargs)`` in a daemon thread started for it (its database connections
    closed after): an attempt that hangs holds its own thread, never a pool's, and no
    stop of the process waits for it."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[T] = loop.create_future()
    run = _dropping_broken_connections(function)

    def settle(result: T | None, error: BaseException | None) -> None:
        if done.done():  # cancelled: the watcher stopped
            return
        if error is not None:
            done.set_exception(error)
        else:
            done.set_result(result)  # type: ignore[arg-type]

    def work() -> None:
        result: T | None = None
        error: BaseException | None = None
        try:
            result = run(*args, **kwargs)
        except BaseException as failure:
            error = failure
        finally:
            connections.close_all()
        with contextlib.suppress(RuntimeError):  # the loop is closed: no one waits
            loop.call_soon_threadsafe(settle, result, error)

    threading.Thread(target=work, name="dshweb-delivery", daemon=True).start()
    return await done


async def _in_thread(function: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    """``function`` in a pool thread, whose broken database connection it drops."""
    run = _dropping_broken_connections(function)
    return await sync_to_async(run, thread_sensitive=False)(*args, **kwargs)


watching: HubTask[AlertWatcher] = HubTask("dshweb-alerts", AlertWatcher)
"""The watcher of the process's hub; also run by a collector for its home
(:func:`dshweb.live.jobs.beside_hub`, from the alerts app's ``ready()``)."""


def start_alert_watcher() -> AlertWatcher | None:
    """Start (or keep) the watcher of the process's hub on the running event loop (beside
    its publisher); a web worker has none (its collectors watch)."""
    return watching.start()


async def stop_alert_watcher() -> None:
    """Stop the watcher started on this event loop, if any (tests, shutdown)."""
    await watching.stop()
