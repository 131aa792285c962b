"""Calibrated roofs: fit the achievable HBM bandwidth (and Tensor Engine rate) to measured times.

The model is the one loopsim's entitlement uses for a kernel's time: ``T = max(W/P, Q/BW)`` with
W FLOPs and Q bytes counted from the nest (or taken from a profiler summary). Given measured times
t_i, each measurement is assigned to the roof that binds it (start: the sheet's spec roofs), and
each roof is fitted to its measurements by least squares in *relative* time error:

    BW = sum(x_i^2) / sum(x_i)   with x_i = Q_i / t_i   (minimises sum((Q_i/BW - t_i) / t_i)^2)

and the same for P per dtype with x_i = W_i / t_i. One measurement gives BW = Q/t exactly. The
assignment is redone with the fitted roofs until it no longer changes. A roof that no
measurement binds is not fitted: it keeps the spec value, and the sheet says so. The
leave-one-out error refits without each measurement in turn and predicts it.

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

__all__ = ["Measurement", "Row", "Fit", "Prediction", "fit", "predict", "load", "measurement_of", "base_text", "sheet_text"]

#: keys a measurement entry with a spec may have
_KEYS = {"spec", "set", "time_s", "label", "dtype"}


@dataclass(frozen=True, slots=True)
class Measurement:
    """One measured kernel: W FLOPs, Q bytes, the dtype whose P applies, time in seconds."""

    label: str
    W: int
    Q: int
    dtype: str
    time_s: float

    def __post_init__(self) -> None:
        if self.W == 0 and self.Q == 0:
            raise InputError(f"{self.label}: W = Q = 0; a measurement must move bytes or do FLOPs")
        if not (isinstance(self.time_s, (int, float)) and math.isfinite(self.time_s) and self.time_s > 0):
            raise InputError(f"{self.label}: time_s={self.time_s!r} must be a positive number of seconds")


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
    def loo_error(self) -> float | None:
        """(LOO prediction - measured) / measured; None with a single measurement."""
        if self.loo_predicted_s is None:
            return None
        return self.loo_predicted_s / self.measurement.time_s - 1

    def as_dict(self) -> dict:
        m = self.measurement
        return {"label": m.label, "W": m.W, "Q": m.Q, "dtype": m.dtype, "time_s": m.time_s,
                "predicted_s": self.predicted_s, "ratio": self.ratio, "bound": self.bound,
                "loo_predicted_s": self.loo_predicted_s, "loo_error": self.loo_error}


@dataclass(frozen=True, slots=True)
class Fit:
    """Fitted roofs for a sheet's scope. ``bw`` bytes/s; ``flops`` (dtype, FLOP/s, fitted?)."""

    hardware: str
    bw: int
    bw_fitted: bool
    spec_bw: int
    flops: tuple[tuple[str, int, bool], ...]
    spec_flops: tuple[tuple[str, int], ...]
    rows: tuple[Row, ...]

    @property
    def loo_max(self) -> float | None:
        """Largest |leave-one-out relative error| (None with one measurement)."""
        errs = [abs(r.loo_error) for r in self.rows if r.loo_error is not None]
        return max(errs) if errs else None

    @property
    def loo_rms(self) -> float | None:
        errs = [r.loo_error for r in self.rows if r.loo_error is not None]
        return math.sqrt(sum(e * e for e in errs) / len(errs)) if errs else None

    def P(self, dtype: str) -> int:
        return dict((d, p) for d, p, _ in self.flops)[dtype]

    def as_dict(self) -> dict:
        return {"hardware": self.hardware, "bw": self.bw, "bw_fitted": self.bw_fitted,
                "spec_bw": self.spec_bw, "bw_over_spec": self.bw / self.spec_bw,
                "flops": {d: {"value": p, "fitted": f, "spec": dict(self.spec_flops)[d],
                              "over_spec": p / dict(self.spec_flops)[d]} for d, p, f in self.flops},
                "measurements": [r.as_dict() for r in self.rows],
                "loo_max_error": self.loo_max, "loo_rms_error": self.loo_rms,
                "model": "T = max(W/P, Q/BW); roofs fitted by least squares in relative time"}


# ---------------------------------------------------------------------------------------------
# the fit


