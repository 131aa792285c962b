"""Calibrated roofs: fit the achievable HBM bandwidth (and Tensor Engine rate) to measured times.

The model is the one loopsim's entitlement uses for a kernel's time: ``T = max(W/P, Q/BW)`` with
W FLOPs and Q bytes counted from the nest (or taken from a profiler summary). Given measured times
t_i, each measurement is assigned to the roof that binds it, and each roof is fitted to its
measurements by least squares in *relative* time error:

    BW = sum(x_i^2) / sum(x_i)   with x_i = Q_i / t_i   (minimises sum((Q_i/BW - t_i) / t_i)^2)

and the same for P per dtype with x_i = W_i / t_i. One measurement gives BW = Q/t exactly.

**Choosing the assignment.** Under any roofs a measurement is compute-bound exactly when its
intensity I = W/Q is above the ridge P/BW, so the assignments worth trying are the thresholds in
I, per dtype: with n measurements of a dtype, n + 1 of them. Every one is fitted and scored by its
in-sample error under the full model (each prediction is max(W/P, Q/BW) with both fitted roofs,
not the roof it was assigned to). The lowest RMS relative error wins, with two guards: an
assignment that fits more roofs must at least halve the RMS error of the best one with fewer
(:data:`GAIN`: a second roof fitted to noise is not a finding), and ties (within 1e-9) go to the
assignment the spec roofs imply. A fitted roof above its spec value (measured faster than the
documented peak) ranks below every assignment without one.
A roof no measurement is assigned to is not fitted: it keeps the spec value, and everything that
depends on it says so.

**Warnings** (:attr:`Fit.warnings`; ``calibrate --strict`` exits 1 on any): a measurement whose
in-sample predicted/measured is off by more than the threshold; a roof left at its spec value
for want of a measurement it binds; of several measurements, only one fitting a roof; a fitted roof above spec; a second assignment fitting as well
with a different split. The leave-one-out error refits (choosing again) without each measurement
in turn and predicts it.

What the fit does not model: lower ceilings (Tensor Engine fill and issue, engine busy time, PSUM
evacuation, DMA), fixed launch or DMA latency, and partial overlap of compute and memory (the
model overlaps them fully). A kernel bound by one of those is fitted as if a roof were slower, so
fit kernels of the family you want to predict.

The calibrated sheet is the base sheet's own text (everything inherited as written) with its name
changed, any ``[measured]`` section replaced, and a new ``[measured]`` section whose ``where``
strings carry the provenance: kernels, times, fitted values, residuals.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

from loopsim.base.errors import InputError
from loopsim.base.limits import MAX_TIME_S, MIN_TIME_S

__all__ = ["Measurement", "Row", "Fit", "FixedCost", "Prediction", "fit", "predict", "load", "measurement_of", "base_text", "sheet_text"]

#: keys a measurement entry with a spec may have
_KEYS = {"spec", "set", "time_s", "label", "dtype", "args", "kwargs", "grid"}
#: the keys giving a kernel file's inputs, each in the CLI's grammar (--arg, --kwarg, --grid)
_KERNEL_KEYS = ("args", "kwargs", "grid")


@dataclass(frozen=True, slots=True)
class Measurement:
    """One measured kernel: W FLOPs, Q bytes, the dtype whose P applies, time in seconds."""

    label: str
    W: int
    Q: int
    dtype: str
    time_s: float
    transfers: int | None = None  # DMA transfers (the nest's, or the profile's dma_transfer_count)
    #: (spec, sets as sorted (name, value) pairs, dtype or None, a kernel file's inputs or None)
    #: of a measurement counted from a nest: what the timeline-constants fit runs again (None for
    #: hand counts and profiles); the inputs: (args, kwargs, grid) strings,
    #: :func:`loopsim.analyses.calibrate_constants.kernel_options`
    ref: tuple | None = None

    def __post_init__(self) -> None:
        if self.W == 0 and self.Q == 0:
            raise InputError(f"{self.label}: W = Q = 0; a measurement must move bytes or do FLOPs")
        if not (isinstance(self.time_s, (int, float)) and math.isfinite(self.time_s) and self.time_s > 0):
            raise InputError(f"{self.label}: time_s={self.time_s!r} must be a positive number of seconds")
        if not MIN_TIME_S <= self.time_s <= MAX_TIME_S:
            raise InputError(f"{self.label}: time_s={self.time_s!r} s is outside {MIN_TIME_S:g} .. "
                             f"{MAX_TIME_S:g} s, the times loopsim takes (see docs/errors.md)")


@dataclass(frozen=True, slots=True)
class Row:
    """A measurement under the fitted roofs: predicted time (s), binding roof, LOO prediction."""

    measurement: Measurement
    predicted_s: float
    bound: str  # "memory" or "compute"
    loo_predicted_s: float | None

    @property
    def ratio(self) -> float:
        """predicted / measured."""
        return self.predicted_s / self.measurement.time_s

    @property
    def residual(self) -> float:
        """(predicted - measured) / measured, in sample."""
        return self.ratio - 1

    @property
    def loo_error(self) -> float | None:
        """(LOO prediction - measured) / measured; None with a single measurement."""
        if self.loo_predicted_s is None:
            return None
        return self.loo_predicted_s / self.measurement.time_s - 1

    def as_dict(self) -> dict:
        m = self.measurement
        return {"label": m.label, "W": m.W, "Q": m.Q, "dtype": m.dtype, "time_s": m.time_s,
                "transfers": m.transfers,
                "predicted_s": self.predicted_s, "ratio": self.ratio, "residual": self.residual,
                "bound": self.bound,
                "loo_predicted_s": self.loo_predicted_s, "loo_error": self.loo_error}


@dataclass(frozen=True, slots=True)
class FixedCost:
    """The memory side refitted as ``t = Q/BW + n * c`` (n DMA transfers, c seconds each) over the
    memory-bound measurements, least squares in relative time; a diagnostic beside the fit (the
    sheet has no field for c: it is reported, not written). ``rms_plain``/``rms``: their RMS
    relative error under Q/BW alone and with the fixed cost; ``efficiency``: BW over the sheet's
    DMA bandwidth (None without one)."""

    measurements: int
    bw: float
    c_s: float
    rms_plain: float
    rms: float
    efficiency: float | None

    def as_dict(self) -> dict:
        return {"measurements": self.measurements, "bw": self.bw, "per_transfer_s": self.c_s,
                "rms_plain": self.rms_plain, "rms": self.rms, "dma_efficiency": self.efficiency,
                "model": "t = Q/BW + transfers * c (memory-bound measurements); reported, not "
                         "written to the sheet"}


def _fixed_cost(rows, bw_plain: int, dma_bw) -> FixedCost | str | None:
    """The :class:`FixedCost` refit of the memory-bound rows, a sentence when it cannot be made
    (too few measurements, transfers unknown or all in one ratio, a negative cost), or None when
    fewer than two rows are memory-bound."""
    mem = [r.measurement for r in rows if r.bound == "memory" and r.measurement.Q]
    if len(mem) < 2:
        return None  # one memory-bound time fixes BW alone: nothing to say
    if any(m.transfers is None for m in mem):
        return "not fitted: a memory-bound measurement has no DMA transfer count"
    if len(mem) < 3 or len({Fraction(m.transfers, m.Q) for m in mem}) < 2:
        return ("not fitted: it needs 3 memory-bound measurements with different bytes per "
                "transfer (2 parameters, one left to test them)")
    # minimise sum((Q a + n c) / t - 1)^2: the 2 x 2 normal equations, exactly
    x = [(Fraction(m.Q) / Fraction(m.time_s), Fraction(m.transfers) / Fraction(m.time_s)) for m in mem]
    s11, s12, s22 = (sum(u * u for u, _ in x), sum(u * v for u, v in x), sum(v * v for _, v in x))
    b1, b2 = sum(u for u, _ in x), sum(v for _, v in x)
    det = s11 * s22 - s12 * s12
    if det == 0:
        return "not fitted: the measurements do not separate bandwidth from a per-transfer cost"
    a, c = (b1 * s22 - b2 * s12) / det, (s11 * b2 - s12 * b1) / det
    if a <= 0 or c < 0:
        return "not fitted: the best per-transfer cost is negative (no fixed cost in the data)"

    def rms(f):
        return math.sqrt(sum((f(m) / m.time_s - 1) ** 2 for m in mem) / len(mem))

    bw = float(1 / a)
    return FixedCost(len(mem), bw, float(c), rms(lambda m: m.Q / bw_plain),
                     rms(lambda m: m.Q / bw + m.transfers * float(c)),
                     bw / dma_bw if dma_bw else None)


#: default in-sample |predicted/measured - 1| above which calibrate warns
THRESHOLD = 0.10


@dataclass(frozen=True, slots=True)
class Fit:
    """Fitted roofs for a sheet's scope. ``bw`` bytes/s; ``flops`` (dtype, FLOP/s, fitted?);
    ``candidates``: assignments tried; ``warnings``: sentences (see the module docstring)."""

    hardware: str
    bw: int
    bw_fitted: bool
    spec_bw: int
    flops: tuple[tuple[str, int, bool], ...]
    spec_flops: tuple[tuple[str, int], ...]
    rows: tuple[Row, ...]
    candidates: int = 1
    warnings: tuple[str, ...] = ()
    threshold: float = THRESHOLD
    fixed_cost: object = None  # FixedCost, a sentence saying why not, or None
    #: the model chosen: "roofline" (the [measured] roofs above) or "timeline" (``timeline``'s
    #: constants, the roofs at spec)
    model: str = "roofline"
    #: the timeline constants fitted (a calibrate_constants.ConstantsFit), or a sentence saying why not
    timeline: object = None
    #: the roofline fit's own warnings, when the timeline was chosen (then not the fit's warnings)
    roofline_warnings: tuple[str, ...] = ()

    @property
    def chosen_rows(self):
        """Each measurement under the chosen model: (label, measured s, predicted s, residual, LOO
        error or None)."""
        if self.model == "roofline":
            return [(r.measurement.label, r.measurement.time_s, r.predicted_s, r.residual,
                     r.loo_error) for r in self.rows]
        return [(r.label, r.time_s, r.predicted_s, r.residual, r.loo_error) for r in self.timeline.rows]

    @property
    def loo_max(self) -> float | None:
        """Largest |leave-one-out relative error| (None with one measurement)."""
        errs = [abs(r.loo_error) for r in self.rows if r.loo_error is not None]
        return max(errs) if errs else None

    @property
    def loo_rms(self) -> float | None:
        errs = [r.loo_error for r in self.rows if r.loo_error is not None]
        return math.sqrt(sum(e * e for e in errs) / len(errs)) if errs else None

    @property
    def rms(self) -> float:
        """RMS in-sample relative error."""
        return math.sqrt(sum(r.residual ** 2 for r in self.rows) / len(self.rows))

    def P(self, dtype: str) -> int:
        return dict((d, p) for d, p, _ in self.flops)[dtype]

    def fitted(self, dtype: str) -> bool:
        return dict((d, f) for d, _, f in self.flops)[dtype]

    def as_dict(self) -> dict:
        return {"hardware": self.hardware, "bw": self.bw, "bw_fitted": self.bw_fitted,
                "spec_bw": self.spec_bw, "bw_over_spec": self.bw / self.spec_bw,
                "flops": {d: {"value": p, "fitted": f, "spec": dict(self.spec_flops)[d],
                              "over_spec": p / dict(self.spec_flops)[d]} for d, p, f in self.flops},
                "measurements": [r.as_dict() for r in self.rows],
                "rms_error": self.rms, "threshold": self.threshold,
                "loo_max_error": self.loo_max, "loo_rms_error": self.loo_rms,
                "assignments_tried": self.candidates, "warnings": list(self.warnings),
                "dma_fixed_cost": (self.fixed_cost.as_dict() if isinstance(self.fixed_cost, FixedCost)
                                   else self.fixed_cost),
                "chosen_model": self.model,
                "timeline_constants": (self.timeline.as_dict() if hasattr(self.timeline, "as_dict")
                                       else {"not_fitted": self.timeline}),
                "roofline_warnings": list(self.roofline_warnings) if self.model != "roofline"
                else list(self.warnings),
                "model": "T = max(W/P, Q/BW); roofs fitted by least squares in relative time; the "
                         "assignment of measurements to roofs chosen by in-sample error"}


# ---------------------------------------------------------------------------------------------
# the fit


def _assign(ms, bw, P) -> list[str]:
    """The binding roof of each measurement under (bw, P by dtype); ties go to memory."""
    return ["compute" if m.W * bw > m.Q * P[m.dtype] else "memory" for m in ms]


def _predict(m: Measurement, bw: int, P: dict[str, int]) -> float:
    return max(m.W / P[m.dtype], m.Q / bw)


#: most assignments tried (the product over dtypes of measurements + 1)
MAX_ASSIGNMENTS = 100_000
#: most measurements fitted: the leave-one-out refits cost n^3
MAX_MEASUREMENTS = 500


@dataclass(frozen=True, slots=True)
class _Candidate:
    bound: tuple[str, ...]
    bw: int
    P: dict
    bw_fitted: bool
    fitted: frozenset
    rms: float
    above_spec: tuple[str, ...]

    @property
    def n_fitted(self) -> int:
        return int(self.bw_fitted) + len(self.fitted)


def _candidates(ms: list[Measurement], spec_bw: int, spec_P: dict[str, int], *,
                exact: bool = True) -> list[_Candidate]:
    """Every threshold assignment, fitted and scored: per dtype, the measurements with I above a cut
    are compute-bound (W = 0 never is, Q = 0 always is). Each roof's least squares comes from prefix
    sums of x and x^2 over the measurements in order of I, so a candidate costs its O(n) RMS only.
    ``exact``: the sums in exact rationals (the fit); else in floats (the leave-one-out refits,
    n of them: a rate off by an ulp there moves a prediction by 1e-16)."""
    import itertools

    num = Fraction if exact else float
    xm = [num(m.Q) / num(m.time_s) for m in ms]
    xc = [num(m.W) / num(m.time_s) for m in ms]
    per = {}
    for d in sorted({m.dtype for m in ms}):
        idx = [i for i, m in enumerate(ms) if m.dtype == d]
        idx.sort(key=lambda i: (Fraction(ms[i].W, ms[i].Q) if ms[i].Q else math.inf))
        pre = [(num(0), num(0))]
        for i in idx:
            pre.append((pre[-1][0] + xm[i], pre[-1][1] + xm[i] * xm[i]))
        suf = [(num(0), num(0))]
        for i in reversed(idx):
            suf.append((suf[-1][0] + xc[i], suf[-1][1] + xc[i] * xc[i]))
        suf.reverse()  # suf[k]: sums over idx[k:]
        lo = sum(ms[i].W == 0 for i in idx)
        hi = len(idx) - sum(ms[i].Q == 0 for i in idx)
        per[d] = [(idx, k, pre[k], suf[k]) for k in range(lo, hi + 1)]
    n = math.prod(len(c) for c in per.values())
    if n > MAX_ASSIGNMENTS:
        raise InputError(f"calibrate: {n:,} roof assignments to try (more than {MAX_ASSIGNMENTS:,}); "
                         "calibrate each dtype apart")
    import numpy as np

    W = np.array([float(m.W) for m in ms])
    Q = np.array([float(m.Q) for m in ms])
    t = np.array([m.time_s for m in ms])
    dts = sorted(per)
    dti = np.array([dts.index(m.dtype) for m in ms])
    out = []
    for combo in itertools.product(*per.values()):
        bound = ["memory"] * len(ms)
        sx = sx2 = num(0)
        P, fitted = dict(spec_P), set()
        for d, (idx, k, (mx, mx2), (cx, cx2)) in zip(per, combo):
            for i in idx[k:]:
                bound[i] = "compute"
            sx, sx2 = sx + mx, sx2 + mx2
            if cx:
                P[d] = round(cx2 / cx)
                fitted.add(d)
        bw = round(sx2 / sx) if sx else spec_bw
        Pv = np.array([float(P[d]) for d in dts])[dti]
        pred = np.maximum(W / Pv, Q / float(bw))  # the full model, both fitted roofs
        rms = float(np.sqrt(np.mean((pred / t - 1) ** 2)))
        above = tuple((["bw"] if sx and bw > spec_bw else []) +
                      [f"P.{d}" for d in sorted(fitted) if P[d] > spec_P[d]])
        out.append(_Candidate(tuple(bound), bw, P, bool(sx), frozenset(fitted), rms, above))
    return out


#: in-sample RMS errors this close count as a tie
_TIE = 1e-9


#: an assignment that fits more roofs must cut the in-sample RMS error by at least this factor
GAIN = 0.5


def _choose(ms: list[Measurement], spec_bw: int, spec_P: dict[str, int], *, exact: bool = True):
    """(the chosen candidate, every candidate tried, best first) for ``ms``: among the assignments
    with the fewest fitted roofs above spec, per number of fitted roofs the lowest in-sample RMS
    (ties: the spec's assignment); one that fits more roofs is taken only when its RMS is at most
    :data:`GAIN` times the current one's (so a second roof is not fitted to noise)."""
    spec_bound = tuple(_assign(ms, spec_bw, spec_P))
    cands = _candidates(ms, spec_bw, spec_P, exact=exact)
    fewest_above = min(len(c.above_spec) for c in cands)
    pool = [c for c in cands if len(c.above_spec) == fewest_above]
    best_of: dict[int, _Candidate] = {}
    for c in sorted(pool, key=lambda c: (c.rms, c.bound != spec_bound)):
        k = c.n_fitted
        if k not in best_of or (c.rms <= best_of[k].rms + _TIE and c.bound == spec_bound):
            best_of[k] = c
    chosen = None
    for k in sorted(best_of):
        c = best_of[k]
        if chosen is None or c.rms < GAIN * chosen.rms - _TIE:
            chosen = c
    rest = sorted((c for c in cands if c is not chosen), key=lambda c: (len(c.above_spec), c.rms))
    return chosen, [chosen] + rest


def _roofs(ms: list[Measurement], spec_bw: int, spec_P: dict[str, int]):
    """(bw, P by dtype, bw fitted?, dtypes fitted, binding roof per measurement)."""
    c, _ = _choose(ms, spec_bw, spec_P, exact=False)
    return c.bw, c.P, c.bw_fitted, set(c.fitted), list(c.bound)


@dataclass(frozen=True, slots=True)
class Prediction:
    """A kernel under the spec roofs (a bound) and the fitted roofs (a prediction), seconds.
    ``rests_on_spec``: the sides ("memory", "compute") of its max(W/P, Q/BW) whose roof was not
    fitted: each is still a bound, so the prediction is at least its time, never labelled fitted."""

    label: str
    W: int
    Q: int
    dtype: str
    bound_s: float
    predicted_s: float
    limit: str  # the roof that binds the prediction: "memory" or "compute"
    limit_fitted: bool  # whether that roof was fitted (else the prediction is the spec bound)
    rests_on_spec: tuple[str, ...] = ()
    #: the timeline model: the fitted constants that move this kernel's time (limit_fitted: any)
    constants: tuple[str, ...] | None = None

    @property
    def how(self) -> str:
        """How far the prediction is one: a sentence for its "limit" column."""
        if self.constants is not None:
            if self.limit_fitted:
                return f"{self.limit} on the calibrated constants ({', '.join(self.constants)})"
            return (f"{self.limit}: no fitted constant moves its time; the sheet's timeline, not "
                    "calibrated")
        if not self.limit_fitted:
            return f"{self.limit} (spec roof: not fitted, still a bound)"
        other = [x for x in self.rests_on_spec if x != self.limit]
        if other:
            return (f"{self.limit} (fitted); its {other[0]} roof is the spec one, not fitted: "
                    "T is at least this")
        return f"{self.limit} (fitted)"

    def as_dict(self) -> dict:
        return {"label": self.label, "W": self.W, "Q": self.Q, "dtype": self.dtype,
                "T_spec_bound": self.bound_s, "T_predicted": self.predicted_s,
                "limit": self.limit, "limit_fitted": self.limit_fitted,
                "rests_on_spec": list(self.rests_on_spec), "how": self.how,
                "calibrated_constants": None if self.constants is None else list(self.constants)}


def predict(f: Fit, text: str, hw) -> Prediction:
    """``text`` = "SPEC [NAME=INT ...]" counted on ``hw`` and timed under the spec roofs (a bound)
    and the chosen model: the fitted roofs, or the timeline on the fitted constants."""
    parts = text.split()
    if not parts:
        raise InputError("--predict: give a spec name or path, then NAME=INT overrides")
    from loopsim.frontends.spec import parse_sets

    sets = parse_sets(parts[1:])
    W, Q, dt, name, _ = _analyze(parts[0], sets, hw, None)
    spec_P = dict(f.spec_flops)
    if dt not in spec_P:
        raise InputError(f"--predict {text}: dtype '{dt}' has no roof on {f.hardware}")
    label = " ".join([name] + parts[1:])
    if f.model == "timeline":  # the chosen model predicts: the timeline on the fitted constants
        return _predict_timeline(f, label, parts[0], sets, hw, W, Q, dt, spec_P)
    compute = W * f.bw > Q * f.P(dt)
    fitted = f.fitted(dt) if compute else f.bw_fitted
    spec_sides = tuple(side for side, amount, fit_ in (("memory", Q, f.bw_fitted),
                                                       ("compute", W, f.fitted(dt)))
                       if amount and not fit_)
    return Prediction(label, W, Q, dt, max(W / spec_P[dt], Q / f.spec_bw),
                      max(W / f.P(dt), Q / f.bw), "compute" if compute else "memory", fitted,
                      spec_sides)


def _predict_timeline(f: "Fit", label: str, ref: str, sets, hw, W: int, Q: int, dt: str,
                      spec_P: dict) -> Prediction:
    """A kernel's verdict T on the sheet with the fitted timeline constants (spec roofs), beside
    its spec bound max(W/P, Q/BW); which fitted constants move it (each returned to the sheet's
    value in turn)."""
    from loopsim.model import pipeline

    prog = pipeline.load(ref, sets)
    vals = f.timeline.values()
    sheet = hw.with_roofs("spec").constants()

    def T(values):
        a = pipeline.analyze(prog, hw.with_roofs("spec").with_constants(values), dtype=dt)
        return float(a.T), a.limit

    t, limit = T(vals)
    moved = tuple(c.name for c in f.timeline.fitted
                  if abs(T({**vals, c.name: sheet[c.name]})[0] / t - 1) > 1e-9)
    return Prediction(label, W, Q, dt, max(W / spec_P[dt], Q / f.spec_bw), t, limit, bool(moved),
                      (), moved)


def _si(x: float, unit: str) -> str:
    for f, pre in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1, "")):
        if abs(x) >= f:
            return f"{x / f:.4g} {pre}{unit}"
    return f"{x:.4g} {unit}"


