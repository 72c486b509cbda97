"""What dshweb says of a problem, by a code and its values, in one table.

The core, ``dsh web``'s client and the Compact button make the text of every problem a
person can meet here, :func:`say` (the code and its values give the English text the
logs, the API, the command line and the stored rows keep), and the pages word it in the
reader's language from the same code (``dshweb.words.said``, the one place that
translates them). A text kept as it was made (a fold checkpoint, a sealed session, a
compaction request's row, an error inside another's text) is read back to its code and
values by :func:`read_back`, so it too is worded in the reader's language, whenever it
was made. Values are what they are (paths, offsets, the library's or DSH's own words);
a value that is itself a said text (:data:`NESTED`) is worded in its turn.

Pure: no Django, no translation; every code here has its words in ``dshweb/words.py``
(``tests/core/test_said.py`` checks both tables and that each text reads back).
"""

from __future__ import annotations

import re
import string
from collections.abc import Mapping
from functools import cache

ENGLISH: Mapping[str, str] = {
    # A session log (dshweb/core/log/, dshweb/core/errors.py)
    "at-byte": "{problem} (at byte {offset})",
    "at-byte-seq": "{problem} (at byte {offset}, seq {seq})",
    "log-refused": "the log {reason}",
    "log-unreadable": "cannot read log: {error}",
    "log-replaced": "the log was replaced while it was read",
    "frame-corrupt": "corrupt zstd frame ({detail})",
    "frame-bad-magic": "not a zstd frame (bad magic)",
    "frame-reserved-bit": "not a zstd frame (reserved header bit set)",
    "frame-reserved-block": "corrupt zstd frame (reserved block type)",
    "frame-too-large": "frame larger than {limit} MiB (the limit)",
    "frame-decodes-too-much": "frame decodes to more than {limit} MiB (the limit)",
    "line-too-long": "line longer than {limit} MiB (the limit)",
    "line-malformed": "malformed JSON line",
    "line-malformed-why": "malformed JSON line ({detail})",
    "line-not-event": "line is not an event object",
    # A file of a DSH home (dshweb/core/files.py): why it is not read
    "file-kind": "is {kind}, not a regular file: dshweb does not read it",
    "kind-folder": "a folder",
    "kind-fifo": "a FIFO (named pipe)",
    "kind-character-device": "a character device",
    "kind-block-device": "a block device",
    "kind-socket": "a socket",
    "kind-link": "a symbolic link",
    "kind-other": "not a regular file",
    "file-denied": "cannot be read: permission denied",
    "file-unreadable": "cannot be read: {error}",
    "file-link": "is a symbolic link: dshweb does not follow links here",
    "file-link-in-home": "is a symbolic link: dshweb follows no link inside a DSH home",
    "file-outside-home": "is outside {home}: dshweb does not read it",
    "file-home-itself": "is the DSH home itself, not a file in it",
    "file-slow": "took longer than {seconds} s to read: dshweb gave up",
    "file-too-big": "is {size}; dshweb reads at most {limit} of such a file",
    # What the fold could not make sense of (dshweb/core/fold/meter.py), its settings
    "op-unknown": "seq {seq}: unknown surfaceOp {op} ignored",
    "replace-unpriced": (
        "seq {seq}: replace {start}..{end} does not match the priced range {low}..{high}"
    ),
    "replace-missing": "seq {seq}: replace {start}..{end} names a node not on the surface",
    "more-problems": "… and {count} more problems",
    "profile-unloadable": "DSH cannot load profile {profile}: {problem}",
    # The managed dsh web (dshweb/dsh_web/managed.py)
    "engine-not-started": "not started",
    "engine-launching": "launching dsh web",
    "engine-stopped": "stopped",
    "engine-no-dsh": "no dsh on PATH or beside this Python: {install}",
    "engine-no-home": "the DSH home {home} is not a directory",
    "engine-cannot-run": "cannot run {dsh}: {error}",
    "engine-exited-after": "dsh web {exit} after {seconds} s",
    "engine-exited-early": "dsh web {exit} before printing its URL",
    "engine-exited-early-said": "dsh web {exit} before printing its URL: {output}",
    "engine-no-url-in-time": "dsh web printed no launch URL within {seconds} s",
    "exit-code": "exited with code {code}",
    "exit-killed": "was killed by {signal}",
    "exit-signal": "was killed by signal {number}",
    # dsh web's client (dshweb/dsh_web/client.py)
    "url-malformed": "the launch URL is malformed (bad port or host)",
    "url-not-http": (
        "the launch URL must start with http:// (dsh web serves plain HTTP on loopback),"
        " not {scheme}"
    ),
    "url-not-loopback": (
        "the launch URL's host must be loopback (127.0.0.1, ::1 or localhost), not {host}"
    ),
    "url-no-token": "the launch URL has no ?token=… (copy the whole line dsh web printed)",
    "engine-late": "{base} did not answer within {seconds} s",
    "engine-stopped-answering": "{base} stopped answering while it ran {path}",
    "engine-hung": "{what} ({misses} checks in a row got no answer within {seconds} s; hung?)",
    "engine-no-connection": "{base} did not accept a connection",
    "engine-cannot-connect": "cannot connect to {base}: {reason}",
    "engine-broke-connection": "{base} broke the connection: {reason}",
    "engine-not-http": "{base} did not answer in HTTP ({error})",
    "engine-login-silent": "{problem}: dsh web accepts connections but does not answer (hung?)",
    "token-refused": (
        "dsh web refused the launch token (HTTP 401); it changes every time dsh web starts"
    ),
    "token-no-cookie": "the token login answered 303 without a dsh-auth cookie",
    "token-not-dsh": (
        "{base} answered the token login with HTTP {status}, not dsh web's 303 and cookie"
    ),
    "cookie-refused": "{method}: dsh web refused the session cookie (HTTP 401)",
    "answer-http": "{method}: HTTP {status}: {excerpt}",
    "answer-not-json": "{method}: the answer is not JSON: {excerpt}",
    "answer-not-dsh": "{method}: not a DSH server-response: {excerpt}",
    "check-refused": "DSH answered, but refused {error}",
    "check-no-items": "session/list answered without items",
    "check-lists": "DSH answered; it lists {count} sessions",
    "compact-abandoned-by-dsh": (
        "{problem}; dsh web abandons a /compact once nobody waits for it (the session log"
        " says how it ended)"
    ),
    "compact-no-command": "this session's agent has no /compact command",
    "compact-unexpected": "unexpected answer: {value}",
    "compact-ended-as": "/compact ended as {kind}",
    # Which dsh web the Compact button asks (dshweb/compaction/), and its requests
    "engine-not-configured": "not configured: {why}",
    "engine-none": "no DSH engine is configured (Settings → Engine)",
    "engine-no-url-stored": "no launch URL is stored",
    "engine-none-for-collector": (
        "the collector of this home has no DSH engine: set DSHWEB_ENGINE_URL or"
        " DSHWEB_ENGINE=managed in its environment"
    ),
    "engine-from-url-setting": "DSHWEB_ENGINE_URL (a launch URL)",
    "compact-already-running": "a compaction of {session} of {home} is already running",
    "compact-abandoned": (
        "dshweb stopped while this ran; the session log shows whether DSH folded it"
    ),
    "compact-dshweb-failed": "dshweb failed while asking the engine; see its log",
    "collector-unreachable": "the collector of {home} could not be reached: {failure}",
    "collector-never-started": "the collector of {home} is not running (never started)",
    "collector-gone": "the collector of {home} is not running (last seen {when} UTC, {age} s ago)",
    "collector-elsewhere": (
        "the collector of {home} runs in another process ({where}) and this one's channel"
        " layer is in memory: set DSHWEB_REDIS_URL on both"
    ),
    "no-channel-layer": "no channel layer is configured",
    # An alert's webhook and its deliveries (dshweb/alerts/)
    "webhook-not-url": "not a URL dshweb can post to",
    "webhook-no-host": "a webhook is an http:// or https:// URL with a host",
    "webhook-unknown-host": "the host {host} is not known",
    "webhook-internal": (
        "{host} is an internal address ({address}): a webhook goes to public addresses, or to"
        " hosts staff allow (DSHWEB_WEBHOOK_ALLOWED_HOSTS)"
    ),
    "post-timeout": "timeout",
    "post-no-answer": "no HTTP answer",
    "post-status": "HTTP {status}xx",
    "post-redirect": "HTTP {status}xx: redirects are not followed",
    "delivery-failed": "could not deliver ({problem})",
    "delivery-not-allowed": (
        "could not deliver (the address is not yours, nor in a domain allowed)"
    ),
    "delivery-mail-refused": "could not deliver (the mail server did not take it)",
    "delivery-unexpected": "could not deliver (unexpected {error})",
    "delivery-channel": "the channel layer did not take it: {error}",
}
"""Each code's English text, its values by name (``{name}``)."""