def _ls(pairs: list[tuple[int, float]]) -> int:
    """Least squares in relative time of ``amount / rate = t``: rate = sum(x^2)/sum(x), x = amount/t,
    in exact rationals (the times as given), rounded to an integer rate."""
    xs = [Fraction(a) / Fraction(t) for a, t in pairs]
    return round(sum(x * x for x in xs) / sum(xs))


def _assign(ms, bw, P) -> list[str]:
    """The binding roof of each measurement under (bw, P by dtype); ties go to memory."""
    return ["compute" if m.W * bw > m.Q * P[m.dtype] else "memory" for m in ms]


def _roofs(ms: list[Measurement], spec_bw: int, spec_P: dict[str, int]):
    """(bw, P by dtype, bw fitted?, dtypes fitted, binding roof per measurement)."""
    bound = _assign(ms, spec_bw, spec_P)
    for _ in range(2 * len(ms) + 2):  # each pass moves measurements between roofs; it settles fast
        mem = [(m.Q, m.time_s) for m, b in zip(ms, bound) if b == "memory"]
        bw = _ls(mem) if mem else spec_bw
        P = dict(spec_P)
        for d in {m.dtype for m in ms}:
            comp = [(m.W, m.time_s) for m, b in zip(ms, bound) if b == "compute" and m.dtype == d]
            if comp:
                P[d] = _ls(comp)
        new = _assign(ms, bw, P)
        if new == bound:
            break
        bound = new
    fitted = {m.dtype for m, b in zip(ms, bound) if b == "compute"}
    return bw, P, "memory" in bound, fitted, bound


def _predict(m: Measurement, bw: int, P: dict[str, int]) -> float:
    return max(m.W / P[m.dtype], m.Q / bw)


@dataclass(frozen=True, slots=True)
class Prediction:
    """A kernel under the spec roofs (a bound) and the fitted roofs (a prediction), seconds."""

    label: str
    W: int
    Q: int
    dtype: str
    bound_s: float
    predicted_s: float
    limit: str  # the roof that binds the prediction: "memory" or "compute"
    limit_fitted: bool  # whether that roof was fitted (else the prediction is the spec bound)

    def as_dict(self) -> dict:
        return {"label": self.label, "W": self.W, "Q": self.Q, "dtype": self.dtype,
                "T_spec_bound": self.bound_s, "T_predicted": self.predicted_s,
                "limit": self.limit, "limit_fitted": self.limit_fitted}


def predict(f: Fit, text: str, hw) -> Prediction:
    """``text`` = "SPEC [NAME=INT ...]" counted on ``hw`` and timed under both sets of roofs."""
    parts = text.split()
    if not parts:
        raise InputError("--predict: give a spec name or path, then NAME=INT overrides")
    from loopsim.frontends.spec import parse_sets

    sets = parse_sets(parts[1:])
    W, Q, dt, name = _analyze(parts[0], sets, hw, None)
    spec_P = dict(f.spec_flops)
    if dt not in spec_P:
        raise InputError(f"--predict {text}: dtype '{dt}' has no roof on {f.hardware}")
    label = " ".join([name] + parts[1:])
    compute = W * f.bw > Q * f.P(dt)
    fitted = dict((d, x) for d, _, x in f.flops)[dt] if compute else f.bw_fitted
    return Prediction(label, W, Q, dt, max(W / spec_P[dt], Q / f.spec_bw),
                      max(W / f.P(dt), Q / f.bw), "compute" if compute else "memory", fitted)


def fit(measurements, hw) -> Fit:
    """Fit ``hw``'s roofs (spec values as the start and fallback) to ``measurements``."""
    ms = list(measurements)
    if not ms:
        raise InputError("calibrate: no measurements")
    spec_hw = hw.with_roofs("spec")
    spec_P = dict(spec_hw.flops)
    for m in ms:
        if m.dtype not in spec_P:
            raise InputError(f"{m.label}: dtype '{m.dtype}' has no roof on {hw.name}; known: "
                             f"{', '.join(spec_P)}")
    bw, P, bw_fitted, fitted, bound = _roofs(ms, spec_hw.bw, spec_P)
    rows = []
    for i, m in enumerate(ms):
        loo = None
        if len(ms) > 1:
            rest = ms[:i] + ms[i + 1:]
            lbw, lP, *_ = _roofs(rest, spec_hw.bw, spec_P)
            loo = _predict(m, lbw, lP)
        rows.append(Row(m, _predict(m, bw, P), bound[i], loo))
    flops = tuple((d, P[d], d in fitted) for d in spec_P)
    return Fit(hw.name, bw, bw_fitted, spec_hw.bw, flops, tuple(spec_P.items()), tuple(rows))


