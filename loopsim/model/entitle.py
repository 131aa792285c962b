"""The entitlement model: W FLOPs and Q bytes against roofs P (FLOP/s) and BW (bytes/s).

T_best = max(W/P, Q/BW) (full overlap), T_worst = W/P + Q/BW (none), entitled rate
W/T_best = min(P, I*BW) with I = W/Q, ridge I* = P/BW. A kernel is compute-bound when
W/P >= Q/BW, decided exactly in integers (W*BW >= Q*P).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Generator, Mapping

from loopsim.base.errors import InputError
from loopsim.base.overlap import Overlap  # noqa: F401 (re-exported)


@dataclass(frozen=True, slots=True)
class Entitlement(Overlap):
    """W in FLOPs, Q in bytes, P in FLOP/s, BW in bytes/s; times in seconds."""

    W: int
    Q: int
    P: int | float
    BW: int | float

    def __post_init__(self) -> None:
        for name in ("W", "Q"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise InputError(f"{name}={v!r} must be a non-negative integer")
        for name in ("P", "BW"):
            v = getattr(self, name)
            if not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0):
                raise InputError(f"{name}={v!r} must be a positive number")

    @property
    def I(self) -> float:
        """Arithmetic intensity W/Q, FLOPs/byte (inf when Q = 0)."""
        return self.W / self.Q if self.Q else math.inf

    @property
    def ridge(self) -> float:
        """I* = P/BW, FLOPs/byte."""
        return self.P / self.BW

    @property
    def t_compute(self) -> float:
        return self.W / self.P

    @property
    def t_memory(self) -> float:
        return self.Q / self.BW

    @property
    def bound(self) -> str:
        """"compute" or "memory"; "none" when W = Q = 0 (no work: neither roof binds)."""
        if self.W == 0 and self.Q == 0:
            return "none"
        return "compute" if self.W * self.BW >= self.Q * self.P else "memory"

    @property
    def rate(self) -> float:
        """Entitled rate W/T_best = min(P, I*BW), FLOP/s; 0 when W = 0 (no FLOPs, no rate: never
        P, which I = inf would give when Q = 0 too)."""
        return min(self.P, self.I * self.BW) if self.W else 0.0

    def as_dict(self) -> dict:
        return {"W": self.W, "Q": self.Q, "I": self.I, "P": self.P, "BW": self.BW,
                "ridge": self.ridge, "T_compute": self.t_compute, "T_memory": self.t_memory,
                "T_best": self.T_best, "T_worst": self.T_worst, "rate": self.rate,
                "bound": self.bound}


def crossover(wq: Callable[[int], tuple[int, int]], P: int | float, BW: int | float,
              lo: int = 1, limit: int = 1 << 40, levels_off: float = 1e-3
              ) -> tuple[int, list[tuple[int, int, int]]]:
    """Smallest value v >= lo of a dimension at which the kernel is compute-bound.

    ``wq(v)`` returns (W, Q) at that value. Assumes compute-boundness is monotone in v (it is
    when W grows linearly and Q at most linearly with v); searches by doubling, then bisection.
    Gives up (InputError) when one doubling raises I = W/Q by less than ``levels_off`` (relative)
    while still memory-bound: I has levelled off below the ridge.
    Returns (v, [(value, W, Q) evaluated, in order]).
    """
    steps = crossover_steps(P, BW, lo, limit, levels_off)
    try:
        v = next(steps)
        while True:
            v = steps.send(wq(v))
    except StopIteration as e:
        return e.value


def crossover_steps(P: int | float, BW: int | float, lo: int = 1, limit: int = 1 << 40,
                    levels_off: float = 1e-3) -> Generator[int, tuple[int, int] | bool, tuple]:
    """:func:`crossover` as a generator: yields each value to evaluate, is sent its (W, Q), and
    returns (v, seen). Looking ahead, it may be sent a bool instead (a guess: compute-bound or
    not, W and Q unknown; no levelling-off check on a guess)."""
    seen: list[tuple[int, int, int]] = []

    def compute_bound(v: int, got) -> bool:
        if isinstance(got, bool):
            return got
        w, q = got
        seen.append((v, w, q))
        return w * BW >= q * P

    if compute_bound(lo, (yield lo)):
        return lo, seen
    good = lo
    while True:
        good *= 2
        if good > limit:
            raise InputError(f"the kernel stays memory-bound up to {limit:,}; no crossover")
        got = yield good
        if compute_bound(good, got):
            break
        if not isinstance(got, bool) and len(seen) >= 2 and seen[-2][0] == good // 2:
            (v0, w0, q0), (v1, w1, q1) = seen[-2], seen[-1]
            if q0 and q1 and w1 * q0 <= w0 * q1 * (1 + levels_off):
                raise InputError(
                    f"no crossover: doubling the dimension from {v0:,} to {v1:,} raised I = W/Q only "
                    f"from {w0 / q0:.4g} to {w1 / q1:.4g}, which levels off below the ridge P/BW = "
                    f"{P / BW:.4g}: the kernel stays memory-bound")
    bad = good // 2
    while good - bad > 1:
        mid = (good + bad) // 2
        if compute_bound(mid, (yield mid)):
            good = mid
        else:
            bad = mid
    return good, seen


def crossover_next(known: Mapping[int, tuple[int, int]], P: int | float, BW: int | float,
                   width: int = 1) -> list[int]:
    """Values :func:`crossover` evaluates next given the (W, Q) already ``known``: first the one
    it needs now, then, up to ``width`` in all, those it needs after it under each guess of the
    outcomes still unknown (memory-bound first). Empty when it needs nothing more."""

    def first_unknown(guess: Mapping[int, bool]) -> int | None:
        steps = crossover_steps(P, BW)
        try:
            v = next(steps)
            while v in known or v in guess:
                v = steps.send(known[v] if v in known else guess[v])
        except (StopIteration, InputError):
            return None
        return v

    out: list[int] = []
    queue = [{}]
    while queue and len(out) < width:
        guess = queue.pop(0)
        v = first_unknown(guess)
        if v is None:
            continue
        if v not in out:
            out.append(v)
        queue += [{**guess, v: False}, {**guess, v: True}]
    return out
