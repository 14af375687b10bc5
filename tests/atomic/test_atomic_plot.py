"""`hri atomic demo` / `hri atomic plot`: MCAP, npz and CSV timelines to PNG."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from hri_runtime.config import load_robot_config

from hri_atomic_motion import cli
from hri_atomic_motion.lockstep import load_timeline
from hri_atomic_motion.recording import read_mcap


def test_demo_writes_mcap_npz_png_and_plot_reads_each(tmp_path, capsys):
    assert cli.main(["demo", "--sequence", "1,3r", "--gap-s", "2.2", "--out", str(tmp_path)]) == 0
    assert "movements 2, fault None" in capsys.readouterr().out
    for name in ("run.mcap", "run.npz", "timeline.png"):
        assert (tmp_path / name).stat().st_size > 1000
    topics = load_robot_config("tino")["atomic"]["topics"]
    s = read_mcap(tmp_path / "run.mcap", topics)
    tl = load_timeline(tmp_path / "run.npz")
    assert s["state"][:, 1].max() == 3 and set(np.unique(s["state"][:, 1])) == {0, 1, 3}
    assert s["ticks"][:, 1].max() == pytest.approx(tl["ticks"].max(), abs=5)
    assert s["angular_rad_s"][:, 1].min() == pytest.approx(-0.6)
    for src in ("run.mcap", "run.npz"):
        out = tmp_path / f"{src}.png"
        assert cli.main(["plot", str(tmp_path / src), "-o", str(out)]) == 0
        assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_plot_csv_and_missing_file(tmp_path):
    from hri_atomic_motion.lockstep import Timeline

    tl = Timeline()
    for k in range(100):
        tl.append((k * 0.01, 1 if 20 < k < 60 else 0, k, 10.0, 9.0, 0.1, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0))
    csv = tl.save(tmp_path / "run.csv")
    assert cli.main(["plot", str(csv)]) == 0 and (tmp_path / "run.png").is_file()
    assert cli.main(["plot", str(tmp_path / "nope.mcap")]) == 2


def test_hri_dispatches_atomic():
    r = subprocess.run([sys.executable, "-m", "hri_runtime.cli", "atomic", "--help"], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0 and "plot" in r.stdout
