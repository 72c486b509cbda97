"""What the shown homes spent: totals by day, ISO week and project, and the burn rate.

Pure, no Django. **Kept**: a :class:`HomeSpend` holds one home's tokens by billing slot
(:mod:`dshweb.core.fold.billing`: who answered, the quarter hour and its UTC day), summed
over its sessions' requests and summaries (what :meth:`RateBook.total
<dshweb.core.fold.cost.RateBook.total>` prices) two ways: by UTC day, and by project
folder (``sessions/--project--/``) with the day left out. The sums are integers, so they
stay exact however often a session changes. :meth:`HomeSpend.changed` makes the next
view's from this one and the sessions that changed: their old tokens taken off, their
new ones added, and only the days and projects they touch copied (the rest shared), so
an update costs what changed, never the home. The sessions list's tree keeps one beside
its counts (:attr:`dshweb.core.listing.tree.HomeTree.spend`).

**Read**: :func:`spend_report` prices the tokens with a rate book. Each day's and each
project's dollars are memoised on the object that holds its tokens, which an update
replaces only when they change: a read after one session changed prices its day and its
project again, nothing else. Every figure is an :class:`Amount`: the dollars of what has
rates, and whether some tokens had none (a partial figure, never a smaller one said
as whole).

Days and weeks are the server's time zone's: every real zone's offset is a whole number
of quarter hours, so each quarter hour of a UTC day lies in one local date, and a local
day's total is exact. Weeks are ISO weeks (Monday first). The burn rate is the dollars
per hour over the last hour and the last 24 hours, to the quarter hour: the quarter hour
now under way and the 3 (or 95) before it, over the time from the start of the first to
now (45 to 60 minutes; 23 h 45 min to 24 h).
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta, tzinfo
from itertools import chain

from dshweb.core.fold.billing import EPOCH_DAY, NO_TIME, QUARTER_MS, Slot, undated
from dshweb.core.fold.cost import Buckets, RateBook
from dshweb.core.fold.session import SessionSnapshot

DAYS = 14
"""The days a report lists, today first."""
WEEKS = 8
"""The ISO weeks a report lists, this one first."""
QUARTERS_PER_DAY = 96


@dataclass(frozen=True, slots=True)
class Amount:
    """Dollars, and what they leave out: the sum of any number of slots' prices."""

    dollars: float = 0.0
    """Every token with rates, in dollars."""
    priced: bool = False
    """Some tokens had rates."""
    unrated: bool = False
    """Some tokens had none: :attr:`dollars` leaves them out (a partial figure)."""

    @property
    def usd(self) -> float | None:
        """The dollars; ``None`` when there were tokens and none had rates (unknown, not
        $0)."""
        return None if self.unrated and not self.priced else self.dollars

    def __add__(self, other: Amount) -> Amount:
        return Amount(
            self.dollars + other.dollars,
            self.priced or other.priced,
            self.unrated or other.unrated,
        )


NOTHING = Amount()


def priced(book: RateBook, slot: Slot, tokens: Buckets) -> Amount:
    money = book.money(slot, tokens)
    return Amount(unrated=True) if money is None else Amount(money, priced=True)


def project_of(path: str) -> str:
    """The project folder (``--project--``) of a session whose log is at ``path``
    (``sessions/--project--/<session>/session.v4.jsonl.zstd``)."""
    parts = path.rsplit("/", 3)
    return parts[-3] if len(parts) >= 3 else ""


# -- kept ----------------------------------------------------------------------------------


class DayTokens:
    """One UTC day's tokens by slot (never changed once made: an update makes another),
    with their dollars by quarter hour, and by local date, memoised per rate book (and
    time zone)."""

    __slots__ = ("_local", "_quarters", "by_slot", "day")

    def __init__(self, day: int, by_slot: dict[Slot, Buckets]) -> None:
        self.day = day
        self.by_slot: Mapping[Slot, Buckets] = by_slot
        self._quarters: dict[RateBook, dict[int, Amount]] = {}
        self._local: dict[tuple[RateBook, tzinfo], dict[int, Amount]] = {}

    def quarters(self, book: RateBook) -> Mapping[int, Amount]:
        """The day's dollars by quarter hour of the UTC day."""
        found = self._quarters.get(book)
        if found is None:
            found = {}
            for slot, tokens in self.by_slot.items():
                quarter = slot[3]
                found[quarter] = found.get(quarter, NOTHING) + priced(book, slot, tokens)
            self._quarters[book] = found
        return found

    def local(self, book: RateBook, zone: tzinfo) -> Mapping[int, Amount]:
        """The day's dollars by date in ``zone`` (an ordinal: a UTC day spans two)."""
        found = self._local.get((book, zone))
        if found is None:
            found = {}
            for quarter, amount in self.quarters(book).items():
                day = local_day(self.day, quarter, zone)
                found[day] = found.get(day, NOTHING) + amount
            self._local[(book, zone)] = found
        return found


