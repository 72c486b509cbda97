"""What the apps name in :mod:`dshweb.live.jobs` is there: a path mistyped in an app's
``ready()`` would otherwise show only when a server or a collector starts its services."""

from __future__ import annotations

from django.utils.module_loading import import_string

from dshweb.alerts.demo import give_demo_rules
from dshweb.collect import commands
from dshweb.collect.checkpoints import DatabaseCheckpoints
from dshweb.compaction.service import close_abandoned_requests
from dshweb.live import jobs
from dshweb.live.protocol import COMPACT_RUN, SETTINGS_REQUEST


def test_every_job_the_apps_name_is_there() -> None:
    assert [task.name for task in jobs.jobs_beside_hub()] == ["dshweb-alerts", "dshweb-otlp"]
    assert list(jobs.jobs_at_start().values()) == [give_demo_rules, close_abandoned_requests]
    assert jobs.checkpoint_store() is DatabaseCheckpoints


def test_every_command_the_apps_name_is_there() -> None:
    assert sorted(commands._handlers) == sorted([COMPACT_RUN, SETTINGS_REQUEST])
    for path in [*commands._handlers.values(), *commands._finders.values()]:
        assert callable(import_string(path)), path
