"""Stopping on time: a stop asked (SIGTERM, SIGINT) ends the process within seconds,
whatever hangs, and leaves a record of the work it cut short for the next start.

The server (``dshweb serve``, or Daphne as the docs run it: :func:`stop_with_the_server`)
and a collector (``dshweb collect``: :func:`asking_on_signals`) stop alike:

1. The stop is asked: no new work starts (:func:`stop_asked`: no alert delivery attempt,
   no Compact command), and the server closes its listening sockets at once (a new
   connection is refused: a proxy tries another worker).
2. The work in flight, each piece registered with :func:`in_flight` (an alert delivery's
   attempt, a Compact request), may finish for :data:`~dshweb.live.timing.STOP_GRACE`
   seconds. What still runs then is recorded as interrupted by its own ``interrupted``: a
   delivery is due again at once, a Compact request is closed saying dshweb stopped while
   it ran. The next start picks them up.
3. The process ends on its own: the server once Daphne's own shutdown is done, a
   collector after its last write and the release of its lease (each says so with
   :func:`finished`). If it has not ended :data:`~dshweb.live.timing.STOP_EXIT_WAIT`
   seconds after that, or :data:`~dshweb.live.timing.STOP_DEADLINE` seconds after the
   stop was asked, whichever comes first, it is ended by a hard exit: the exit handlers
   get :data:`~dshweb.live.timing.STOP_HANDLERS_WAIT` seconds (the logs flushed, a
   managed ``dsh web`` told to stop), then ``os._exit(0)``, with a line in the log naming
   what still ran.

Nothing may hold the stop: every thread dshweb starts is a daemon, and a thread that
hangs (a read that never returns, a webhook receiver or a ``dsh web`` that never
answers, a request Daphne waits for) is left behind on purpose once the grace is over.
The stopper's own threads start before any signal comes (:meth:`Stopping.arm`): a signal's
handler only sets an event.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from types import FrameType
from typing import Any

from django.db import connections

from dshweb.live import timing

log = logging.getLogger(__name__)


@dataclass(eq=False)
class Work:
    """One piece of work in flight: what it is (for the log), and how to record it as
    interrupted (called at most once, from the stopper's thread, while the work may still
    be running: the record must not undo an end the work recorded itself)."""

    what: str
    interrupted: Callable[[], object]


class Stopping:
    """A process's stop (one per process: :data:`stopping`; tests make their own)."""

    def __init__(
        self,
        *,
        grace: float = timing.STOP_GRACE,
        exit_wait: float = timing.STOP_EXIT_WAIT,
        deadline: float = timing.STOP_DEADLINE,
        handlers_wait: float = timing.STOP_HANDLERS_WAIT,
        hard_exit: Callable[[], object] | None = None,
    ) -> None:
        """``hard_exit``: what ends the process at the deadline (tests: not
        :meth:`exit_process`)."""
        self.grace, self.exit_wait, self.deadline = grace, exit_wait, deadline
        self.handlers_wait = handlers_wait
        self._hard_exit = hard_exit or self.exit_process
        self._lock = threading.RLock()  # a signal's handler may run while the thread holds it
        self._changed = threading.Condition(self._lock)
        self._works: set[Work] = set()
        self._asked = threading.Event()
        self._asked_at = 0.0
        self._why = ""
        self._exit_at = float("inf")
        self._armed = False
        self._settled = threading.Event()
        self._on_settled: list[Callable[[], object]] = []
        self._exit_handlers_began = False
        self.hard_exited = False

    # -- asking --------------------------------------------------------------------------

    def arm(self) -> None:
        """Start the stopper's thread, waiting for a stop: a signal's handler then only
        sets an event (starting a thread there could wait for a lock its own thread holds)."""
        with self._lock:
            if self._armed:
                return
            self._armed = True
        threading.Thread(target=self._run, name="dshweb-stop", daemon=True).start()

    def ask(self, why: str) -> None:
        """Ask the stop (once; later asks change nothing). Safe in a signal's handler once
        :meth:`arm` ran; arms it otherwise."""
        if self._asked.is_set():
            return
        self._asked_at = time.monotonic()
        self._why = why
        self._exit_at = self._asked_at + self.deadline
        self._asked.set()
        if not self._armed:
            self.arm()

    @property
    def asked(self) -> bool:
        return self._asked.is_set()

    # -- work in flight ------------------------------------------------------------------

    @contextlib.contextmanager
    def in_flight(self, what: str, interrupted: Callable[[], object]) -> Iterator[Work]:
        """Keep the work inside on the list a stop waits for (and records as interrupted
        when it outlasts the grace)."""
        work = Work(what, interrupted)
        with self._changed:
            self._works.add(work)
        try:
            yield work
        finally:
            with self._changed:
                self._works.discard(work)
                self._changed.notify_all()

    def running(self) -> list[str]:
        with self._lock:
            return sorted(work.what for work in self._works)

    # -- settling and ending -------------------------------------------------------------

    def when_settled(self, callback: Callable[[], object]) -> None:
        """Call ``callback`` once the work in flight has finished or been recorded as
        interrupted (at once, here, if it has already)."""
        with self._lock:
            if not self._settled.is_set():
                self._on_settled.append(callback)
                return
        callback()

    def wait_settled(self, timeout: float | None = None) -> bool:
        """Until the work in flight has finished or been recorded (at once when no stop was
        asked); whether it has."""
        if not self._asked.is_set():
            return True
        return self._settled.wait(timeout)

    def finished(self) -> None:
        """The process has done its own last work: it ends on its own within
        ``exit_wait`` seconds, or is ended then."""
        with self._changed:
            self._exit_at = min(self._exit_at, time.monotonic() + self.exit_wait)
            self._changed.notify_all()

    def _run(self) -> None:
        self._asked.wait()
        atexit.register(self._exit_handlers_run)  # last registered: the first to run
        running = self.running()
        log.info(
            "stopping (%s): no new work; %s",
            self._why,
            f"waiting up to {self.grace:g} s for {', '.join(running)}"
            if running
            else "nothing in flight",
        )
        threading.Thread(
            target=self._watch_deadline, name="dshweb-stop-deadline", daemon=True
        ).start()
        self._settle()

    def _settle(self) -> None:
        until = self._asked_at + self.grace
        with self._changed:
            while self._works and time.monotonic() < until:
                self._changed.wait(until - time.monotonic())
            left = sorted(self._works, key=lambda work: work.what)
        for work in left:
            try:
                work.interrupted()
            except Exception:
                log.exception("stopping: %s could not be recorded as interrupted", work.what)
        if left:
            log.warning(
                "stopping: still running after %g s, recorded as interrupted for the next "
                "start: %s",
                self.grace,
                ", ".join(work.what for work in left),
            )
        with contextlib.suppress(Exception):
            connections.close_all()  # this thread's, opened by the records
        with self._lock:
            self._settled.set()
            callbacks, self._on_settled = self._on_settled, []
        for callback in callbacks:
            try:
                callback()
            except Exception:
                log.exception("stopping: a step after the grace failed")

    def _watch_deadline(self) -> None:
        with self._changed:
            while (left := self._exit_at - time.monotonic()) > 0:
                self._changed.wait(left)
        self._end()

    def _exit_handlers_run(self) -> None:
        self._exit_handlers_began = True

    def _end(self) -> None:
        still = self.running() + sorted(
            thread.name
            for thread in threading.enumerate()
            if not thread.daemon and thread is not threading.main_thread() and thread.is_alive()
        )
        log.warning(
            "stopped %.1f s after the stop was asked, by a hard exit%s",
            time.monotonic() - self._asked_at,
            f"; still running: {', '.join(still)}" if still else "",
        )
        self.hard_exited = True
        self._hard_exit()

    def exit_process(self) -> None:
        """End the process now: the exit handlers get their second (unless the process
        is running them already), the output is flushed, then ``os._exit(0)``."""
        if not self._exit_handlers_began:
            handlers = threading.Thread(
                target=atexit._run_exitfuncs, name="dshweb-exit-handlers", daemon=True
            )
            handlers.start()
            handlers.join(self.handlers_wait)
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(0)


