"""The hub's and the publisher's timing constants (plain values: the load benchmark reads
them without setting Django up)."""

from __future__ import annotations

from dshweb.core.log.reader import Budget

INTERVAL = 0.1
"""At most one update per session per interval (10 per second): a frame waits at most this
long for the update that shows it (fsync → browser p95 ≈ 110 ms in bench/live_bench.py)."""
LIST_INTERVAL = 0.5
"""At most one sessions-list update per interval (2 per second): a list page re-orders
on every change, and an overview needs no more."""
NOTIFY_STEP_MS = 5
"""Quiet time that ends a batch of file notifications."""
NOTIFY_MAX_MS = 40
"""Longest a batch may be held while writes keep coming (watchfiles' default is 1.6 s)."""
TICK = 0.25
LIVENESS_EVERY = 1.0
RESCAN_EVERY = 120.0
"""A ``stat`` of every log, in case a notification was missed (folds nothing unchanged)."""
POLL_EVERY = 2.0
"""The same round, when there are no file notifications (:mod:`dshweb.live.watch`)."""
CHECKPOINT_EVERY = 5.0
"""Fold state of the sessions that changed is saved at most this often."""
FOLD_SLICE = Budget(events=20_000, bytes=8 << 20)
"""The most the hub folds of one log before it looks at the others again (~50 ms of
folding on one core): a log that is big, or small but expensive (gigabytes of newlines,
millions of tiny events), is read a slice at a time while every other session's
updates go on (bench/hostile_logs.py)."""
PROGRESS_EVERY = 0.25
"""While a cold start folds, what is folded so far is published this often."""
FIRST_PAGE_WAIT = 0.5
"""A page asked for while the first round runs waits at most this long for it to end."""
MISSING_HOME_RETRY = 2.0
BACKOFF_MAX = 30.0
HEARTBEAT_EVERY = 2.0
"""A collector (``manage.py dshweb_collect``) renews its lease this often."""
STALE_AFTER_BEATS = 3
"""A lease not renewed for this many of its holder's heartbeat intervals is free to take."""
COLLECT_WRITE_EVERY = 0.05
"""A collector writes the sessions that changed to the database at most this often (the
first change after a quiet spell at once): one transaction per write, and every web
worker's sockets are told after it, so this bounds how late a worker's page can be (half
of it on average under load: the team benchmark's fsync → browser p50 moved by ~half of
a change of it)."""
PICK_UP_EVERY = 2.0
"""A collector looks for commands whose message was lost this often (the row in the
database is the command; the message only wakes the collector at once)."""
OUTAGE_RETRY_MAX = 5.0
"""While the database cannot be reached, a collector tries it again at most this often
(from :data:`COLLECT_WRITE_EVERY`, doubling): back within seconds of the database."""
ALERT_RETRY_FIRST = 5.0
"""A delivery that failed (a webhook receiver down, the mail server refusing) is tried again
after this long, then twice as long each time, up to :data:`ALERT_ATTEMPTS` attempts."""
ALERT_ATTEMPTS = 5
"""Attempts before a delivery is recorded as failed, with its last error."""
ALERT_TIMEOUT = 5.0
"""Seconds one webhook attempt may take in all (connecting, sending, the whole answer)."""
ALERT_CLAIM = 60.0
"""An attempt claims its delivery for this long (its next attempt moved this far ahead)
before it sends: another watcher of the home, during a collector's hand-over, leaves it
alone; an attempt whose process died is taken again after it."""
WEBHOOK_SLOTS = 8
"""Webhook attempts at once per watcher, each in a thread of its own: a lane of their own,
apart from emails and browser notices (:mod:`dshweb.core.alerts.lanes`)."""
WEBHOOK_SLOTS_PER_OWNER = 4
"""Webhook attempts at once of one rule owner's: half the lane, so another user's webhook
always finds a slot, whatever one user's receivers do."""
WEBHOOK_SLOTS_PER_TARGET = 3
"""Webhook attempts at once to one receiver (``host:port``), whoever's rules aim at it: a
receiver that never answers holds at most these, and an owner's other receivers get the
rest of the owner's slots."""
EMAIL_SLOTS = 2
"""Email attempts at once per watcher (all go to the one mail server)."""
EMAIL_SLOTS_PER_OWNER = 1
BROWSER_SLOTS = 2
"""Browser notices at once per watcher (each a channel-layer message, never network I/O
to a receiver)."""
BROWSER_SLOTS_PER_OWNER = 1
DUE_LOOKED_AT = 100
"""At each look for due deliveries, each owner's oldest this many per way of telling."""
ALERT_RULES_EVERY = 1.0
"""The watcher looks for rules added, changed or removed at most this often."""
STOP_GRACE = 3.0
"""After a stop is asked (SIGTERM, SIGINT), the work in flight (an alert delivery's
attempt, a Compact request) may finish for this long; what is still running then is
recorded as interrupted, for the next start (:mod:`dshweb.live.stopping`)."""
STOP_EXIT_WAIT = 2.0
"""Once a stopping process has done its own last work (the server its grace, a collector
its last write), it ends on its own within this long, or is ended."""
STOP_DEADLINE = 8.0
"""A stopping process is ended this long after the stop was asked, whatever hangs: its
exit handlers get :data:`STOP_HANDLERS_WAIT` more, inside the 10 s a supervisor is told."""
STOP_HANDLERS_WAIT = 1.0
"""What a hard exit gives the exit handlers (logs flushed, a managed ``dsh web`` told to
stop) before it ends the process."""
HUB_STALLED_AFTER = 60.0
"""A hub whose thread has not been at work for this long (a turn of its loop, a log of a
cold start folded) is taken for hung: the systemd watchdog is no longer pinged, and the
unit is restarted once its ``WatchdogSec=`` has passed too (:mod:`dshweb.live.systemd`)."""
START_EXTENDED_BY = 30.0
"""While a home's first round is at work, systemd's start timeout is pushed this far
ahead (again every third of it): a big home is not killed for folding slowly, a hub that
stops working is (after this long)."""
READY_LOOKED_AT = 0.2
"""Until a process is ready, whether it is is looked at this often (the systemd notifier:
``READY=1`` at most this late)."""