#: the models ``fit`` chooses between (``auto``: by in-sample error)
MODELS = ("auto", "roofline", "timeline")


def fit(measurements, hw, *, threshold: float = THRESHOLD, model: str = "auto",
        constants=None) -> Fit:
    """Fit ``hw``'s roofs (spec values as the fallback) to ``measurements``: every threshold
    assignment tried, the best by in-sample error (module docstring); warnings for residuals over
    ``threshold``, roofs left at spec, fitted roofs above spec and ties between assignments. Then,
    where every measurement comes from a nest, the timeline's constants (``constants``: their
    names, default all the sheet gives; :mod:`loopsim.analyses.calibrate_constants`), and the model
    (``model``: ``roofline``, ``timeline`` or ``auto``) chosen by in-sample error: the one with
    fewer fitted numbers, unless the other cuts the RMS error to :data:`GAIN` x or less (a tie
    keeps the roofline)."""
    if model not in MODELS:
        raise InputError(f"calibrate: --model={model!r} must be one of: {', '.join(MODELS)}")
    roof = _fit_roofs(measurements, hw, threshold=threshold)
    if model == "roofline":
        return roof
    return _with_timeline(roof, list(measurements), hw, threshold, model, constants)


def _with_timeline(roof: Fit, ms, hw, threshold: float, model: str, constants) -> Fit:
    """``roof`` with the timeline constants fitted beside it and the model chosen."""
    import dataclasses

    why = None
    if not hasattr(hw, "constants") or not hw.constants():
        why = f"{hw.name} has no timeline constants to fit"
    elif hw.roofs == "measured":
        why = "the sheet's measured roofs leave no timeline to fit (use its spec roofs)"
    elif any(m.ref is None for m in ms):
        why = ("a measurement has no kernel (hand counts or a profile summary): the timeline "
               "cannot be run for it")
    if why is not None:
        if model == "timeline":
            raise InputError(f"calibrate: --model timeline: {why}")
        return dataclasses.replace(roof, timeline=f"not fitted: {why}")
    from loopsim.analyses import calibrate_constants as cc

    kernels = [(m.label, *m.ref) for m in ms]
    tf = cc.fit(kernels, [m.time_s for m in ms], hw, names=constants, loo=len(ms) > 1)
    n_roof = int(roof.bw_fitted) + sum(f for _, _, f in roof.flops)
    n_tl = len(tf.fitted)
    if model == "timeline":
        pick = "timeline"
    elif n_tl < n_roof:
        pick = "roofline" if roof.rms < GAIN * tf.rms - _TIE else "timeline"
    elif n_tl > n_roof:
        pick = "timeline" if tf.rms < GAIN * roof.rms - _TIE else "roofline"
    else:
        pick = "timeline" if tf.rms < roof.rms - _TIE else "roofline"
    if pick == "roofline":
        return dataclasses.replace(roof, timeline=tf)
    warn = [f"{r.label}: predicted/measured {r.ratio:.4f} ({r.residual:+.1%}) is off by more than "
            f"the {threshold:.0%} threshold under the calibrated timeline" for r in tf.rows
            if abs(r.residual) > threshold]
    warn += list(tf.warnings)
    return dataclasses.replace(roof, model="timeline", timeline=tf, warnings=tuple(warn),
                               roofline_warnings=roof.warnings)


