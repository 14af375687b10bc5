"""Config limits: time and peak memory of `hri config check` on hostile robot files.

Each case writes one robot file (extends fr3) into a copy of the shipped tree and runs
`python -m hri_runtime.cli.main config check <robot>` in a fresh process that reports its own peak
RSS; the shipped robot (fr3) is the baseline of the same run (ratios side by side). The old
reader's parse alone (PyYAML's pure-Python safe_load, which the tree used before) is timed on
the same text for the size class, capped at --old-cap-s.

    .venv/bin/python bench/config/run.py [--repeats 3] [--old-cap-s 30]
"""
from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

CASES = {
    "baseline_fr3": None,
    "size_10MB": "extends: fr3\n" + "# padding padding padding padding padding padding padding padding\n" * 160_000,
    "size_900kB_valid_comments": "extends: fr3\n" + "# padding padding padding padding padding padding\n" * 18_000,
    "nesting_5000": "extends: fr3\nrobot: {description: " + "[" * 5000 + "\n",
    "alias_bomb_1e7": "extends: fr3\nrobot:\n  a: &a [x, x, x, x, x, x, x, x, x, x]\n"
                      + "".join(f"  {c}: &{c} [{', '.join([f'*{p}'] * 10)}]\n" for p, c in zip("abcdef", "bcdefg")),
    "nodes_150k": "extends: fr3\njoints: {names: [" + "0," * 150_000 + "]}\n",
    "duplicate_key": "extends: fr3\nsafety:\n  ee_speed_max_m_s: 0.2\n  ee_speed_max_m_s: 0.3\n",
    "non_utf8": "extends: fr3\nrobot: {description: \"caf\xe9\"}\n",
}

PROBE = """
import resource, sys, time
t0 = time.perf_counter()
from hri_runtime.cli.main import main
try:
    rc = main(sys.argv[1:])
except SystemExit as e:
    rc = e.code
dt = time.perf_counter() - t0
print("BENCH", rc, dt, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)
"""


def _run(tree: Path, robot: str) -> tuple[int, float, float, float]:
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, "-c", PROBE, "config", "check", robot], cwd=tree.parent,
                       capture_output=True, text=True, timeout=600)
    wall = time.perf_counter() - t0
    line = [ln for ln in r.stderr.splitlines() if ln.startswith("BENCH")][-1].split()
    return int(line[1]), wall, float(line[2]), int(line[3]) / 1024.0


def _old_parse(text: str, q) -> None:
    import yaml

    t0 = time.perf_counter()
    yaml.load(text, Loader=yaml.SafeLoader)  # noqa: S506
    q.put(time.perf_counter() - t0)


def old_parse_s(text: str, cap_s: float) -> str:
    q = mp.get_context("spawn").Queue()
    p = mp.get_context("spawn").Process(target=_old_parse, args=(text, q))
    p.start()
    p.join(cap_s)
    if p.is_alive():
        p.kill()
        p.join()
        return f"> {cap_s:g}"
    return f"{q.get():.2f}"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--old-cap-s", type=float, default=30.0)
    a = ap.parse_args()
    from hri_runtime import provenance  # commit, version, build flags
    print(f"# provenance: {provenance.line()}")
    print(f"# load: {os.getloadavg()}  python {sys.version.split()[0]}  cpus {os.cpu_count()}")
    with tempfile.TemporaryDirectory() as d:
        tree = Path(d) / "config"
        shutil.copytree(REPO / "config", tree)
        rows = []
        base = None
        for name, text in CASES.items():
            robot = "fr3"
            if text is not None:
                robot = "bench_case"
                (tree / "robots" / "bench_case.yaml").write_bytes(text.encode("latin-1"))
            runs = [_run(tree, robot) for _ in range(a.repeats)]
            rc = runs[0][0]
            wall = min(r[1] for r in runs)
            inner = min(r[2] for r in runs)
            rss = max(r[3] for r in runs)
            base = base or inner
            size = len(text.encode("latin-1")) if text else (tree / "robots" / "fr3.yaml").stat().st_size
            rows.append({"case": name, "bytes": size, "rc": rc, "wall_s": round(wall, 3),
                         "in_process_s": round(inner, 3), "x_baseline": round(inner / base, 2),
                         "peak_rss_mib": round(rss, 1)})
        print("| case | file bytes | exit | wall s (process) | in-process s | × baseline | peak RSS MiB |")
        print("|---|---|---|---|---|---|---|")
        for r in rows:
            print(f"| {r['case']} | {r['bytes']} | {r['rc']} | {r['wall_s']} | {r['in_process_s']} | "
                  f"{r['x_baseline']} | {r['peak_rss_mib']} |")
        print(f"\nold reader (pure-Python safe_load) parse of size_10MB alone: {old_parse_s(CASES['size_10MB'], a.old_cap_s)} s")
        print(json.dumps(rows))


if __name__ == "__main__":
    main()
