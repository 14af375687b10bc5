"""What a benchmark prints about where it ran: the machine and its load (the box is shared)."""
from __future__ import annotations

import os
import platform


def machine() -> str:
    cpu = "?"
    try:
        cpu = next(ln.split(":", 1)[1].strip() for ln in open("/proc/cpuinfo") if ln.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return f"{cpu}, {os.cpu_count()} CPUs, {platform.system()} {platform.release()}, Python {platform.python_version()}"


def load() -> str:
    return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())