def _fit_roofs(measurements, hw, *, threshold: float = THRESHOLD) -> Fit:
    """The roofline half of :func:`fit`: the roofs alone."""
    ms = list(measurements)
    if not ms:
        raise InputError("calibrate: no measurements")
    if len(ms) > MAX_MEASUREMENTS:
        raise InputError(f"calibrate: {len(ms):,} measurements, more than the {MAX_MEASUREMENTS} it "
                         "fits (the leave-one-out refits grow as n^3); fit a family at a time")
    if not (isinstance(threshold, (int, float)) and math.isfinite(threshold) and threshold > 0):
        raise InputError(f"calibrate: --threshold={threshold!r} must be a positive fraction (0.1 = 10%)")
    spec_hw = hw.with_roofs("spec")
    spec_P = dict(spec_hw.flops)
    for m in ms:
        if m.dtype not in spec_P:
            raise InputError(f"{m.label}: dtype '{m.dtype}' has no roof on {hw.name}; known: "
                             f"{', '.join(spec_P)}")
    best, cands = _choose(ms, spec_hw.bw, spec_P)
    bw, P, bound = best.bw, best.P, best.bound
    rows = []
    for i, m in enumerate(ms):
        loo = None
        if len(ms) > 1:
            rest = ms[:i] + ms[i + 1:]
            lbw, lP, *_ = _roofs(rest, spec_hw.bw, spec_P)
            loo = _predict(m, lbw, lP)
        rows.append(Row(m, _predict(m, bw, P), bound[i], loo))
    flops = tuple((d, P[d], d in best.fitted) for d in spec_P)
    warn = []
    for r in rows:
        if abs(r.residual) > threshold:
            warn.append(f"{r.measurement.label}: predicted/measured {r.ratio:.4f} ({r.residual:+.1%}) "
                        f"is off by more than the {threshold:.0%} threshold: T = max(W/P, Q/BW) does "
                        "not fit it (a lower ceiling, fixed cost or partial overlap binds it)")
    if not best.bw_fitted:
        warn.append(f"no measurement is memory-bound: bw stays the spec value {_si(spec_hw.bw, 'B/s')} "
                    "(not fitted); a prediction whose memory side it sets is a bound, and says so")
    for d in sorted({m.dtype for m in ms}):
        if d not in best.fitted:
            warn.append(f"no {d} measurement is compute-bound: P.{d} stays the spec value "
                        f"{_si(spec_P[d], 'FLOP/s')} (not fitted); a prediction whose compute side "
                        "it sets is a bound, and says so")
    if len(ms) > 1:
        for what, who in [("bw", [r for r in rows if r.bound == "memory"])] + [
                (f"P.{d}", [r for r in rows if r.bound == "compute" and r.measurement.dtype == d])
                for d in sorted(best.fitted)]:
            if len(who) == 1:
                warn.append(f"{what} rests on one measurement ({who[0].measurement.label}): the "
                            "fit reproduces it exactly and nothing else tests it")
    for what in best.above_spec:
        v, sp = (bw, spec_hw.bw) if what == "bw" else (P[what[2:]], spec_P[what[2:]])
        warn.append(f"fitted {what} = {v:,} is {v / sp:.3f} x its spec value {sp:,}: measured faster "
                    "than the documented roof; check the counts, the times or the sheet's scope")
    if len(ms) > 1:
        rival = next((c for c in cands[1:] if c.bound != best.bound and c.n_fitted == best.n_fitted
                      and len(c.above_spec) == len(best.above_spec)
                      and c.rms <= best.rms + _TIE), None)
        if rival is not None:
            moved = [m.label for m, a, b in zip(ms, best.bound, rival.bound) if a != b]
            warn.append(f"another assignment fits as well (in-sample RMS {rival.rms:.2%}): "
                        f"{', '.join(moved)} on the other roof; the one the spec roofs imply is "
                        "kept. Add a measurement that separates them")
    fc = _fixed_cost(rows, bw, spec_hw.transfer_bw)
    return Fit(hw.name, bw, best.bw_fitted, spec_hw.bw, flops, tuple(spec_P.items()), tuple(rows),
               len(cands), tuple(warn), threshold, fc)