class ProjectTokens:
    """One project folder's tokens by slot on no day (:func:`~dshweb.core.fold.billing.undated`)
    and its sessions by working folder, with its dollars memoised per rate book."""

    __slots__ = ("_amounts", "by_slot", "cwds")

    def __init__(
        self,
        by_slot: Mapping[Slot, Buckets],
        cwds: dict[str, int],
        amounts: dict[RateBook, Amount] | None = None,
    ) -> None:
        self.by_slot = by_slot
        self.cwds: Mapping[str, int] = cwds
        """Each working folder its sessions ran in (``""``: none recorded) → how many."""
        self._amounts: dict[RateBook, Amount] = {} if amounts is None else amounts

    def amount(self, book: RateBook) -> Amount:
        found = self._amounts.get(book)
        if found is None:
            found = sum((priced(book, s, t) for s, t in self.by_slot.items()), NOTHING)
            self._amounts[book] = found
        return found


Deltas = dict[Slot, list[int]]


@dataclass(frozen=True, eq=False, slots=True)
class HomeSpend:
    """One home's tokens by day and by project (see the module docstring); immutable."""

    days: Mapping[int, DayTokens]
    """UTC day (an ordinal; −1: requests at no known time) → its tokens."""
    projects: Mapping[str, ProjectTokens]

    @classmethod
    def of(cls, snapshots: Iterable[SessionSnapshot]) -> HomeSpend:
        """The spend of these sessions, summed from nothing."""
        return EMPTY.changed((), snapshots)

    def changed(
        self, gone: Iterable[SessionSnapshot], come: Iterable[SessionSnapshot]
    ) -> HomeSpend:
        """The spend once the sessions of ``gone`` (as they were) are replaced by those of
        ``come`` (as they are now); a session in both as the same snapshot is unchanged."""
        before = {shot.session_id: shot for shot in gone}
        after = {shot.session_id: shot for shot in come}
        days: dict[int, Deltas] = {}
        projects: dict[str, Deltas] = {}
        cwds: dict[str, Counter[str]] = {}
        for session_id in before.keys() | after.keys():
            old, new = before.get(session_id), after.get(session_id)
            if old is new:
                continue
            for shot, sign in ((old, -1), (new, 1)):
                if shot is not None:
                    _gather(shot, sign, days, projects, cwds)
        if not cwds:  # no session changed
            return self
        return HomeSpend(_days(self.days, days), _projects(self.projects, projects, cwds))

    def sums(
        self,
    ) -> tuple[
        dict[int, dict[Slot, Buckets]], dict[str, dict[Slot, Buckets]], dict[str, dict[str, int]]
    ]:
        """Every sum as plain dicts (for a comparison)."""
        return (
            {day: dict(kept.by_slot) for day, kept in self.days.items()},
            {name: dict(kept.by_slot) for name, kept in self.projects.items()},
            {name: dict(kept.cwds) for name, kept in self.projects.items()},
        )


EMPTY = HomeSpend({}, {})


def _gather(
    shot: SessionSnapshot,
    sign: int,
    days: dict[int, Deltas],
    projects: dict[str, Deltas],
    cwds: dict[str, Counter[str]],
) -> None:
    project = project_of(shot.path)
    cwds.setdefault(project, Counter())[shot.cwd or ""] += sign
    by_project = projects.setdefault(project, {})
    cost = shot.cost
    for slot, tokens in chain(cost.requests, cost.summaries):
        if not any(tokens):
            continue
        for target, key in ((days.setdefault(slot[4], {}), slot), (by_project, undated(slot))):
            found = target.get(key)
            if found is None:
                target[key] = [sign * n for n in tokens]
            else:
                for bucket, n in enumerate(tokens):
                    found[bucket] += sign * n


