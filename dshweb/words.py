"""The names a person reads for DSH's own words: bands, the parts of the context, the kinds
of compaction, why there is no forecast; and the words of every problem dshweb says by a
code (``dshweb.core.said``: a log it cannot read, an engine that does not answer). One
table each, translated (``dshweb/locale``); the values the code, the API and the data-*
attributes use stay DSH's English words.

The Chinese band names read in the order of the pressure they name (充裕 < 适中 < 紧张 <
临界), one name per band on every page, alert and message (docs/development.md,
"Translations"); the line ``dsh-context-truth`` writes for the model keeps its own words
(``dshweb.core.settings.occupancy.text``).
"""

from __future__ import annotations

from collections.abc import Mapping

from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy

from dshweb.core.said import NESTED, read_back

BANDS = {
    "ample": pgettext_lazy("band", "ample"),
    "moderate": pgettext_lazy("band", "moderate"),
    "tight": pgettext_lazy("band", "tight"),
    "critical": pgettext_lazy("band", "critical"),
    "unknown": pgettext_lazy("band", "unknown"),
}

PARTS = {
    "system": pgettext_lazy("context part", "system"),
    "tools": pgettext_lazy("context part", "tools"),
    "messages": pgettext_lazy("context part", "messages"),
}

COMPACTION_KINDS = {
    "automatic": pgettext_lazy("fold kind", "automatic"),
    "manual": pgettext_lazy("fold kind", "manual"),
    "overflow": pgettext_lazy("fold kind", "overflow"),
    "prune": pgettext_lazy("fold kind", "prune"),
    "mixed": pgettext_lazy("fold kind", "several kinds"),
}

ENGINE_CHECKS = {
    "reachable": _("reachable"),
    "unreachable": _("unreachable"),
    "token_rejected": _("launch token refused"),
    "not_dsh": _("not DSH's engine"),
}
"""What a test of the engine's connection found (``ConnectionStatus``)."""

NO_FORECAST = {
    "no compaction point": _("no compaction point"),
    "too few steps": _("too few steps"),
    "not growing": _("not growing"),
    "idle": _("idle"),
    "unknown": _("unknown"),
}


def named(table: Mapping[str, object], value: object) -> str:
    """``value``'s name from ``table`` in the active language; a value the table does not
    know (a newer DSH's word) as it is."""
    key = str(value)
    return str(table.get(key, key))