# ---------------------------------------------------------------------------------------------
# measurements file


def _inputs(entry: dict, ref: str, where: str) -> tuple | None:
    """The ``args``/``kwargs``/``grid`` of a measurement, checked: lists of strings and a string,
    as --arg/--kwarg/--grid take them, and only beside a kernel file's ``spec``."""
    given = [k for k in _KERNEL_KEYS if k in entry]
    if not given:
        return None
    if "::" not in ref:
        raise InputError(f"{where}.{given[0]}: only a kernel file (spec PATH.py::FUNCTION) takes "
                         f"inputs; {ref!r} is a spec (give its parameters in \"set\")")
    out = []
    for k in ("args", "kwargs"):
        v = entry.get(k, [])
        if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
            raise InputError(f"{where}.{k}={v!r} must be a list of strings as --{k[:-1]} takes them "
                             f"(\"lhsT=1024x4096\", \"TC=1024\")")
        out.append(tuple(v))
    grid = entry.get("grid")
    if grid is not None and not isinstance(grid, str):
        raise InputError(f"{where}.grid={grid!r} must be a string as --grid takes it (\"2\", \"2x4\")")
    return (*out, grid)


def _analyze(ref: str, sets: dict[str, int], hw, dtype: str | None, inputs=None):
    """(W, Q, dtype, name, DMA transfers or None) of a spec on ``hw`` (as-written policy): the one
    place that asks the model to analyse a kernel. ``inputs``: a kernel file's
    (:func:`loopsim.analyses.calibrate_constants.kernel_options`)."""
    from loopsim.analyses.calibrate_constants import kernel_options
    from loopsim.model import pipeline

    a = pipeline.analyze(pipeline.load(ref, sets, kernel_args=kernel_options(inputs)), hw, dtype=dtype)
    transfers = None
    if len(a.stages) == 1:
        from loopsim.targets.neuron import dma

        transfers = dma.report(a.stages[0].stage.kernel, hw).transfers
    return a.W, a.Q, a.dtype, a.counts.kernel, transfers