# ---------------------------------------------------------------------------------------------
# measurements file


def _analyze(ref: str, sets: dict[str, int], hw, dtype: str | None):
    """(W, Q, dtype, name) of a spec on ``hw`` (as-written policy): the one place that asks the
    model to analyse a kernel, so moving to loopsim.model.pipeline is a one-line change."""
    from loopsim.model import pipeline

    a = pipeline.analyze(pipeline.load(ref, sets), hw, dtype=dtype)
    return a.W, a.Q, a.dtype, a.counts.kernel


def measurement_of(entry: object, hw, where: str) -> Measurement:
    """One entry of a measurements file: ``{"spec", "set", "time_s"[, "label", "dtype"]}`` (W and
    Q from the nest) or a profiler summary (W and Q from the profile, see loopsim.model.measured)."""
    from loopsim.model import measured

    if not isinstance(entry, dict):
        raise InputError(f"{where}: expected an object with spec and time_s, or a profiler "
                         f"summary; got {type(entry).__name__}")
    if "spec" not in entry:
        p = measured.parse(entry, where)
        w, (q, _) = p.work(), p.traffic()
        label = entry.get("label") if isinstance(entry.get("label"), str) else where
        dt = entry.get("dtype", "bf16")
        return Measurement(label, w, q, dt, p.time_s)
    unknown = set(entry) - _KEYS
    if unknown:
        k = sorted(unknown)[0]
        raise InputError(f"{where}.{k}={entry[k]!r} is not a known key; expected: "
                         f"{', '.join(sorted(_KEYS))} (or a profiler summary without spec)")
    ref = entry["spec"]
    if not isinstance(ref, str) or not ref:
        raise InputError(f"{where}.spec={ref!r} must be a bundled spec name or a .toml path")
    sets = entry.get("set", {})
    if not isinstance(sets, dict) or not all(
            isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool) for k, v in sets.items()):
        raise InputError(f"{where}.set={sets!r} must be an object of NAME: integer")
    t = entry.get("time_s")
    if isinstance(t, bool) or not isinstance(t, (int, float)) or not math.isfinite(t) or t <= 0:
        raise InputError(f"{where}.time_s={t!r} must be a positive number of seconds")
    if not MIN_TIME_S <= t <= MAX_TIME_S:
        raise InputError(f"{where}.time_s={t!r} s is outside {MIN_TIME_S:g} .. {MAX_TIME_S:g} s, "
                         "the times loopsim takes (see docs/errors.md)")
    dtype = entry.get("dtype")
    if dtype is not None and not isinstance(dtype, str):
        raise InputError(f"{where}.dtype={dtype!r} must be a dtype name")
    W, Q, dt, name = _analyze(ref, sets, hw, dtype)
    label = entry.get("label")
    if not isinstance(label, str) or not label:
        label = " ".join([name] + [f"{k}={v}" for k, v in sets.items()])
    return Measurement(label, W, Q, dt, float(t))


def load(path: str, hw) -> list[Measurement]:
    """Read a measurements file: a JSON list of entries (or one entry)."""
    from loopsim.base import jsonfile

    data = jsonfile.read(path, path, InputError)
    entries = data if isinstance(data, list) else [data]
    if not entries:
        raise InputError(f"{path}: the list of measurements is empty")
    return [measurement_of(e, hw, f"{path}: [{i}]") for i, e in enumerate(entries)]


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


def sheet_text(f: Fit, base_text: str, origin: str, name: str) -> str:
    """The calibrated sheet: ``base_text`` renamed ``name``, with a fitted [measured] section."""
    text = _without_measured(base_text, origin)
    text, n = re.subn(r'(?m)^name\s*=\s*"[^"\n]*"', f"name = {_q(name)}", text, count=1)
    if n != 1:
        raise InputError(f"{origin}: no top-level name = \"...\" line to rename")
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
