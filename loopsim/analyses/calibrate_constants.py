"""Calibrated timeline constants: fit the constants the engine timeline rests on to measured times.

The verdict's time T of a kernel is the largest of its roofs and ceilings, the engine timeline's
makespan among them (:mod:`loopsim.targets.neuron.timeline`). The timeline rests on a few
constants of the sheet (:data:`loopsim.targets.neuron.sheet.CALIBRATABLE`): the DMA fixed cost per
transfer (``dma_fixed_ns``), the DMA engines' peak (``dma_core_bw``; its [dma] throughput curve, the
efficiency by bytes per partition, keeps its shape and scales with it), the shortest engine
instruction (``engine_min_cycles``), the Tensor Engine's fill (``te_fill_cycles``) and its
shortest matmul (``mm_init_cycles``). Each measurement's predicted time is T_i(c), the whole
pipeline run on the sheet with constants c (:meth:`NeuronCore.with_constants`): nothing here
re-implements the timeline.

**The fit.** Least squares in relative time, sum_i (T_i(c) / t_i - 1)^2, by Gauss-Newton on
finite differences of the exact T_i (T is piecewise linear in the fixed costs and cycles and in
the DMA engines' seconds per byte, the coordinate the fit moves for ``dma_core_bw``; within one
linear piece a step lands on the minimum), with step halving when a step does not lower the error,
and the values rounded to the sheet's integers at the end.

**Choosing the constants.** A constant no measurement's time moves with (T_i unchanged when the
constant is divided or multiplied by 4) is *unconstrained*: it keeps the sheet value, and a
warning says so (no small-transfer kernel: the DMA fixed cost stays the sheet's). The others are
fitted together, then dropped one at a time, backward: each round returns to its sheet value the
constant whose loss raises the in-sample RMS error least (the rest refitted), unless keeping it
cuts the error to :data:`GAIN` times the error without it or less (a constant fitted to noise is
not a finding). A constant whose time-derivatives are a multiple of a fitted one's cannot be told
apart from it (a warning). Constants not chosen keep
the sheet value and say so; nothing is called fitted that came from the sheet.

**Leave-one-out**: the fitted constants are refitted without each measurement in turn (from the
fit's values, the choice of constants kept) and predict it.

Units: seconds; constants in their sheet units (ns, cycles, bytes/s).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from loopsim.base.errors import InputError

__all__ = ["Constant", "ConstantRow", "ConstantsFit", "fit", "GAIN", "Evaluator"]

#: a further constant must cut the in-sample RMS error at least by this factor to be fitted
GAIN = 0.5
#: in-sample RMS errors this small count as exact (a fit that reproduces every time)
EXACT = 1e-9
#: relative change of a time below which a constant is taken not to move it
MOVES = 1e-9
#: Gauss-Newton iterations at most per fit
ITERATIONS = 25


@dataclass(frozen=True, slots=True)
class Constant:
    """One calibratable constant: its sheet value, the value the fit gives it and whether it was
    fitted. ``status``: ``fitted``; ``kept`` (the data constrain it, but fitting it did not cut the
    error enough, or the sheet value already fits); ``unconstrained`` (no measurement's time moves
    with it); ``inseparable`` (its effect is a multiple of a fitted constant's). ``why``: a sentence."""

    name: str
    key: str  # the sheet key holding it (timeline.dma_fixed_ns, dma.core_bw, ...)
    unit: str
    sheet_value: int
    value: int
    status: str
    why: str

    @property
    def fitted(self) -> bool:
        return self.status == "fitted"

    def as_dict(self) -> dict:
        return {"name": self.name, "key": self.key, "unit": self.unit, "sheet_value": self.sheet_value,
                "value": self.value, "fitted": self.fitted, "status": self.status, "why": self.why,
                "over_sheet": self.value / self.sheet_value if self.sheet_value else None}


@dataclass(frozen=True, slots=True)
class ConstantRow:
    """A measurement under the fitted constants (``predicted_s``) and the sheet's (``sheet_s``)."""

    label: str
    time_s: float
    predicted_s: float
    sheet_s: float
    loo_predicted_s: float | None

    @property
    def ratio(self) -> float:
        return self.predicted_s / self.time_s

    @property
    def residual(self) -> float:
        return self.ratio - 1

    @property
    def loo_error(self) -> float | None:
        return None if self.loo_predicted_s is None else self.loo_predicted_s / self.time_s - 1

    def as_dict(self) -> dict:
        return {"label": self.label, "time_s": self.time_s, "predicted_s": self.predicted_s,
                "ratio": self.ratio, "residual": self.residual, "sheet_predicted_s": self.sheet_s,
                "loo_predicted_s": self.loo_predicted_s, "loo_error": self.loo_error}


@dataclass(frozen=True, slots=True)
class ConstantsFit:
    """The timeline's constants fitted to measurements on ``hardware`` (see the module docstring)."""

    hardware: str
    constants: tuple[Constant, ...]
    rows: tuple[ConstantRow, ...]
    evaluations: int
    warnings: tuple[str, ...] = ()

    @property
    def fitted(self) -> tuple[Constant, ...]:
        return tuple(c for c in self.constants if c.fitted)

    def values(self) -> dict[str, int]:
        """Every constant's value under the fit (fitted or kept), by name."""
        return {c.name: c.value for c in self.constants}

    @property
    def rms(self) -> float:
        return math.sqrt(sum(r.residual ** 2 for r in self.rows) / len(self.rows))

    @property
    def sheet_rms(self) -> float:
        return math.sqrt(sum((r.sheet_s / r.time_s - 1) ** 2 for r in self.rows) / len(self.rows))

    @property
    def loo_max(self) -> float | None:
        e = [abs(r.loo_error) for r in self.rows if r.loo_error is not None]
        return max(e) if e else None

    @property
    def loo_rms(self) -> float | None:
        e = [r.loo_error for r in self.rows if r.loo_error is not None]
        return math.sqrt(sum(x * x for x in e) / len(e)) if e else None

    def as_dict(self) -> dict:
        return {"model": "T = the verdict's time (the engine timeline among the roofs and ceilings) "
                         "with the sheet's timeline constants fitted by least squares in relative time",
                "constants": {c.name: c.as_dict() for c in self.constants},
                "fitted": [c.name for c in self.fitted],
                "measurements": [r.as_dict() for r in self.rows], "rms_error": self.rms,
                "sheet_rms_error": self.sheet_rms, "loo_max_error": self.loo_max,
                "loo_rms_error": self.loo_rms, "timeline_runs": self.evaluations,
                "warnings": list(self.warnings)}


# ---------------------------------------------------------------------------------------------
# T_i(c): the pipeline on the sheet with constants c


def kernel_options(inputs) -> dict | None:
    """A kernel file's inputs as a measurement gives them, ``(args, kwargs, grid)`` in the CLI's
    grammar (``("lhsT=1024x4096",)``, ``("TC=1024",)``, ``"2"``), as
    :func:`loopsim.model.pipeline.load`'s ``kernel_args``; None for None."""
    if inputs is None:
        return None
    from loopsim.frontends.nki.load import parse_options

    args, kwargs, grid = inputs
    return parse_options(args, kwargs, grid)


class Evaluator:
    """The verdict's time of each measured kernel on ``hw`` with given constants, memoised.
    ``kernels``: (label, spec reference, sets, dtype or None[, a kernel file's inputs or None])
    per measurement (the inputs: :func:`kernel_options`)."""

    def __init__(self, kernels, hw):
        from loopsim.model import pipeline

        self._pipeline = pipeline
        self.hw = hw.with_roofs("spec")
        kernels = [(*k, None) if len(k) == 4 else tuple(k) for k in kernels]
        self.labels = [k[0] for k in kernels]
        self.progs = [pipeline.load(ref, dict(sets), kernel_args=kernel_options(inputs))
                      for _, ref, sets, _, inputs in kernels]
        self.dtypes = [k[3] for k in kernels]
        # one memo per distinct kernel: two measurements of one nest share its runs
        first: dict = {}
        self.kid = [first.setdefault((ref, tuple(sets), dt, inputs), i)
                    for i, (_, ref, sets, dt, inputs) in enumerate(kernels)]
        self.memo: dict = {}
        self.runs = 0
        self.sheet = self.hw.constants()

    def __len__(self) -> int:
        return len(self.progs)

    def T(self, i: int, values: dict[str, int]) -> float:
        key = (self.kid[i], tuple(sorted(values.items())))
        t = self.memo.get(key)
        if t is None:
            a = self._pipeline.analyze(self.progs[i], self.hw.with_constants(values), dtype=self.dtypes[i])
            t = self.memo[key] = float(a.T)
            self.runs += 1
        return t

    def times(self, idx, values) -> np.ndarray:
        return np.array([self.T(i, values) for i in idx])


# internal coordinates: the DMA peak moves as seconds per byte (T is linear in it), the rest as is
_BW = "dma_core_bw"


def _to_u(name: str, v: float) -> float:
    return 1e12 / v if name == _BW else float(v)


def _to_v(name: str, u: float) -> int:
    if name == _BW:
        return max(1, round(1e12 / max(u, 1e-12)))
    return max(0, round(u))


#: the search range of a constant: 0 .. RANGE x its sheet value (the DMA peak: sheet / RANGE ..
#: RANGE x sheet); a fitted value at an end of it says so
RANGE = 64


def _range(name: str, sheet_value: int) -> tuple[float, float]:
    """(low, high) of ``name``'s internal coordinate (see :data:`RANGE`)."""
    if name == _BW:
        return _to_u(name, sheet_value * RANGE), _to_u(name, max(1, sheet_value // RANGE))
    return 0.0, float(max(RANGE * sheet_value, 4096))


def _values(base: dict, names, u) -> dict:
    out = dict(base)
    for n, x in zip(names, u):
        out[n] = _to_v(n, x)
    return out


def _rms(T, t) -> float:
    return float(np.sqrt(np.mean((T / t - 1) ** 2)))


def _moves(ev: Evaluator, idx, base: dict, name: str) -> bool:
    """Whether any measurement's time changes when ``name`` is divided or multiplied by 4."""
    t0 = ev.times(idx, base)
    v = base[name]
    for w in (max(1, v // 4), max(v * 4, 64)):
        if w == v:
            continue
        t1 = ev.times(idx, {**base, name: w})
        if np.any(np.abs(t1 / t0 - 1) > MOVES):
            return True
    return False


def _solve(ev: Evaluator, idx, t, base: dict, names: list[str]) -> tuple[dict, float]:
    """Gauss-Newton over ``names`` (the rest at ``base``): (values, in-sample RMS error)."""
    cur = dict(base)
    lo, hi = (np.array(x) for x in zip(*(_range(n, ev.sheet[n]) for n in names)))
    T = ev.times(idx, cur)
    err = _rms(T, t)
    for _ in range(ITERATIONS):
        if err < EXACT:
            break
        u = np.array([_to_u(n, cur[n]) for n in names])  # the point T was taken at
        J = np.empty((len(idx), len(names)))
        for k, n in enumerate(names):
            uk = u.copy()
            uk[k] += max(1.0, 0.02 * abs(u[k])) if n != _BW else 0.02 * abs(u[k])
            vk = _values(base, names, uk)
            vk.update({m: cur[m] for m in names if m != n})
            J[:, k] = (ev.times(idx, vk) - T) / (_to_u(n, vk[n]) - u[k]) / t
        r = T / t - 1
        scale = np.maximum(np.abs(u), 1.0)
        step, *_ = np.linalg.lstsq(J * scale, -r, rcond=1e-10)
        step *= scale
        alpha, moved = 1.0, False
        while alpha >= 1 / 64:
            vn = _values(base, names, np.clip(u + alpha * step, lo, hi))
            if vn == cur:
                break
            Tn = ev.times(idx, vn)
            en = _rms(Tn, t)
            if en < err:
                cur, T, err, moved = vn, Tn, en, True
                break
            alpha /= 2
        if not moved:
            break
    return cur, err


def _choose(ev: Evaluator, idx, t, sheet: dict, names: list[str]):
    """(values, fitted names, unconstrained names, inseparable (name, like) pairs): the choice of
    the module docstring over ``names`` on measurements ``idx``."""
    free = [n for n in names if _moves(ev, idx, sheet, n)]
    unconstrained = [n for n in names if n not in free]
    err0 = _rms(ev.times(idx, sheet), t)
    if err0 < EXACT or not free:
        return dict(sheet), [], unconstrained, []
    cur, err = _solve(ev, idx, t, sheet, free)
    chosen = [n for n in free if cur[n] != sheet[n]]
    # backward: drop the constant whose removal costs least, while keeping it does not cut the
    # error to GAIN x the error without it
    while chosen:
        best = None
        for n in chosen:
            rest = [m for m in chosen if m != n]
            base = {**cur, n: sheet[n]}
            vals, e = _solve(ev, idx, t, base, rest) if rest else (base, _rms(ev.times(idx, base), t))
            if best is None or e < best[2]:
                best = (n, vals, e)
        if err <= GAIN * best[2] - EXACT:
            break
        chosen.remove(best[0])
        cur, err = best[1], best[2]
    inseparable = _inseparable(ev, idx, t, cur, chosen, [n for n in free if n not in chosen])
    return cur, chosen, unconstrained, inseparable


def _inseparable(ev, idx, t, cur, chosen, rest) -> list[tuple[str, str]]:
    """(constant, fitted constant) pairs whose relative time-derivatives over the measurements are
    parallel (cosine above 1 - 1e-9): the data cannot tell them apart."""
    if not chosen or not rest:
        return []

    def grad(n):
        v = cur[n]
        w = max(1, round(v * 0.98)) if n == _BW else v + max(1, round(0.02 * v))
        return (ev.times(idx, {**cur, n: w}) - ev.times(idx, cur)) / t

    g = {n: grad(n) for n in chosen + rest}
    out = []
    for n in rest:
        for c in chosen:
            a, b = g[n], g[c]
            na, nb = np.linalg.norm(a), np.linalg.norm(b)
            if na and nb and abs(a @ b) / (na * nb) > 1 - 1e-9:
                out.append((n, c))
                break
    return out


def fit(kernels, times, hw, *, names=None, loo: bool = True) -> ConstantsFit:
    """Fit ``hw``'s calibratable constants (``names``, default every one the sheet gives) to
    measured ``times`` (seconds) of ``kernels`` ((label, spec, sets, dtype) each): see the module
    docstring. ``loo``: the leave-one-out refits too."""
    from loopsim.targets.neuron.sheet import CALIBRATABLE

    if not hasattr(hw, "constants"):
        raise InputError(f"calibrate: {hw.name} has no timeline constants to fit (family {hw.family})")
    sheet = hw.constants()
    if names is None:
        names = list(sheet)
    for n in names:
        if n not in CALIBRATABLE:
            raise InputError(f"calibrate: --constants {n!r} is not a calibratable constant; known: "
                             f"{', '.join(CALIBRATABLE)}")
        if n not in sheet:
            raise InputError(f"calibrate: --constants {n!r}: {hw.name} does not give it "
                             f"({CALIBRATABLE[n][0]}), so there is no timeline value to fit")
    ev = Evaluator(kernels, hw)
    t = np.array([float(x) for x in times])
    idx = list(range(len(ev)))
    vals, chosen, unconstrained, insep = _choose(ev, idx, t, sheet, list(names))
    T = ev.times(idx, vals)
    T0 = ev.times(idx, sheet)
    loo_T = [None] * len(idx)
    if loo and len(idx) > 1:
        for i in idx:  # the chosen constants refitted without measurement i, from the fit's values
            rest = [j for j in idx if j != i]
            lv, _ = _solve(ev, rest, t[rest], vals, chosen) if chosen else (vals, 0.0)
            loo_T[i] = ev.T(i, lv)
    rows = tuple(ConstantRow(ev.labels[i], float(t[i]), float(T[i]), float(T0[i]), loo_T[i]) for i in idx)
    insep_of = dict(insep)
    consts, warn = [], []
    labels = ", ".join(ev.labels)
    for n in sheet:
        key, unit = CALIBRATABLE[n]
        if n in chosen:
            st, why = "fitted", (f"fitted to {len(idx)} measurement(s) ({labels}); the sheet's value "
                                 f"was {sheet[n]:,}")
        elif n not in names:
            st, why = "kept", "not asked for (--constants): the sheet value"
        elif n in unconstrained:
            st, why = "unconstrained", ("no measurement's time moves with it (divided or multiplied "
                                        f"by 4): it stays the sheet value {sheet[n]:,}, not fitted")
            warn.append(f"{n} ({key}) is unconstrained by the data: {why}; "
                        + _HINT.get(n, "add a kernel whose time depends on it"))
        elif n in insep_of:
            st, why = "inseparable", (f"its effect on every measured time is a multiple of "
                                      f"{insep_of[n]}'s: the data cannot tell them apart; it stays "
                                      f"the sheet value {sheet[n]:,}, not fitted")
            warn.append(f"{n} ({key}): {why}; add a measurement that separates them")
        else:
            st, why = "kept", (f"the data constrain it, but fitting it too did not cut the in-sample "
                               f"error to {GAIN:g} x or less: the sheet value {sheet[n]:,}, not fitted"
                               if rows and math.sqrt(np.mean((T / t - 1) ** 2)) >= EXACT else
                               f"the sheet value {sheet[n]:,} with the fitted ones reproduces every "
                               "time: not refitted")
        consts.append(Constant(n, key, unit, sheet[n], vals[n], st, why))
    for i, c in enumerate(consts):
        lo, hi = sorted(_to_v(c.name, x) for x in _range(c.name, c.sheet_value))
        if c.fitted and c.value in (lo, hi):
            end = (f"the {'low' if c.value == lo else 'high'} end of its search range ({lo:,} .. "
                   f"{hi:,}): the times ask for more than the constant can give")
            # said beside the value too, so a table that shows it fitted shows this with it
            consts[i] = dataclasses.replace(c, why=f"{c.why}; at {end}")
            warn.append(f"{c.name} fitted to {c.value:,}, {end}; check the counts, the times or the sheet")
    n_fit = sum(c.fitted for c in consts)
    if n_fit and n_fit >= len(idx):
        warn.append(f"{len(idx)} measurement(s) for {n_fit} fitted constant(s): the fit reproduces "
                    "them exactly and nothing else tests it")
    return ConstantsFit(hw.name, tuple(consts), rows, ev.runs, tuple(warn))


_HINT = {
    "dma_fixed_ns": "add a small-transfer kernel (a copy of one tile: its time is mostly the fixed cost)",
    "dma_core_bw": "add a memory-bound kernel with large transfers",
    "engine_min_cycles": "add a kernel with many short Vector/Scalar instructions on its critical path",
    "te_fill_cycles": "add a kernel whose PSUM read-outs wait on a matmul",
    "mm_init_cycles": "add a matmul kernel with a moving free size N_t below MM_INIT",
}