def _hand_count(entry: dict, where: str) -> Measurement:
    """``{"W", "Q", "time_s"[, "label", "dtype", "transfers"]}``: counts given by hand, or a row of
    ``calibrate --json``'s ``measurements`` (its other keys are the fit's and are ignored)."""
    vals = {}
    for k in ("W", "Q", "transfers"):
        v = entry.get(k)
        if v is None and k == "transfers":
            vals[k] = None
            continue
        if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= 2**62:
            raise InputError(f"{where}.{k}={v!r} must be an integer count from 0 to 2^62"
                             if not isinstance(v, int) or abs(v) <= 2**62 else
                             f"{where}.{k}: an integer of {v.bit_length()} bits exceeds 2^62")
        vals[k] = v
    t = entry.get("time_s")
    if isinstance(t, int) and not isinstance(t, bool) and abs(t) > 2**62:
        raise InputError(f"{where}.time_s: an integer of {t.bit_length()} bits is not a time in seconds")
    if isinstance(t, bool) or not isinstance(t, (int, float)) or not math.isfinite(t) or t <= 0:
        raise InputError(f"{where}.time_s={t!r} must be a positive number of seconds")
    label, dtype = entry.get("label", where), entry.get("dtype", "bf16")
    if not isinstance(label, str) or not label:
        raise InputError(f"{where}.label={label!r} must be a non-empty string")
    if not isinstance(dtype, str):
        raise InputError(f"{where}.dtype={dtype!r} must be a dtype name")
    return Measurement(label, vals["W"], vals["Q"], dtype, float(t), vals["transfers"])