PROBLEMS = {
    # A session log
    "at-byte": _("%(problem)s (at byte %(offset)s)"),
    "at-byte-seq": _("%(problem)s (at byte %(offset)s, seq %(seq)s)"),
    "log-refused": _("the log %(reason)s"),
    "log-unreadable": _("cannot read log: %(error)s"),
    "log-replaced": _("the log was replaced while it was read"),
    "frame-corrupt": _("corrupt zstd frame (%(detail)s)"),
    "frame-bad-magic": _("not a zstd frame (bad magic)"),
    "frame-reserved-bit": _("not a zstd frame (reserved header bit set)"),
    "frame-reserved-block": _("corrupt zstd frame (reserved block type)"),
    "frame-too-large": _("frame larger than %(limit)s MiB (the limit)"),
    "frame-decodes-too-much": _("frame decodes to more than %(limit)s MiB (the limit)"),
    "line-too-long": _("line longer than %(limit)s MiB (the limit)"),
    "line-malformed": _("malformed JSON line"),
    "line-malformed-why": _("malformed JSON line (%(detail)s)"),
    "line-not-event": _("line is not an event object"),
    # A file of a DSH home
    "file-kind": _("is %(kind)s, not a regular file: dshweb does not read it"),
    "kind-folder": _("a folder"),
    "kind-fifo": _("a FIFO (named pipe)"),
    "kind-character-device": _("a character device"),
    "kind-block-device": _("a block device"),
    "kind-socket": _("a socket"),
    "kind-link": _("a symbolic link"),
    "kind-other": _("not a regular file"),
    "file-denied": _("cannot be read: permission denied"),
    "file-unreadable": _("cannot be read: %(error)s"),
    "file-link": _("is a symbolic link: dshweb does not follow links here"),
    "file-link-in-home": _("is a symbolic link: dshweb follows no link inside a DSH home"),
    "file-outside-home": _("is outside %(home)s: dshweb does not read it"),
    "file-home-itself": _("is the DSH home itself, not a file in it"),
    "file-slow": _("took longer than %(seconds)s s to read: dshweb gave up"),
    "file-too-big": _("is %(size)s; dshweb reads at most %(limit)s of such a file"),
    # The fold, the profile
    "op-unknown": _("seq %(seq)s: unknown surfaceOp %(op)s ignored"),
    "replace-unpriced": _(
        "seq %(seq)s: replace %(start)s..%(end)s does not match the priced range %(low)s..%(high)s"
    ),
    "replace-missing": _("seq %(seq)s: replace %(start)s..%(end)s names a node not on the surface"),
    "more-problems": _("… and %(count)s more problems"),
    "profile-unloadable": _("DSH cannot load profile %(profile)s: %(problem)s"),
    # The managed dsh web
    "engine-not-started": _("not started"),
    "engine-launching": _("launching dsh web"),
    "engine-stopped": _("stopped"),
    "engine-no-dsh": _("no dsh on PATH or beside this Python: %(install)s"),
    "engine-no-home": _("the DSH home %(home)s is not a directory"),
    "engine-cannot-run": _("cannot run %(dsh)s: %(error)s"),
    "engine-exited-after": _("dsh web %(exit)s after %(seconds)s s"),
    "engine-exited-early": _("dsh web %(exit)s before printing its URL"),
    "engine-exited-early-said": _("dsh web %(exit)s before printing its URL: %(output)s"),
    "engine-no-url-in-time": _("dsh web printed no launch URL within %(seconds)s s"),
    "exit-code": _("exited with code %(code)s"),
    "exit-killed": _("was killed by %(signal)s"),
    "exit-signal": _("was killed by signal %(number)s"),
    # dsh web's client
    "url-malformed": _("the launch URL is malformed (bad port or host)"),
    "url-not-http": _(
        "the launch URL must start with http:// (dsh web serves plain HTTP on loopback),"
        " not %(scheme)s"
    ),
    "url-not-loopback": _(
        "the launch URL's host must be loopback (127.0.0.1, ::1 or localhost), not %(host)s"
    ),
    "url-no-token": _("the launch URL has no ?token=… (copy the whole line dsh web printed)"),
    "engine-late": _("%(base)s did not answer within %(seconds)s s"),
    "engine-stopped-answering": _("%(base)s stopped answering while it ran %(path)s"),
    "engine-hung": _(
        "%(what)s (%(misses)s checks in a row got no answer within %(seconds)s s; hung?)"
    ),
    "engine-no-connection": _("%(base)s did not accept a connection"),
    "engine-cannot-connect": _("cannot connect to %(base)s: %(reason)s"),
    "engine-broke-connection": _("%(base)s broke the connection: %(reason)s"),
    "engine-not-http": _("%(base)s did not answer in HTTP (%(error)s)"),
    "engine-login-silent": _(
        "%(problem)s: dsh web accepts connections but does not answer (hung?)"
    ),
    "token-refused": _(
        "dsh web refused the launch token (HTTP 401); it changes every time dsh web starts"
    ),
    "token-no-cookie": _("the token login answered 303 without a dsh-auth cookie"),
    "token-not-dsh": _(
        "%(base)s answered the token login with HTTP %(status)s, not dsh web's 303 and cookie"
    ),
    "cookie-refused": _("%(method)s: dsh web refused the session cookie (HTTP 401)"),
    "answer-http": _("%(method)s: HTTP %(status)s: %(excerpt)s"),
    "answer-not-json": _("%(method)s: the answer is not JSON: %(excerpt)s"),
    "answer-not-dsh": _("%(method)s: not a DSH server-response: %(excerpt)s"),
    "check-refused": _("DSH answered, but refused %(error)s"),
    "check-no-items": _("session/list answered without items"),
    "check-lists": _("DSH answered; it lists %(count)s sessions"),
    "compact-abandoned-by-dsh": _(
        "%(problem)s; dsh web abandons a /compact once nobody waits for it (the session log"
        " says how it ended)"
    ),
    "compact-no-command": _("this session's agent has no /compact command"),
    "compact-unexpected": _("unexpected answer: %(value)s"),
    "compact-ended-as": _("/compact ended as %(kind)s"),
    # Which dsh web the Compact button asks, and its requests
    "engine-not-configured": _("not configured: %(why)s"),
    "engine-none": _("no DSH engine is configured (Settings → Engine)"),
    "engine-no-url-stored": _("no launch URL is stored"),
    "engine-none-for-collector": _(
        "the collector of this home has no DSH engine: set DSHWEB_ENGINE_URL or"
        " DSHWEB_ENGINE=managed in its environment"
    ),
    "engine-from-url-setting": _("DSHWEB_ENGINE_URL (a launch URL)"),
    "compact-already-running": _("a compaction of %(session)s of %(home)s is already running"),
    "compact-abandoned": _(
        "dshweb stopped while this ran; the session log shows whether DSH folded it"
    ),
    "compact-dshweb-failed": _("dshweb failed while asking the engine; see its log"),
    "collector-unreachable": _("the collector of %(home)s could not be reached: %(failure)s"),
    "collector-never-started": _("the collector of %(home)s is not running (never started)"),
    "collector-gone": _(
        "the collector of %(home)s is not running (last seen %(when)s UTC, %(age)s s ago)"
    ),
    "collector-elsewhere": _(
        "the collector of %(home)s runs in another process (%(where)s) and this one's channel"
        " layer is in memory: set DSHWEB_REDIS_URL on both"
    ),
    "no-channel-layer": _("no channel layer is configured"),
    # An alert's webhook and its deliveries
    "webhook-not-url": _("not a URL dshweb can post to"),
    "webhook-no-host": _("a webhook is an http:// or https:// URL with a host"),
    "webhook-unknown-host": _("the host %(host)s is not known"),
    "webhook-internal": _(
        "%(host)s is an internal address (%(address)s): a webhook goes to public addresses, or"
        " to hosts staff allow (DSHWEB_WEBHOOK_ALLOWED_HOSTS)"
    ),
    "post-timeout": _("timeout"),
    "post-no-answer": _("no HTTP answer"),
    "post-status": _("HTTP %(status)sxx"),
    "post-redirect": _("HTTP %(status)sxx: redirects are not followed"),
    "delivery-failed": _("could not deliver (%(problem)s)"),
    "delivery-not-allowed": _(
        "could not deliver (the address is not yours, nor in a domain allowed)"
    ),
    "delivery-mail-refused": _("could not deliver (the mail server did not take it)"),
    "delivery-unexpected": _("could not deliver (unexpected %(error)s)"),
    "delivery-channel": _("the channel layer did not take it: %(error)s"),
}
"""The words of each problem's code (``dshweb.core.said``) in the active language."""


def said(text: object) -> str:
    """``text``, a problem said by ``dshweb.core.said.say``, in the active language (the
    values it holds that are said texts too, in their turn); any other text as it is."""
    text = str(text)
    found = read_back(text)
    if found is None or found[0] not in PROBLEMS:
        return text
    code, values = found
    worded = {name: said(value) if name in NESTED else value for name, value in values.items()}
    return str(PROBLEMS[code]) % worded
