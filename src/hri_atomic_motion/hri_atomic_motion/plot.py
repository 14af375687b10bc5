"""Timeline plot of an atomic run: commanded state, leg ticks, motor RPM, base twist (PNG)."""
from __future__ import annotations

from pathlib import Path
from typing import Mapping

import numpy as np


def series_from_timeline(tl: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    t = tl["t_s"]
    return {k: np.column_stack([t, tl[k]]) for k in ("state", "ticks", "rpm_meas", "rpm_cmd", "linear_m_s", "angular_rad_s")}


def load_series(path: str | Path, topics: Mapping[str, str]) -> dict[str, np.ndarray]:
    path = Path(path)
    if path.suffix == ".mcap":
        from .recording import read_mcap

        return read_mcap(path, topics)
    from .lockstep import load_timeline

    return series_from_timeline(load_timeline(path))


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