def measurement_of(entry: object, hw, where: str, *, allow_kernel_refs: bool = False) -> Measurement:
    """One entry of a measurements file: ``{"spec", "set", "time_s"[, "label", "dtype"]}`` (W and
    Q from the nest; a kernel file's inputs in ``"args"``/``"kwargs"``/``"grid"``), ``{"W", "Q", "time_s"[, ...]}`` (hand counts, or a row of ``calibrate
    --json``'s ``measurements``), or a profiler summary (W and Q from the profile, see
    loopsim.model.measured).

    The file is data: a ``"spec"`` naming a kernel file (``PATH.py::FUNCTION``), which tracing would
    EXECUTE, is refused unless ``allow_kernel_refs`` (the CLI's ``--allow-kernel-refs``)."""
    from loopsim.model import measured

    if not isinstance(entry, dict):
        raise InputError(f"{where}: expected an object with spec and time_s, or a profiler "
                         f"summary; got {type(entry).__name__}")
    if "spec" not in entry and "W" in entry and "Q" in entry:
        return _hand_count(entry, where)
    if "spec" not in entry:
        p = measured.parse(entry, where)
        w, (q, _) = p.work(), p.traffic()
        label = entry.get("label") if isinstance(entry.get("label"), str) else where
        dt = entry.get("dtype", "bf16")
        return Measurement(label, w, q, dt, p.time_s, p.dma_transfer_count)
    unknown = set(entry) - _KEYS
    if unknown:
        k = sorted(unknown)[0]
        raise InputError(f"{where}.{k}={entry[k]!r} is not a known key; expected: "
                         f"{', '.join(sorted(_KEYS))} (or a profiler summary without spec)")
    ref = entry["spec"]
    if not isinstance(ref, str) or not ref:
        raise InputError(f"{where}.spec={ref!r} must be a bundled spec name or a .toml path")
    if "::" in ref and not allow_kernel_refs:
        raise InputError(f"{where}.spec={ref!r} names a kernel file, which loopsim would execute; a "
                         "measurements file is data: pass --allow-kernel-refs to run it")
    sets = entry.get("set", {})
    if not isinstance(sets, dict) or not all(
            isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool) for k, v in sets.items()):
        raise InputError(f"{where}.set={sets!r} must be an object of NAME: integer")
    t = entry.get("time_s")
    if isinstance(t, int) and not isinstance(t, bool) and abs(t) > 2**62:
        raise InputError(f"{where}.time_s: an integer of {t.bit_length()} bits is not a time in seconds")
    if isinstance(t, bool) or not isinstance(t, (int, float)) or not math.isfinite(t) or t <= 0:
        raise InputError(f"{where}.time_s={t!r} must be a positive number of seconds")
    if not MIN_TIME_S <= t <= MAX_TIME_S:
        raise InputError(f"{where}.time_s={t!r} s is outside {MIN_TIME_S:g} .. {MAX_TIME_S:g} s, "
                         "the times loopsim takes (see docs/errors.md)")
    dtype = entry.get("dtype")
    if dtype is not None and not isinstance(dtype, str):
        raise InputError(f"{where}.dtype={dtype!r} must be a dtype name")
    inputs = _inputs(entry, ref, where)
    W, Q, dt, name, transfers = _analyze(ref, sets, hw, dtype, inputs)
    label = entry.get("label")
    if not isinstance(label, str) or not label:
        label = " ".join([name] + [f"{k}={v}" for k, v in sets.items()])
    return Measurement(label, W, Q, dt, float(t), transfers,
                       (ref, tuple(sorted(sets.items())), dtype, inputs))


