"""Write the benchmark home: one long session recorded by the real DSH runtime.

Usage: python bench/make_big_home.py [--events N] [--out DIR]
(default: at least 36,000 events into ``bench/data/big-home``, not committed).

The session is driven through the SDK against the tests' fake model on 127.0.0.1, at the
shape of a working day's agent session: most turns run a tool whose output is a few to a
few dozen kilobytes (file reads, test and build logs), answers think and talk at length,
and the 200k window folds every few dozen turns, so the log also holds prunes,
checkpoints and replaces. Expect about 2.5 kB of JSON per event (≈ 80 MB and more for
30,000 events). The stage folder (workspace and raw home) is under
``$DSHWEB_FIXTURE_STAGE`` or ``/tmp/dshweb-big-stage`` and is removed afterwards.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.fixtures.dshrun import (  # noqa: E402
    open_harness,
    session_logs,
    wait_projcache_flushed,
)
from tests.fixtures.fakemodel import FakeModel  # noqa: E402
from tests.fixtures.scenarios import expect_completed, write_profile_patch  # noqa: E402

DEFAULT_OUT = REPO / "bench" / "data" / "big-home"
STAGE = Path(os.environ.get("DSHWEB_FIXTURE_STAGE") or "/tmp/dshweb-big-stage")
SESSION = "big-session"

# threshold = min(200000 * 0.8, 200000 - 16000 - 16000) = 168000 tokens.
WINDOW = """\
- id: llm-deepseek
  config:
    models:
      - id: deepseek-flash
        contextWindow: 200000
        maxTokens: 16000
- id: compaction-basic
  config:
    headroomTokens: 16000
"""

_PARAGRAPH = (
    "The request path goes through the router, the auth middleware and the handler; "
    "the handler reads the order, checks the stock of every line and writes the "
    "reservation in one transaction. The slow part is the stock check, which asks the "
    "inventory service once per line instead of once per order. "
)
PROMPTS = (
    "!bash seq -f 'trace line %05g: span ok, 3 children, 12ms, upstream=orders-api' 1 240",
    "!read src/main.py",
    "!think " + _PARAGRAPH * 5,
    "!bash seq -f 'tests/test_orders.py::test_case_%04g PASSED' 1 220",
    "!say " + _PARAGRAPH * 6,
    "!read src/orders.py",
    "Looks fine, continue with the next module.",
    '!bash for i in $(seq 1 120); do echo "blob $i $(echo $i | sha256sum)"; done',
    "!bash seq -f 'build step %g: compiled module ok, 0 warnings, cache hit' 1 300",
)


def _source(name: str, functions: int) -> str:
    return "".join(
        f"def {name}_{i}(request, *, retries=3):\n"
        f'    """Handle {name} request {i}: validate, load, respond."""\n'
        f"    payload = validate(request.body, schema=SCHEMAS[{i}])\n"
        f"    return respond(load(payload, retries=retries), status=200)\n\n"
        for i in range(functions)
    )


def make_big_home(out: Path, events: int) -> None:
    if STAGE.exists():
        shutil.rmtree(STAGE)
    home, cwd = STAGE / "home", STAGE / "projects" / "big-repo"
    (cwd / "src").mkdir(parents=True)
    home.mkdir()
    (cwd / "src" / "main.py").write_text(_source("handler", 120), "utf-8")  # ~26 kB
    (cwd / "src" / "orders.py").write_text(_source("order", 60), "utf-8")  # ~13 kB
    write_profile_patch(home, WINDOW)
    started = time.monotonic()
    turns, last_seq = 0, -1
    with FakeModel() as fake, open_harness(home=home, cwd=cwd, base_url=fake.base_url) as harness:
        session = harness.start_session(SESSION)
        while last_seq + 1 < events:
            prompt = PROMPTS[turns % len(PROMPTS)]
            result = session.run(prompt)
            expect_completed(result, prompt)
            turns += 1
            last_seq = max([last_seq, *(int(e.get("seq", -1)) for e in result.events)])
            if turns % 100 == 0:
                rate = (last_seq + 1) / (time.monotonic() - started)
                print(f"  {turns} turns, {last_seq + 1} events, {rate:.0f} events/s", flush=True)
        if fake.errors:
            raise RuntimeError(f"fake model errors: {fake.errors}")
    wait_projcache_flushed(home, timeout=60)
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    for part in ("sessions", "profiles", "storages/session_projcache"):
        shutil.copytree(home / part, out / part)
    shutil.rmtree(STAGE)
    log = session_logs(out)[SESSION]
    raw = sum(len(str(e)) for e in log.events)  # rough: Python repr of each event
    print(
        f"wrote {out}: {len(log.events)} events in {turns} turns, "
        f"{log.path.stat().st_size / 1e6:.1f} MB on disk, ~{raw / 1e6:.0f} MB of events, "
        f"{time.monotonic() - started:.0f} s"
    )
    if len(log.events) < events:
        raise SystemExit(f"only {len(log.events)} events written, {events} asked")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--events", type=int, default=36_000)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args()
    make_big_home(args.out, args.events)


if __name__ == "__main__":
    main()
