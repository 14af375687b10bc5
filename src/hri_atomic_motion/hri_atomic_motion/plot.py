"""Timeline of an atomic run: the plot's series read from a recording (MCAP: ``hri atomic
demo``'s or ``hri record``'s of a live run), saved as ``.npz`` / ``.csv`` and plotted (PNG):
commanded state, leg ticks, motor RPM, base twist.

Topics (names from ``atomic.topics``; the atomic node publishes them):

* ``leg_state``  sensor_msgs/JointState  name [leg], position [ticks], velocity [measured motor RPM]
* ``leg_rpm``    std_msgs/Float64        commanded motor RPM (after the asymmetry scaling)
* ``cmd_vel``    geometry_msgs/Twist     base twist
* ``atomic_state`` hri_interfaces/AtomicState  state
"""
from __future__ import annotations

import csv
from pathlib import Path
from typing import Mapping

import numpy as np

TYPES = {"leg_state": "sensor_msgs/msg/JointState", "leg_rpm": "std_msgs/msg/Float64",
         "cmd_vel": "geometry_msgs/msg/Twist", "atomic_state": "hri_interfaces/msg/AtomicState"}
SERIES = ("state", "ticks", "rpm_meas", "rpm_cmd", "linear_m_s", "angular_rad_s")


def read_mcap(path: str | Path, topics: Mapping[str, str]) -> dict[str, np.ndarray]:
    """Series for the plot: ``{name: array (n, 2) of (t_s, value)}`` per quantity. Reads our
    demo files and live recordings (``hri record``); a message that does not parse is skipped."""
    from hri_runtime import msgs
    from hri_runtime.bag.recording import McapReader

    by_topic = {(v if v.startswith("/") else "/" + v): k for k, v in topics.items() if k in TYPES}   # as recorded: root-resolved
    series: dict[str, list] = {k: [] for k in SERIES}
    reader = McapReader(path)
    want = [t for t, typ in reader.topics().items() if t in by_topic and msgs.normalize(typ) == TYPES[by_topic[t]]]
    for m in reader.messages(want):
        key, t = by_topic[m.topic], m.t_s
        try:
            msg = m.msg
            if key == "leg_state":
                names = list(msg.name)
                i = names.index("leg") if "leg" in names else 0
                series["ticks"].append((t, float(msg.position[i])))
                if len(msg.velocity) > i:
                    series["rpm_meas"].append((t, float(msg.velocity[i])))
            elif key == "leg_rpm":
                series["rpm_cmd"].append((t, float(msg.data)))
            elif key == "cmd_vel":
                series["linear_m_s"].append((t, float(msg.linear.x)))
                series["angular_rad_s"].append((t, float(msg.angular.z)))
            else:
                series["state"].append((t, float(msg.state)))
        except (ValueError, KeyError, TypeError, IndexError, msgs.DecodeError):
            continue
    return {k: np.array(v, dtype=float).reshape(-1, 2) for k, v in series.items()}


def save_series(s: Mapping[str, np.ndarray], path: str | Path) -> Path:
    """The series as ``.npz`` (one (n, 2) array per quantity) or ``.csv`` (rows quantity, t_s, value)."""
    path = Path(path)
    if path.suffix == ".csv":
        with path.open("w", newline="") as f:
            w = csv.writer(f)
            w.writerow(("quantity", "t_s", "value"))
            w.writerows((k, *row) for k in SERIES for row in s[k].tolist())
    else:
        np.savez(path, **{k: s[k] for k in SERIES})
    return path


def load_series(path: str | Path, topics: Mapping[str, str]) -> dict[str, np.ndarray]:
    """The series of a run: ``.mcap`` (:func:`read_mcap`), ``.npz`` or ``.csv`` (:func:`save_series`)."""
    path = Path(path)
    if path.suffix == ".mcap":
        return read_mcap(path, topics)
    if path.suffix == ".csv":
        rows: dict[str, list] = {k: [] for k in SERIES}
        with path.open(newline="") as f:
            for q, t, v in list(csv.reader(f))[1:]:
                rows[q].append((float(t), float(v)))
        return {k: np.array(v, dtype=float).reshape(-1, 2) for k, v in rows.items()}
    with np.load(path) as z:
        return {k: z[k] for k in SERIES}


def plot_series(s: Mapping[str, np.ndarray], out: str | Path, leg: Mapping | None = None, title: str = "") -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    firsts = [v[0, 0] for v in s.values() if len(v)]
    t0 = min(firsts) if firsts else 0.0          # a live recording has wall-clock stamps: plot from its start
    s = {k: (np.column_stack([v[:, 0] - t0, v[:, 1]]) if len(v) else v) for k, v in s.items()}
    fig, ax = plt.subplots(4, 1, sharex=True, figsize=(10, 9))
    if len(s["state"]):
        ax[0].step(s["state"][:, 0], s["state"][:, 1], where="post")
    ax[0].set_ylabel("state")
    ax[0].set_yticks([0, 1, 2, 3])
    ax[1].plot(s["ticks"][:, 0], s["ticks"][:, 1], label="encoder")
    if leg:
        n, tol = leg["neutral_ticks"], leg["tolerance_ticks"]
        ax[1].axhspan(n - tol, n + tol, color="g", alpha=0.15, label=f"neutral ±{tol}")
        ax[1].axhline(leg["max_extension_ticks"], color="r", ls="--", lw=0.8, label="max extension")
    ax[1].set_ylabel("leg [ticks]")
    ax[1].legend(loc="upper right", fontsize=8)
    ax[2].plot(s["rpm_cmd"][:, 0], s["rpm_cmd"][:, 1], label="command (scaled)")
    if len(s["rpm_meas"]):
        ax[2].plot(s["rpm_meas"][:, 0], s["rpm_meas"][:, 1], label="measured", alpha=0.8)
    ax[2].set_ylabel("motor [RPM]")
    ax[2].legend(loc="upper right", fontsize=8)
    ax[3].plot(s["linear_m_s"][:, 0], s["linear_m_s"][:, 1], label="linear.x [m/s]")
    ax[3].plot(s["angular_rad_s"][:, 0], s["angular_rad_s"][:, 1], label="angular.z [rad/s]")
    ax[3].set_ylabel("base twist")
    ax[3].set_xlabel("t [s] from the first sample")
    ax[3].legend(loc="upper right", fontsize=8)
    for a in ax:
        a.grid(alpha=0.3)
    fig.suptitle(title or "atomic movement timeline")
    fig.tight_layout()
    out = Path(out)
    fig.savefig(out, dpi=100)
    plt.close(fig)
    return out