def load(path: str, hw, *, allow_kernel_refs: bool = False) -> list[Measurement]:
    """Read a measurements file: a JSON list of entries (or one entry). Kernel references in it
    are refused unless ``allow_kernel_refs`` (see :func:`measurement_of`)."""
    from loopsim.base import jsonfile

    data = jsonfile.read(path, path, InputError)
    if isinstance(data, dict) and isinstance(data.get("measurements"), list):
        data = data["measurements"]  # the output of calibrate --json, fed back
    entries = data if isinstance(data, list) else [data]
    if not entries:
        raise InputError(f"{path}: the list of measurements is empty")
    return [measurement_of(e, hw, f"{path}: [{i}]", allow_kernel_refs=allow_kernel_refs)
            for i, e in enumerate(entries)]


# ---------------------------------------------------------------------------------------------
# the sheet


#: the comment lines sheet_text writes above its [measured] section (dropped on recalibration)
_MARKS = ("# [measured] written by loopsim calibrate", "# loopsim calibrate from")
_SECTION = re.compile(r"^\s*\[+\s*([A-Za-z0-9_.\"-]+?)\s*\]+\s*(#.*)?$")


def _without_measured(text: str, origin: str) -> str:
    """The sheet's text without its [measured] tables (a calibrated sheet recalibrated)."""
    out, skipping = [], False
    for line in text.splitlines():
        m = _SECTION.match(line)
        if m:
            head = m.group(1).strip('"')
            skipping = head == "measured" or head.startswith("measured.")
        if not skipping and not line.startswith(_MARKS):
            out.append(line)
    while out and not out[-1].strip():
        out.pop()
    res = "\n".join(out) + "\n"
    import tomllib

    if "measured" in tomllib.loads(res):
        raise InputError(f"{origin}: its measured roofs are not in a [measured] table; "
                         "move them there to recalibrate")
    return res


def _q(s: str) -> str:
    return json.dumps(s, ensure_ascii=False)


def base_text(hw) -> tuple[str, str]:
    """(TOML text, origin) of the sheet ``hw`` was loaded from."""
    from loopsim.base.data import data_dir

    p = Path(hw.path)
    if not p.is_file():  # a bundled sheet: its origin is "hardware/NAME.toml"
        p = data_dir("hardware") / p.name
    return p.read_text(encoding="utf-8"), hw.path


def _depth(line: str) -> int:
    """Brackets ({, [) opened less closed on a TOML line, outside its strings and comment."""
    depth, quote, i = 0, None, 0
    while i < len(line):
        ch = line[i]
        if quote:
            if ch == "\\" and quote == '"':
                i += 1
            elif ch == quote:
                quote = None
        elif ch in "\"'":
            quote = ch
        elif ch == "#":
            break
        elif ch in "{[":
            depth += 1
        elif ch in "}]":
            depth -= 1
        i += 1
    return depth