def _applied(kept: Mapping[Slot, Buckets], deltas: Deltas) -> dict[Slot, Buckets] | None:
    """``kept`` with ``deltas`` added (a slot summing to nothing left out); None when
    they change nothing."""
    changes = [(slot, delta) for slot, delta in deltas.items() if any(delta)]
    if not changes:
        return None
    sums = dict(kept)
    for slot, delta in changes:
        old = sums.get(slot, (0, 0, 0, 0))
        new = (old[0] + delta[0], old[1] + delta[1], old[2] + delta[2], old[3] + delta[3])
        if any(new):
            sums[slot] = new
        else:
            del sums[slot]
    return sums


def _days(kept: Mapping[int, DayTokens], deltas: dict[int, Deltas]) -> Mapping[int, DayTokens]:
    days = dict(kept)
    for day, delta in deltas.items():
        old = days.get(day)
        sums = _applied(old.by_slot if old is not None else {}, delta)
        if sums is None:
            continue
        if sums:
            days[day] = DayTokens(day, sums)
        else:
            del days[day]
    return days


def _projects(
    kept: Mapping[str, ProjectTokens], deltas: dict[str, Deltas], cwds: dict[str, Counter[str]]
) -> Mapping[str, ProjectTokens]:
    projects = dict(kept)
    for name in deltas.keys() | cwds.keys():
        old = projects.get(name)
        sums = _applied(old.by_slot if old is not None else {}, deltas.get(name, {}))
        counted = cwds.get(name, Counter())
        if sums is None and not any(counted.values()):
            continue
        folders = dict(old.cwds) if old is not None else {}
        for cwd, n in counted.items():
            if n:
                total = folders.get(cwd, 0) + n
                if total:
                    folders[cwd] = total
                else:
                    del folders[cwd]
        if sums is None and old is not None and folders:  # its sessions changed, not its tokens
            projects[name] = ProjectTokens(old.by_slot, folders, old._amounts)
        elif folders or sums:
            projects[name] = ProjectTokens(sums or {}, folders)
        else:
            del projects[name]
    return projects


# -- read ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class DaySpend:
    day: date
    amount: Amount


@dataclass(frozen=True, slots=True)
class WeekSpend:
    start: date
    """Its Monday."""
    amount: Amount

    @property
    def iso(self) -> tuple[int, int]:
        """(ISO year, ISO week number)."""
        year, week, _ = self.start.isocalendar()
        return year, week


@dataclass(frozen=True, slots=True)
class ProjectSpend:
    folder: str
    """The project folder, as DSH names it (``--home-me-app--``)."""
    cwd: str
    """The working folder most of its sessions ran in (``""``: none recorded): what a
    person reads (the folder's name cannot be turned back into it)."""
    sessions: int
    amount: Amount


@dataclass(frozen=True, slots=True)
class Burn:
    """What was spent from ``since_ms`` to ``now_ms``, and per hour."""

    since_ms: int
    now_ms: int
    amount: Amount

    @property
    def hours(self) -> float:
        return (self.now_ms - self.since_ms) / 3_600_000

    @property
    def per_hour(self) -> float | None:
        usd = self.amount.usd
        return None if usd is None or self.hours <= 0 else usd / self.hours


@dataclass(frozen=True, slots=True)
class SpendReport:
    """Every figure of the cost page and its API call."""

    zone: str
    """The time zone days and weeks are in."""
    days: tuple[DaySpend, ...]
    """The last :data:`DAYS` days, today first."""
    weeks: tuple[WeekSpend, ...]
    """The last :data:`WEEKS` ISO weeks, this one first."""
    projects: tuple[ProjectSpend, ...]
    """Every project folder, the dearest first (those without a known cost last)."""
    last_hour: Burn
    last_day: Burn
    undated: Amount
    """Requests at no known time: in their projects' totals, on no day."""
    total: Amount
    """Every request and summary of every session shown."""

    @property
    def today(self) -> DaySpend:
        return self.days[0]


@functools.lru_cache(maxsize=1 << 15)
def local_day(day: int, quarter: int, zone: tzinfo) -> int:
    """The date (an ordinal), in ``zone``, of quarter hour ``quarter`` of UTC day ``day``."""
    start = datetime.fromordinal(day).replace(tzinfo=UTC) + timedelta(minutes=15 * quarter)
    return start.astimezone(zone).date().toordinal()


