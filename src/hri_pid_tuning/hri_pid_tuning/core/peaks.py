"""Peak detection for oscillating signals (Webel's thesis §3.3.3, made robust to noise).

Two detectors:

* :func:`find_peaks_thesis` – the thesis's algorithm: decimate the samples (keep every
  ``decimation``-th), accept sample k as a peak when the decimated signal is monotonic over the
  offsets −m..+m around it (rising before, falling after for a maximum), drop consecutive peaks
  whose value is within ``duplicate_threshold`` of the previous one.
* :func:`find_peaks_hysteresis` – the noise-robust detector used by the relay tuner: a running
  extremum is confirmed as a peak once the signal has moved back from it by more than
  ``hysteresis`` (a Schmitt trigger on the derivative sign). Noise smaller than the hysteresis
  cannot create a peak, and maxima and minima alternate by construction.

Both return :class:`Peak` lists sorted by time with ``kind`` +1 (maximum) / −1 (minimum).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Peak:
    index: int
    t_s: float
    value: float
    kind: int  # +1 maximum, -1 minimum


def find_peaks_hysteresis(t_s: np.ndarray, x: np.ndarray, hysteresis: float) -> list[Peak]:
    """Alternating extrema of ``x`` separated by moves larger than ``hysteresis`` (same unit as x).

    A maximum at index i is reported when, after i, x drops below ``x[i] - hysteresis`` before
    exceeding ``x[i]``; symmetrically for minima. The last, unconfirmed extremum is not reported.
    """
    t_s = np.asarray(t_s, dtype=float)
    x = np.asarray(x, dtype=float)
    n = len(x)
    if n == 0:
        return []
    if hysteresis <= 0:
        raise ValueError("hysteresis must be > 0")
    peaks: list[Peak] = []
    direction = 0          # +1 searching a maximum, -1 searching a minimum, 0 unknown
    ext_i = 0
    lo_i = hi_i = 0
    for i in range(1, n):
        v = x[i]
        if direction == 0:
            if v > x[hi_i]:
                hi_i = i
            if v < x[lo_i]:
                lo_i = i
            if x[hi_i] - v > hysteresis and hi_i > lo_i:
                peaks.append(Peak(hi_i, float(t_s[hi_i]), float(x[hi_i]), +1))
                direction, ext_i = -1, i
            elif v - x[lo_i] > hysteresis and lo_i > hi_i:
                peaks.append(Peak(lo_i, float(t_s[lo_i]), float(x[lo_i]), -1))
                direction, ext_i = +1, i
            elif x[hi_i] - v > hysteresis:      # a fall from the start: the start is no peak
                direction, ext_i = -1, i
            elif v - x[lo_i] > hysteresis:
                direction, ext_i = +1, i
        elif direction == +1:
            if v > x[ext_i]:
                ext_i = i
            elif x[ext_i] - v > hysteresis:
                peaks.append(Peak(ext_i, float(t_s[ext_i]), float(x[ext_i]), +1))
                direction, ext_i = -1, i
        else:
            if v < x[ext_i]:
                ext_i = i
            elif v - x[ext_i] > hysteresis:
                peaks.append(Peak(ext_i, float(t_s[ext_i]), float(x[ext_i]), -1))
                direction, ext_i = +1, i
    return peaks


def find_peaks_thesis(t_s: np.ndarray, x: np.ndarray, decimation: int = 10, half_width: int = 2,
                      duplicate_threshold: float = 2.0) -> list[Peak]:
    """The thesis's detector (RoboyVR PeakAnalysis): decimation step ``decimation``, monotonic
    over offsets ``-half_width..+half_width`` decimated samples, duplicate threshold in x units."""
    t_s = np.asarray(t_s, dtype=float)
    x = np.asarray(x, dtype=float)
    idx = np.arange(0, len(x), max(1, int(decimation)))
    xd = x[idx]
    peaks: list[Peak] = []
    m = half_width
    for j in range(m, len(xd) - m):
        before = np.diff(xd[j - m:j + 1])
        after = np.diff(xd[j:j + m + 1])
        kind = 0
        if np.all(before > 0) and np.all(after < 0):
            kind = +1
        elif np.all(before < 0) and np.all(after > 0):
            kind = -1
        if kind == 0:
            continue
        if peaks and peaks[-1].kind == kind and abs(peaks[-1].value - xd[j]) < duplicate_threshold:
            continue
        i = int(idx[j])
        peaks.append(Peak(i, float(t_s[i]), float(x[i]), kind))
    return peaks
