"""`hri atomic demo` / `hri atomic plot`: MCAP, npz and CSV series to PNG."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from hri_runtime.config.tree import load_robot_config

from hri_atomic_motion import cli
from hri_atomic_motion.plot import load_series, read_mcap, save_series


def test_demo_writes_mcap_npz_png_and_plot_reads_each(tmp_path, capsys):
    assert cli.main(["demo", "--chain", "lockstep", "--sequence", "1,3r", "--gap-s", "2.2", "--out", str(tmp_path)]) == 0
    assert "movements 2, fault None" in capsys.readouterr().out
    for name in ("run.mcap", "run.npz", "timeline.png"):
        assert (tmp_path / name).stat().st_size > 1000
    topics = load_robot_config("tino")["atomic"]["topics"]
    s = read_mcap(tmp_path / "run.mcap", topics)
    tl = load_series(tmp_path / "run.npz", topics)
    assert s["state"][:, 1].max() == 3 and set(np.unique(s["state"][:, 1])) == {0, 1, 3}
    assert s["ticks"][:, 1].max() == pytest.approx(tl["ticks"][:, 1].max(), abs=5)
    assert s["angular_rad_s"][:, 1].min() == pytest.approx(-0.6)
    for src in ("run.mcap", "run.npz"):
        out = tmp_path / f"{src}.png"
        assert cli.main(["plot", str(tmp_path / src), "-o", str(out)]) == 0
        assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_plot_csv_and_missing_file(tmp_path):
    t = np.arange(100) * 0.01
    values = {"state": (t > 0.2) & (t < 0.6), "ticks": np.arange(100), "rpm_meas": 9.0, "rpm_cmd": 10.0,
              "linear_m_s": 0.1, "angular_rad_s": 0.0}
    csv = save_series({k: np.column_stack([t, np.broadcast_to(v, t.shape)]) for k, v in values.items()},
                      tmp_path / "run.csv")
    assert cli.main(["plot", str(csv)]) == 0 and (tmp_path / "run.png").is_file()
    assert cli.main(["plot", str(tmp_path / "nope.mcap")]) == 2
    for bad in ("x", "5", "1,,2", "3q"):
        assert cli.main(["demo", "--sequence", bad, "--out", str(tmp_path / "bad")]) == 2


def test_hri_dispatches_atomic():
    r = subprocess.run([sys.executable, "-m", "hri_runtime.cli.main", "atomic", "--help"], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0 and "plot" in r.stdout


def test_read_mcap_of_a_live_recording_layout(tmp_path):
    """What `hri record` writes from a launch: JointState with the home switch, wall-clock stamps,
    a malformed state JSON and a topic of the wrong type (skipped, not fatal)."""
    from hri_runtime import msgs
    from hri_runtime.bag.recording import McapWriter

    topics = load_robot_config("tino")["atomic"]["topics"]
    t0 = 1.7e9
    with McapWriter(tmp_path / "live.mcap") as w:
        for k in range(10):
            t = t0 + 0.005 * k
            w.write(topics["leg_state"], msgs.new("sensor_msgs/msg/JointState", name=["leg_home_switch", "leg"],
                                                  position=[1.0, 10.0 * k], velocity=[0.0, 50.0]), t_s=t)
            if k != 3:        # 9 typed states
                w.write(topics["atomic_state"], msgs.new("hri_interfaces/msg/AtomicState", state=3), t_s=t)
        w.write(topics["cmd_vel"], msgs.new("std_msgs/msg/String", data="wrong type"), t_s=t0)
    s = read_mcap(tmp_path / "live.mcap", topics)
    assert list(s["ticks"][:, 1]) == [10.0 * k for k in range(10)]
    assert set(s["rpm_meas"][:, 1]) == {50.0}
    assert len(s["state"]) == 9 and len(s["linear_m_s"]) == 0
