"""Whether the parity families still catch a wrong value: one mutation each, run.

Usage: .venv/bin/python scripts/oracles.py [NAME ...]

Each parity family (tests/core/fold/test_parity.py and its kin) folds whole real logs in
one test per session or home and compares every checkpoint inside it. This script clones
the committed tree (HEAD) to a scratch folder, breaks one value the family guards (a
single seq, a single step row, one reader, one state restored), runs the family's tests
on it with this checkout's .venv, and prints how many of them failed and the first
difference they reported. It fails when a mutation left every test of its family
passing, or when the unmutated family fails. A mutation whose code moved fails loudly:
change its text here with the code.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PYTHON = REPO / ".venv" / "bin" / "python"


@dataclass(frozen=True)
class Mutation:
    family: str
    tests: str
    path: str
    old: str
    new: str


_STEP_BAND_NOT_RESTORED = (
    "dshweb/core/fold/checkpoint.py",
    "    tracker.step_band = state.step_band\n",
    "",
)
"""Both restart families' mutation: a restored tracker without its step band."""

MUTATIONS = {
    "parity": Mutation(
        "the host's projections at every checkpoint",
        "tests/core/fold/test_parity.py::test_a_session_folds_as_the_host_answered",
        "dshweb/core/fold/meter.py",
        '        if op == "append":\n            self.surface_tokens += price\n',
        '        if op == "append":\n'
        "            self.surface_tokens += price + (1 if seq == 7 else 0)\n",
    ),
    "steps": Mutation(
        "the step export against the fold, the dashboard and the host",
        "tests/core/fold/test_steps.py::"
        "test_every_step_agrees_with_the_fold_and_with_the_host_where_it_spoke",
        "dshweb/core/fold/steps.py",
        "                meter.projected_tokens,\n",
        "                meter.projected_tokens + (1 if count == 3 else 0),\n",
    ),
    "byte splits": Mutation(
        "a log read in random pieces against one whole read",
        "tests/core/fold/test_fold.py::test_random_byte_splits_give_the_same_state",
        "dshweb/core/log/reader.py",
        "        self.pending = handle.tell() - self.offset  # read to the end: a frame not"
        " whole yet\n",
        "        self.offset = handle.tell()\n",
    ),
    "slices": Mutation(
        "a log read in budgeted slices against one read",
        "tests/core/log/test_slices.py::test_every_real_log_read_in_slices_folds_as_read_at_once",
        "dshweb/core/log/reader.py",
        "            rest = self._fold_lines(held.lines, on_event, batch, False, budget)\n",
        "            next(held.lines, None)\n"
        "            rest = self._fold_lines(held.lines, on_event, batch, False, budget)\n",
    ),
    "restart anywhere": Mutation(
        "a checkpoint taken anywhere, folded on, against a cold fold",
        "tests/core/fold/test_checkpoint.py::test_restart_anywhere_folds_like_a_cold_fold",
        *_STEP_BAND_NOT_RESTORED,
    ),
    "hub restart": Mutation(
        "the hub restarted from its checkpoints against a cold hub",
        "tests/live/test_hub.py::test_a_restart_resumes_from_the_checkpoints_and_equals_a_cold_fold",
        *_STEP_BAND_NOT_RESTORED,
    ),
    "five readers": Mutation(
        "the point and band of the page, API, /metrics, steps.csv and dsh_snapshot",
        "tests/api/test_one_rule.py::test_the_five_readers_agree_on_the_point_and_the_band",
        "dshweb/api/metrics.py",
        '        "threshold_tokens": gauge.threshold,\n',
        '        "threshold_tokens": gauge.threshold and gauge.threshold + 1,\n',
    ),
}


def _pytest(tree: Path, tests: str) -> tuple[int, int, str]:
    """(failed, passed, the first reported difference) of ``tests`` run in ``tree``."""
    done = subprocess.run(
        [str(PYTHON), "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "2", "--tb=short",
         "--timing-tests=skip", tests],
        cwd=tree, capture_output=True, text=True, check=False, timeout=1800,
    )  # fmt: skip
    out = done.stdout
    counts = {
        k: int(n) for n, k in re.findall(r"(\d+) (failed|passed)", "".join(out.splitlines()[-1:]))
    }
    first = next(
        (
            line.strip()
            for line in out.splitlines()
            if re.search(r"\bseq \d|AssertionError|: (ours|restored|sliced|pieces)\b", line)
        ),
        "",
    )
    return counts.get("failed", 0), counts.get("passed", 0), first


def main(names: list[str]) -> int:
    unknown = [n for n in names if n not in MUTATIONS]
    if unknown:
        print(f"no mutation named {', '.join(unknown)}; there are: {', '.join(MUTATIONS)}")
        return 2
    bad = 0
    with tempfile.TemporaryDirectory(prefix="dshweb-oracles-") as scratch:
        tree = Path(scratch) / "tree"
        subprocess.run(["git", "clone", "-q", "--shared", str(REPO), str(tree)], check=True)
        for name in names or list(MUTATIONS):
            mutation = MUTATIONS[name]
            target = tree / mutation.path
            text = target.read_text()
            if text.count(mutation.old) != 1:
                print(f"{name}: the code it mutates is not in {mutation.path} once: update it")
                bad += 1
                continue
            failed, passed, _ = _pytest(tree, mutation.tests)
            if failed or not passed:
                print(f"{name}: fails unmutated ({failed} failed, {passed} passed)")
                bad += 1
                continue
            target.write_text(text.replace(mutation.old, mutation.new))
            try:
                failed, passed, first = _pytest(tree, mutation.tests)
            finally:
                target.write_text(text)
            print(f"{name} ({mutation.family}): {failed} of {failed + passed} failed")
            made = mutation.new.strip() or f"(removed) {mutation.old.strip()}"
            print(f"    {mutation.path}: {made}")
            print(f"    first said: {first[:200]}")
            if not failed:
                bad += 1
    print("every family caught its mutation" if not bad else f"{bad} left a mutation uncaught")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
