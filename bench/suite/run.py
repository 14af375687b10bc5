#!/usr/bin/env python3
"""Wall time of the whole test suite (what `make test` runs after its build) by the number of
pytest-xdist workers, side by side in one run. Timing lives here, never in tests.

    .venv/bin/python bench/suite/run.py --jobs 2 3          # ~15 min on 2 cores

Each worker count runs ``python -m pytest -n N --dist loadfile`` in this checkout, one after the
other (in the order given, then reversed with ``--repeats 2``, so a drifting load hits each alike),
and prints its wall time, the CPU (user + sys of pytest and its children), the load average at the
end, the passed/failed/skipped counts and the ratio of its wall time to the first count's. A worker
count that fails any test is reported as such: a faster run that fails is no answer.
"""
from __future__ import annotations

import argparse
import os
import re
import resource
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from machine import load, machine  # noqa: E402

REPO = Path(__file__).resolve().parents[2]


def children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run(jobs: int) -> dict:
    cmd = [sys.executable, "-m", "pytest", "-n", str(jobs), "--dist", "loadfile", "-p", "no:cacheprovider"]
    c0, t0 = children_cpu(), time.monotonic()
    out = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True).stdout
    wall, cpu = time.monotonic() - t0, children_cpu() - c0
    counts = {k: int(n) for n, k in re.findall(r"(\d+) (passed|failed|skipped|error)", out.splitlines()[-1] if out else "")}
    return dict(jobs=jobs, wall=wall, cpu=cpu, load=load(), **counts)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--jobs", type=int, nargs="+", default=[os.cpu_count() or 1, (os.cpu_count() or 1) + 1],
                    help="worker counts to compare (default: the cores, and one more)")
    ap.add_argument("--repeats", type=int, default=1, help="rounds; every other round runs the counts in reverse")
    a = ap.parse_args(argv)
    if any(j < 1 for j in a.jobs) or a.repeats < 1:
        ap.error("--jobs and --repeats must be >= 1")
    from hri_runtime import provenance  # commit, version, build flags
    print(f"# provenance: {provenance.line()}")
    print(f"# machine: {machine()}")
    rows = []
    for r in range(a.repeats):
        for j in (a.jobs if r % 2 == 0 else list(reversed(a.jobs))):
            rows.append(run(j))
            x = rows[-1]
            print(f"  -n {j}: {x['wall']:.0f} s wall, {x['cpu']:.0f} s CPU, passed {x.get('passed', 0)}, "
                  f"failed {x.get('failed', 0) + x.get('error', 0)}, skipped {x.get('skipped', 0)}; {x['load']}", flush=True)
    base = min(x["wall"] for x in rows if x["jobs"] == a.jobs[0])
    print(f"{'workers':>8} {'best wall s':>12} {'CPU s':>8} {'failed':>7} {'x first':>8}")
    for j in a.jobs:
        mine = [x for x in rows if x["jobs"] == j]
        best = min(mine, key=lambda x: x["wall"])
        failed = sum(x.get("failed", 0) + x.get("error", 0) for x in mine)
        print(f"{j:>8} {best['wall']:>12.0f} {best['cpu']:>8.0f} {failed:>7} {best['wall'] / base:>8.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