def local_date(now_ms: int, zone: tzinfo) -> date:
    return datetime.fromtimestamp(now_ms / 1000, tz=zone).date()


def day_amount(spends: Sequence[HomeSpend], book: RateBook, zone: tzinfo, day: date) -> Amount:
    """What the homes spent on ``day`` (in ``zone``)."""
    return _by_local_day(spends, book, zone, day, day).get(day.toordinal(), NOTHING)


def _by_local_day(
    spends: Sequence[HomeSpend], book: RateBook, zone: tzinfo, first: date, last: date
) -> dict[int, Amount]:
    """Each local date from ``first`` to ``last`` that had a cost → its amount."""
    low, high = first.toordinal(), last.toordinal()
    found: dict[int, Amount] = {}
    for spend in spends:
        for utc_day in range(low - 1, high + 2):  # a zone is less than a day off UTC
            kept = spend.days.get(utc_day)
            if kept is None:
                continue
            for day, amount in kept.local(book, zone).items():
                if low <= day <= high:
                    found[day] = found.get(day, NOTHING) + amount
    return found


def burn(spends: Sequence[HomeSpend], book: RateBook, now_ms: int, quarters: int) -> Burn:
    """What the homes spent in the quarter hour now under way and the ``quarters − 1``
    before it."""
    now_quarter = now_ms // QUARTER_MS
    first = now_quarter - quarters + 1
    amount = NOTHING
    for spend in spends:
        for utc_day in range(first // QUARTERS_PER_DAY, now_quarter // QUARTERS_PER_DAY + 1):
            kept = spend.days.get(utc_day + EPOCH_DAY)
            if kept is None:
                continue
            base = utc_day * QUARTERS_PER_DAY
            for quarter, part in kept.quarters(book).items():
                if first <= base + quarter <= now_quarter:
                    amount += part
    return Burn(first * QUARTER_MS, now_ms, amount)


def _projects_of(spends: Sequence[HomeSpend], book: RateBook) -> Iterator[ProjectSpend]:
    merged: dict[str, tuple[Amount, Counter[str]]] = {}
    for spend in spends:
        for name, kept in spend.projects.items():
            amount, cwds = merged.get(name, (NOTHING, Counter()))
            merged[name] = (amount + kept.amount(book), cwds + Counter(kept.cwds))
    for name, (amount, cwds) in merged.items():
        cwd = min(cwds.items(), key=lambda item: (-item[1], item[0]))[0] if cwds else ""
        yield ProjectSpend(name, cwd, sum(cwds.values()), amount)


def spend_report(
    spends: Sequence[HomeSpend],
    book: RateBook,
    zone: tzinfo,
    now_ms: int,
    *,
    days: int = DAYS,
    weeks: int = WEEKS,
) -> SpendReport:
    """The shown homes' spend (``spends``: one per home) priced by ``book``, as of
    ``now_ms``, its days in ``zone``."""
    today = local_date(now_ms, zone)
    monday = today - timedelta(days=today.weekday())
    first = min(today - timedelta(days=days - 1), monday - timedelta(weeks=weeks - 1))
    by_day = _by_local_day(spends, book, zone, first, today)

    def on(day: date) -> Amount:
        return by_day.get(day.toordinal(), NOTHING)

    week_list = []
    for back in range(weeks):
        start = monday - timedelta(weeks=back)
        amount = sum((on(start + timedelta(days=d)) for d in range(7)), NOTHING)
        week_list.append(WeekSpend(start, amount))
    projects = sorted(
        _projects_of(spends, book),
        key=lambda p: (p.amount.usd is None, -p.amount.dollars, p.folder),
    )
    undated_amount = sum(
        (
            amount
            for spend in spends
            if (kept := spend.days.get(NO_TIME)) is not None
            for amount in kept.quarters(book).values()
        ),
        NOTHING,
    )
    return SpendReport(
        zone=str(zone),
        days=tuple(
            DaySpend(day, on(day)) for day in (today - timedelta(days=b) for b in range(days))
        ),
        weeks=tuple(week_list),
        projects=tuple(projects),
        last_hour=burn(spends, book, now_ms, 4),
        last_day=burn(spends, book, now_ms, QUARTERS_PER_DAY),
        undated=undated_amount,
        total=sum((p.amount for p in projects), NOTHING),
    )
