"""Numbers and units as people read them: SI prefixes, times. A leaf: imports nothing of loopsim."""

from __future__ import annotations

import math

_PREFIXES = ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1, ""), (1e-3, "m"), (1e-6, "µ"),
             (1e-9, "n"))


def si(x: float, unit: str) -> str:
    """``x`` with an SI prefix and 4 significant digits: si(3.2e-5, "s") == "32 µs"."""
    if x == 0:
        return f"0 {unit}"
    if not math.isfinite(x):
        return f"{x} {unit}"
    for f, p in _PREFIXES:
        if abs(x) >= f:
            return f"{x / f:.4g} {p}{unit}"
    return f"{x:.3g} {unit}"


def fmt_time(s: float | None) -> str:
    """Seconds with an SI prefix; "-" for None."""
    return "-" if s is None else si(s, "s")
