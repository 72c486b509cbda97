"""A stop's steps (dshweb.live.stopping), on a stop of the tests' own with short times and
a hard exit that only notes it was called: the work in flight is waited for until the
grace ends and recorded as interrupted then, never twice and never when it ended; the
process is ended once it finished, or at the deadline whatever still runs. The real
signals, servers and collectors: tests/site/test_stop_on_time.py,
tests/collect/test_stop_on_time.py."""

from __future__ import annotations

import threading
import time

import pytest

from dshweb.live.stopping import Stopping

GRACE = 0.3
LONG = 30.0


class Ended:
    """The hard exit of a test's stop: when it came."""

    def __init__(self) -> None:
        self.at: float | None = None
        self.event = threading.Event()

    def __call__(self) -> None:
        self.at = time.monotonic()
        self.event.set()


def _stopping(
    ended: Ended, *, grace: float = GRACE, exit_wait: float = LONG, deadline: float = LONG
) -> Stopping:
    made = Stopping(grace=grace, exit_wait=exit_wait, deadline=deadline, hard_exit=ended)
    made.arm()
    return made


def test_nothing_in_flight_settles_at_once_and_ends_a_moment_after_finished() -> None:
    ended = Ended()
    stop = _stopping(ended, exit_wait=0.2)
    assert stop.wait_settled(0)  # no stop asked: nothing to wait for
    asked_or_not = [stop.asked]
    asked = time.monotonic()
    stop.ask("SIGTERM")
    asked_or_not.append(stop.asked)
    assert asked_or_not == [False, True]
    assert stop.wait_settled(5)
    assert time.monotonic() - asked < GRACE  # no grace waited for: nothing was in flight
    assert not ended.event.wait(0.3)  # not finished yet: the deadline (LONG) is far
    finished = time.monotonic()
    stop.finished()
    assert ended.event.wait(5) and ended.at is not None
    assert 0.15 < ended.at - finished < 2.0
    assert stop.hard_exited


def test_work_that_ends_within_the_grace_is_waited_for_and_not_interrupted() -> None:
    stop = _stopping(Ended())
    interrupted: list[str] = []
    release = threading.Event()

    def work() -> None:
        with stop.in_flight("delivery 1", lambda: interrupted.append("delivery 1")):
            release.wait(5)

    runner = threading.Thread(target=work)
    runner.start()
    while not stop.running():
        time.sleep(0.01)
    asked = time.monotonic()
    stop.ask("SIGTERM")
    assert not stop.wait_settled(GRACE / 3)  # it waits for the work
    release.set()
    assert stop.wait_settled(5)
    assert time.monotonic() - asked < GRACE  # settled when the work ended, not at the grace
    runner.join(5)
    assert interrupted == [] and stop.running() == []


def test_work_past_the_grace_is_recorded_once_and_the_deadline_ends_the_process(
    caplog: pytest.LogCaptureFixture,
) -> None:
    ended = Ended()
    stop = _stopping(ended, deadline=1.0)
    interrupted: list[str] = []
    hung = threading.Event()
    finished_work: list[str] = []

    def work(name: str, seconds: float) -> None:
        with stop.in_flight(name, lambda: interrupted.append(name)):
            hung.wait(seconds)
            finished_work.append(name)

    threads = [
        threading.Thread(target=work, args=("webhook 7", LONG), daemon=True),
        threading.Thread(target=work, args=("Compact request 3", LONG), daemon=True),
        threading.Thread(target=work, args=("email 8", 0.05), daemon=True),
    ]
    for thread in threads:
        thread.start()
    while len(stop.running()) < 3:
        time.sleep(0.01)
    asked = time.monotonic()
    settled_at: list[float] = []
    stop.when_settled(lambda: settled_at.append(time.monotonic()))
    stop.ask("SIGTERM")
    stop.ask("SIGINT")  # a second ask changes nothing
    assert stop.wait_settled(5)
    assert GRACE - 0.05 < settled_at[0] - asked < GRACE + 0.5
    # The two still running at the grace are recorded, once each; the one that ended is not.
    assert sorted(interrupted) == ["Compact request 3", "webhook 7"]
    assert finished_work == ["email 8"]
    assert stop.running() == ["Compact request 3", "webhook 7"]  # left behind, on purpose
    # Never finished: ended at the deadline, whatever still runs.
    assert ended.event.wait(5) and ended.at is not None
    assert 0.95 < ended.at - asked < 1.5
    said = caplog.text
    assert "stopping (SIGTERM): no new work; waiting up to 0.3 s for" in said
    assert "recorded as interrupted for the next start: Compact request 3, webhook 7" in said
    assert "by a hard exit; still running: Compact request 3, webhook 7" in said
    hung.set()
    assert interrupted == sorted(interrupted)  # recorded in order, and no more after


def test_a_record_that_fails_is_logged_and_the_others_are_still_made(
    caplog: pytest.LogCaptureFixture,
) -> None:
    stop = _stopping(Ended(), grace=0.05)
    made: list[str] = []
    hung = threading.Event()

    def broken() -> None:
        raise RuntimeError("the database went away")

    def work(name: str, record: object) -> None:
        with stop.in_flight(name, record):  # type: ignore[arg-type]
            hung.wait(LONG)

    for name, record in (("a", broken), ("b", lambda: made.append("b"))):
        threading.Thread(target=work, args=(name, record), daemon=True).start()
    while len(stop.running()) < 2:
        time.sleep(0.01)
    stop.ask("SIGTERM")
    assert stop.wait_settled(5)
    assert made == ["b"]
    assert "a could not be recorded as interrupted" in caplog.text
    hung.set()