def _set_value(text: str, key: str, value: int, calibrated: str, note: str, origin: str) -> str:
    """``text`` with the value ``key`` (``section.field``, an inline table on one line or running
    over several, as a value with its ``alternatives = [...]`` does) replaced by a calibrated one
    on one line (the documented value, its source and alternatives are named in ``note``)."""
    section, _, field_ = key.rpartition(".")
    out, inside, done, skip = [], False, False, 0
    for line in text.splitlines():
        if skip > 0:  # the rest of the replaced value
            skip += _depth(line)
            continue
        m = _SECTION.match(line)
        if m:
            inside = m.group(1).strip('"') == section
        elif inside and not done and re.match(rf"^\s*{re.escape(field_)}\s*=\s*\{{", line):
            skip = _depth(line)
            line = (f"{field_} = {{ value = {value}, calibrated = {_q(calibrated)}, "
                    f"note = {_q(note)} }}")
            done = True
        out.append(line)
    if not done or skip:
        raise InputError(f"{origin}: no {field_} = {{ ... }} in its [{section}] table to "
                         "write the calibrated value into")
    return "\n".join(out) + "\n"


def _timeline_sheet(f: Fit, text: str, origin: str, hw) -> str:
    """``text`` with the fitted timeline constants written in, each with its provenance."""
    tf = f.timeline
    runs = "; ".join(f"{r.label} {r.time_s:.6g} s (predicted/measured {r.ratio:.4f})" for r in tf.rows)
    loo = (f", leave-one-out error max {tf.loo_max:.2%}" if tf.loo_max is not None
           else ", one measurement: no leave-one-out error")
    fitted = ", ".join(c.name for c in tf.fitted)
    kept = ", ".join(f"{c.name} ({c.status})" for c in tf.constants if not c.fitted) or "none"
    for c in tf.fitted:
        prov = (f"fitted by loopsim calibrate to {len(tf.rows)} measurement(s) on {f.hardware} "
                f"({', '.join(r.label for r in tf.rows)}); "
                f"model: the engine timeline, least squares in relative time, in-sample rms "
                f"{tf.rms:.2%}{loo}; fitted together: {fitted}; kept at the sheet value: {kept}; "
                f"measurements: {runs}")
        try:
            was = str(hw.value(c.key).source)
        except Exception:  # a value the sheet records under another key
            was = "the sheet's"
        text = _set_value(text, c.key, c.value, prov, f"replaces {c.sheet_value}: {was}", origin)
    return text


def sheet_text(f: Fit, base_text: str, origin: str, name: str, hw=None) -> str:
    """The calibrated sheet: ``base_text`` renamed ``name``, with a fitted [measured] section (the
    roofline model), or with its fitted timeline constants written in place (the timeline model;
    ``hw``: the sheet the fit ran on, for the sources the values replace)."""
    text = _without_measured(base_text, origin)
    text, n = re.subn(r'(?m)^name\s*=\s*"[^"\n]*"', f"name = {_q(name)}", text, count=1)
    if n != 1:
        raise InputError(f"{origin}: no top-level name = \"...\" line to rename")
    if f.model == "timeline":
        return _timeline_sheet(f, text, origin, hw)
    kernels = "; ".join(f"{r.measurement.label} {r.measurement.time_s:.6g} s "
                        f"(predicted/measured {r.ratio:.4f}, {r.bound}-bound)" for r in f.rows)
    loo = (f"; leave-one-out error max {f.loo_max:.2%}, rms {f.loo_rms:.2%}"
           if f.loo_max is not None else "; one measurement, no leave-one-out error")
    head = (f"loopsim calibrate from {len(f.rows)} measurement(s) on {f.hardware}, model "
            f"T = max(W/P, Q/BW), least squares in relative time")
    bw_n = sum(r.bound == "memory" for r in f.rows)
    bw_where = (f"{head}: {bw_n} memory-bound measurement(s), {f.bw / f.spec_bw:.4f} x spec bw "
                f"{f.spec_bw}{loo}; {kernels}" if f.bw_fitted else
                f"not fitted: no measurement is memory-bound; the spec bw {f.spec_bw} is kept")
    lines = ["", f"# [measured] written by loopsim calibrate: fitted roofs with their provenance.",
             f"# {head}.", "[measured]", f"bw = {{ value = {f.bw}, where = {_q(bw_where)} }}",
             "", "[measured.flops]"]
    for d, p, fitted in f.flops:
        spec_p = dict(f.spec_flops)[d]
        n = sum(r.bound == "compute" and r.measurement.dtype == d for r in f.rows)
        where = (f"{head}: {n} compute-bound {d} measurement(s), {p / spec_p:.4f} x spec "
                 f"P.{d} {spec_p}{loo}; {kernels}" if fitted else
                 f"not fitted: no {d} measurement is compute-bound; the spec P.{d} is kept")
        lines.append(f"{d} = {{ value = {p}, where = {_q(where)} }}")
    return text.rstrip("\n") + "\n" + "\n".join(lines) + "\n"


def check_sheet(f: Fit, sheet: str, origin: str):
    """The calibrated sheet ``sheet`` loaded (a HardwareError if it does not), and, on the timeline
    model, holding the fitted constants: what calibrate writes is what it fitted."""
    from loopsim.targets import hardware

    hw = hardware.loads(sheet, origin=origin)
    if f.model == "timeline":
        want = f.timeline.values()
        got = hw.constants()
        bad = [k for k in want if got.get(k) != want[k]]
        if bad:
            raise InputError(f"{origin}: the calibrated sheet gives {bad[0]}={got.get(bad[0])!r}, "
                             f"not the fitted {want[bad[0]]!r}")
    return hw
