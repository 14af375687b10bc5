"""Console PID-window commands mapped onto the hri_pid_tuning service API (a client, not a
second implementation): ``pid_apply`` -> ``PidConfigurationStorage.apply`` (acknowledged
transmission), ``pid_save`` -> ``save_json``, ``pid_record``/``pid_stop``/``pid_reset`` ->
``TestRunner`` manual recording/reset. Auto-tune rows (``heuristic``) are looked up in the
last auto-tune table supplied by the caller (``set_autotune_table``).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from .protocol import Command, Rejected


class PidBridge:
    """Dispatch ``pid_*`` console commands to a storage (and optional runner)."""

    def __init__(self, storage, runner=None, save_path: str | Path | None = None):
        self.storage = storage
        self.runner = runner
        self.save_path = Path(save_path) if save_path else None
        self.autotune_table: dict[int, dict[str, dict[str, float]]] = {}

    def set_autotune_table(self, joint: int, rows: dict[str, dict[str, float]]) -> None:
        """``rows``: heuristic name -> {kp, ki, kd, ...metrics} from the relay auto-tune."""
        self.autotune_table[joint] = dict(rows)

    def _joint_name(self, idx) -> str:
        if isinstance(idx, str):
            if idx not in self.storage.joints:
                raise Rejected("out_of_range", f"joint {idx!r} not in {self.storage.joints}")
            return idx
        try:
            return self.storage.joints[idx]
        except IndexError:
            raise Rejected("out_of_range", f"joint {idx} not in {self.storage.joints}") from None

    def dispatch(self, cmd: Command) -> Any:
        from hri_pid_tuning.core.pid import PIDGains

        a = cmd.args
        if cmd.type == "pid_apply":
            name = self._joint_name(a["joint"])
            if "heuristic" in a:
                row = self.autotune_table.get(a["joint"], {}).get(a["heuristic"])
                if row is None:
                    raise Rejected("bad_value", f"no auto-tune row {a['heuristic']!r} for joint {a['joint']}", cmd.id)
                gains = {k: float(row[k]) for k in ("kp", "ki", "kd")}
            else:
                cur = self.storage.local[name]
                gains = {"kp": cur.kp, "ki": cur.ki, "kd": cur.kd, **a["gains"]}
            try:
                ok = self.storage.apply(name, PIDGains(**gains))
            except ValueError as exc:
                raise Rejected("bad_value", str(exc), cmd.id) from None
            if not ok:
                raise Rejected("not_acknowledged", f"gain update for {name} not acknowledged", cmd.id)
            return {"joint": name, "gains": gains}
        if cmd.type == "pid_save":
            if self.save_path is None:
                raise Rejected("unavailable", "no save path configured", cmd.id)
            self.storage.save_json(self.save_path)
            return {"path": str(self.save_path)}
        if self.runner is None:
            raise Rejected("unavailable", f"{cmd.type}: no test runner attached", cmd.id)
        if cmd.type == "pid_record":
            self.runner.start_manual_record(f"joint{a['joint']}")
        elif cmd.type == "pid_stop":
            self.runner.stop_manual_record()
        elif cmd.type == "pid_reset":
            self.runner.reset_test_runner()
        else:
            raise Rejected("unavailable", f"{cmd.type} is not wired yet", cmd.id)
        return None

    def snapshot(self) -> dict:
        return {"pid": {
            "joints": list(self.storage.joints),
            "local": {j: g.to_dict() for j, g in self.storage.local.items()},
            "acknowledged": {j: (g.to_dict() if g else None) for j, g in self.storage.acknowledged.items()},
            "autotune": {str(k): v for k, v in self.autotune_table.items()},
        }}