NESTED = frozenset(("problem", "reason", "kind", "exit", "what", "why", "failure"))
"""The values that are said texts themselves (worded in their turn)."""


def say(code: str, /, **values: object) -> str:
    """The English text of ``code`` with ``values``."""
    return ENGLISH[code].format(**values)


def names(code: str) -> frozenset[str]:
    """The names of ``code``'s values."""
    return frozenset(name for _, name, _, _ in string.Formatter().parse(ENGLISH[code]) if name)


def _pattern(template: str) -> re.Pattern[str]:
    pattern = []
    for literal, name, _, _ in string.Formatter().parse(template):
        pattern.append(re.escape(literal))
        if name:  # as short as the rest lets it be (the whole text must match)
            pattern.append(f"(?P<{name}>.*?)")
    return re.compile("".join(pattern), re.DOTALL)


def _literal(template: str) -> int:
    return sum(len(literal) for literal, _, _, _ in string.Formatter().parse(template))


@cache
def _patterns() -> list[tuple[str, re.Pattern[str], int]]:
    """Each code's pattern, made at the first :func:`read_back` (not at import: every
    process imports this, few read a text back)."""
    return [(code, _pattern(template), _literal(template)) for code, template in ENGLISH.items()]


def read_back(text: str) -> tuple[str, dict[str, str]] | None:
    """The code and values a text made by :func:`say` was made of, or None for another.

    Of the readings that fit, the one that explains the most of the text as said words
    (its own and those of the said texts among its values) wins: ``corrupt zstd frame
    (…) (at byte 9)`` is a frame's problem at a place, not a frame's problem whose
    detail ends in "(at byte 9)"."""
    best = _best(text)
    return None if best is None else best[1:]


def _best(text: str) -> tuple[int, str, dict[str, str]] | None:
    found: tuple[int, str, dict[str, str]] | None = None
    for code, pattern, literal in _patterns():
        match = pattern.fullmatch(text)
        if match is None:
            continue
        values = match.groupdict()
        score = literal + sum(
            inner[0]
            for name, value in values.items()
            if name in NESTED and (inner := _best(value)) is not None
        )
        if found is None or score > found[0]:
            found = (score, code, values)
    return found