stopping = Stopping()
"""This process's stop."""


def stop_asked() -> bool:
    """Whether this process is stopping: no new work may start."""
    return stopping.asked


def in_flight(
    what: str, interrupted: Callable[[], object]
) -> contextlib.AbstractContextManager[Work]:
    """The work inside is waited for by a stop, or recorded as interrupted by
    ``interrupted`` (see :meth:`Stopping.in_flight`)."""
    return stopping.in_flight(what, interrupted)


def asking_on_signals(then: Callable[[], object] = lambda: None) -> None:
    """SIGTERM and SIGINT ask this process to stop, then call ``then`` (a collector's)."""
    stopping.arm()

    def asked(signum: int, frame: FrameType | None) -> None:
        stopping.ask(signal.Signals(signum).name)
        then()

    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, asked)


# -- the server ---------------------------------------------------------------------------


def stop_with_the_server() -> None:
    """Under Daphne (Twisted's reactor installed in this process, as ``dshweb serve`` and
    ``daphne dshweb.asgi:application`` run it): once the reactor runs, SIGTERM and SIGINT
    ask the stop before Twisted's own handlers stop the reactor, and the reactor's
    shutdown first stops listening, then waits for the grace. Elsewhere, nothing."""
    reactor = sys.modules.get("twisted.internet.reactor")
    if reactor is not None:
        reactor.callWhenRunning(_serving, reactor)


def _serving(reactor: Any) -> None:
    stopping.arm()
    for signum in (signal.SIGTERM, signal.SIGINT):
        twisted_handler = signal.getsignal(signum)
        if callable(twisted_handler):
            signal.signal(signum, _asking_first(twisted_handler))
    reactor.addSystemEventTrigger("before", "shutdown", _before_shutdown, reactor)


def _asking_first(
    then: Callable[[int, FrameType | None], Any],
) -> Callable[[int, FrameType | None], None]:
    def asked(signum: int, frame: FrameType | None) -> None:
        stopping.ask(signal.Signals(signum).name)
        then(signum, frame)

    return asked


def _before_shutdown(reactor: Any) -> Any:
    """Twisted's shutdown, before it goes on: stop accepting at once (Twisted would close
    the listening sockets only after every "before" step, and Daphne's waits for every
    request thread), then wait for the work in flight; the process is finished then."""
    from twisted.internet.defer import Deferred
    from twisted.internet.interfaces import IListeningPort

    stopping.ask("the server's reactor stops")
    for reader in reactor.getReaders():
        if IListeningPort.providedBy(reader):
            reader.stopListening()
    settled: Deferred[None] = Deferred()

    def done() -> None:
        stopping.finished()
        settled.callback(None)

    stopping.when_settled(lambda: reactor.callFromThread(done))
    return settled
