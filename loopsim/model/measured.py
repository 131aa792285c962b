"""Measured points: a measured time (and optionally a profiler summary) set against the verdict.

A measured file is JSON: a plain record ``{"time_s": T}`` (seconds; optionally ``spec``, ``set``,
``label`` naming the tiling it measures, as ``loopsim calibrate`` reads them), a list of such
records, or the Neuron profiler's summary as the profiler writes it. Summary fields are read in the
schema's snake_case (``total_active_time``, ``hardware_flops``, ...; [S20], the "Summary" table of
the Neuron Explorer profile schema) or as the Overall Summary shows them ("Total Time", "Hardware
Flops", "Raw Flops", "HBM read bytes", ...): keys are compared with case, spaces and hyphens folded
(``Raw Flops`` == ``raw_flops``). The ``summary-json`` shape, one top-level key wrapping the
metrics dict, and the legacy ``{"summary": [{...}], "instruction": [...]}`` shape are unwrapped.
Unknown keys are ignored (a summary has about a hundred). docs/fidelity.md has the table of
fields read and their definitions.

**Time.** ``time_s`` when given; else the active window ``total_active_time`` ([S20]: "the union
of all active intervals" of engines, DMA and CC), else ``total_exec_time`` (first to last
non-setup instruction), else ``total_time`` ([S20]: "including any idle gaps"; a profiled run
starts with an idle stretch of a few ms, so a short kernel's ``total_time`` is mostly idle). The
others are kept and shown beside it; :attr:`Profile.time_from` names the one used.

**FLOPs.** ``model_flops`` (2 x MAC count from HLO stats: 0 for an NKI kernel), ``hardware_flops``
(every Tensor Engine instruction) and ``transpose_flops`` (the transposes among them) are kept
apart and named; loopsim's W from a profile is ``hardware_flops - transpose_flops`` as
``mm_arithmetic_intensity`` counts it. The profiler's MFU fields are recomputed as [S20] defines
them, over ``total_time`` (``mfu_estimated_percent`` = model_flops / (P x total_time), ``_inst_``
with hardware - transpose, ``hfu_`` with hardware) and, beside, over the active window.

**Percent or fraction.** ``*_percent`` fields are percent (0-100) by the schema, but JSON exports
are reported to carry fractions [S34]. The scale is decided by consistency: an engine's
``..._active_time_percent`` against its ``..._active_time`` over the run, the MFU fields against
their recomputation. A value with a ``%`` sign is percent. A value in (0, 1] that nothing can
check is refused with a line naming the field (write it with its ``%`` to say it is percent).
A negative value is the profiler's "unavailable" sentinel and is read as absent.

Values are numbers, or strings as the UI shows them with their unit: times ("2.05 ms", "310 us"),
FLOP counts ("64.694 GFLOPS": 64.694e9 FLOPs, the count, as the UI labels it), bytes ("1.38 GiB",
"512 KB"), percentages ("45.2%"), plain counts ("12,345"). A time without a unit is refused in a
string ("1e-3" is ambiguous); a UI string that rounds a count (1.38 GiB) gives the nearest integer.

A profile alone (no spec) is a hand count: :meth:`Profile.work` is W = hardware_flops -
transpose_flops and :meth:`Profile.traffic` is Q = hbm_read_bytes + hbm_write_bytes, or W /
mm_arithmetic_intensity when the bytes are missing. Spill traffic (``spill_save_bytes``,
``spill_reload_bytes``) is kept apart: the profiler's HBM bytes already include it.

From the entitlement (W FLOPs, Q bytes, P FLOP/s, BW bytes/s), the verdict's predicted T (s; the
hand-count case: T_best) and T_measured (s):

- gap = T_measured - T_best (s); fraction of entitlement reached = T_best / T_measured; fraction
  of the prediction = T_predicted / T_measured (the plot's measured point uses this one)
- the gap split into named causes (:meth:`Comparison.gap_table`)
- MFU = W / T_measured / P; achieved BW = Q / T_measured and its share of BW
- a line for each of W, Q and I (and the ridge) where the profile disagrees with the nest by
  more than 1%, saying which way.
"""

from __future__ import annotations

import dataclasses
import math
import re
from decimal import Decimal
from fractions import Fraction
from dataclasses import dataclass
from typing import Mapping

from loopsim.model.entitle import Entitlement
from loopsim.base.errors import InputError
from loopsim.base.limits import MAX_TIME_S, MIN_TIME_S

#: relative difference above which a profile field is reported as disagreeing with the nest
TOLERANCE = 0.01

#: the engines whose active time a summary gives: (summary prefix, the verdict's name for it)
ENGINES = (("tensor_engine", "tensor_engine"), ("vector_engine", "vector"),
           ("scalar_engine", "scalar"), ("gpsimd_engine", "gpsimd"), ("sync_engine", None),
           ("dma", "dma"))

#: the engines a source line's predicted time is given for (the profile's names), in column order
LINE_ENGINES = ("dma", "tensor_engine", "vector_engine", "scalar_engine", "gpsimd_engine")

#: column heads of the per-line table
LINE_HEADS = {"dma": "pred. DMA", "tensor_engine": "pred. TE", "vector_engine": "pred. Vector",
              "scalar_engine": "pred. Scalar", "gpsimd_engine": "pred. GpSimd"}

#: the time fields, in the order one is chosen as T_measured
TIME_FIELDS = ("time_s", "total_active_time", "total_exec_time", "total_time")

#: the MFU-like fields [S20] defines over total_time: field -> its numerator
MFU_FIELDS = {"mfu_estimated_percent": "model_flops", "mfu_hlo_estimated_percent": "model_flops",
              "mfu_inst_estimated_percent": "hardware_flops - transpose_flops",
              "hfu_estimated_percent": "hardware_flops"}

#: percent fields read and shown (utilisations; the engine ones are added below)
PERCENT_FIELDS = tuple(MFU_FIELDS) + (
    "mbu_estimated_percent", "total_active_time_percent", "throttle_active_time_percent",
    "max_achievable_util_with_throttling_percent") + tuple(f"{e}_active_time_percent" for e, _ in ENGINES)

#: [S20] ThrottleSummary documents this "percent" field with fraction values ("A value of 1.0
#: means no throttling occurred, while 0.5 means ... limited to 50%"): a value <= 1 is a fraction
_FRACTION_BY_SCHEMA = {"max_achievable_util_with_throttling_percent"}

#: folded key -> field; the profiler's snake_case names and its UI's title-case names
_ALIASES = {
    "time_s": "time_s",
    "total_time": "total_time",
    "total_runtime": "total_time",
    "total_active_time": "total_active_time",
    "total_exec_time": "total_exec_time",
    "hardware_flops": "hardware_flops",
    "raw_flops": "hardware_flops",
    "transpose_flops": "transpose_flops",
    "hbm_read_bytes": "hbm_read_bytes",
    "hbm_write_bytes": "hbm_write_bytes",
    "mm_arithmetic_intensity": "mm_arithmetic_intensity",
    "matmul_arithmetic_intensity": "mm_arithmetic_intensity",
    "peak_flops_bandwidth_ratio": "peak_flops_bandwidth_ratio",
    "model_flops": "model_flops",
    "spill_save_bytes": "spill_save_bytes",
    "spill_reload_bytes": "spill_reload_bytes",
    "model_flops_utilization": "mfu_estimated_percent",
    "hardware_flops_utilization": "hfu_estimated_percent",
    "memory_bandwidth_utilization": "mbu_estimated_percent",
    "throttle_active_time_ns": "throttle_active_time_ns",
    "dma_transfer_count": "dma_transfer_count",
    **{f: f for f in PERCENT_FIELDS},
    **{f"{e}_active_time": f"{e}_active_time" for e, _ in ENGINES},
}

#: what kind of quantity each field is (for UI strings with units); the rest are plain ratios
_KIND = {f: "time" for f in TIME_FIELDS}
_KIND.update({f"{e}_active_time": "time" for e, _ in ENGINES})
_KIND.update({"mm_arithmetic_intensity": "ratio", "peak_flops_bandwidth_ratio": "ratio",
              "throttle_active_time_ns": "count", "dma_transfer_count": "count"})
_KIND.update({f: "percent" for f in PERCENT_FIELDS})
_KIND.update({f: "flops" for f in set(_ALIASES.values()) if f.endswith("_flops")})
_KIND.update({f: "bytes" for f in set(_ALIASES.values()) if f.endswith("_bytes")})

#: unit (lower case) -> factor, per kind of quantity
_UNITS = {
    "time": {"s": 1, "sec": 1, "ms": Fraction(1, 10**3), "us": Fraction(1, 10**6),
             "µs": Fraction(1, 10**6), "μs": Fraction(1, 10**6), "ns": Fraction(1, 10**9)},
    "flops": {"": 1, **{p + s: f for p, f in (("", 1), ("k", 10**3), ("m", 10**6), ("g", 10**9),
                                                  ("t", 10**12), ("p", 10**15))
                        for s in ("flop", "flops")}},
    "bytes": {"": 1, "b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
              "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40},
    "percent": {"%": 1, "": 1},
    "ratio": {"": 1},
    "count": {"": 1},
}
_NUMBER = re.compile(r"\s*([-+]?(?:\d[\d,]*)?\.?\d+(?:[eE][-+]?\d+)?)\s*(\S*)\s*$")


def _fold(key: str) -> str:
    return "_".join(key.strip().lower().replace("-", " ").split())


@dataclass(frozen=True, slots=True)
class Percent:
    """A ``*_percent`` field as written: ``raw`` the number in the file, ``key`` its spelling,
    ``marked`` whether it carried a ``%`` sign (then it is percent whatever its size)."""

    name: str
    raw: float
    key: str = ""
    marked: bool = False


@dataclass(frozen=True, slots=True)
class Profile:
    """One measurement. ``time_s`` in seconds (the one of :data:`TIME_FIELDS` named by
    ``time_from``); FLOPs and bytes as integers; None where absent. ``percents``: the
    ``*_percent`` fields as written (their scale is decided by :func:`percent_scale`);
    ``engine_times``: (summary engine prefix, active seconds); ``instructions``: (source
    location, seconds) summed per ``nki_source_location`` of the per-instruction records
    (``durations_assumed``: some record's duration unit is ASSUMED, :data:`DURATION_UNIT`);
    ``unavailable``: fields holding the profiler's negative "unavailable" sentinel."""

    time_s: float
    source: str = ""
    time_from: str = "time_s"
    total_time: float | None = None
    total_active_time: float | None = None
    total_exec_time: float | None = None
    hardware_flops: int | None = None
    transpose_flops: int | None = None
    model_flops: int | None = None
    hbm_read_bytes: int | None = None
    hbm_write_bytes: int | None = None
    mm_arithmetic_intensity: float | None = None
    peak_flops_bandwidth_ratio: float | None = None
    spill_save_bytes: int | None = None
    spill_reload_bytes: int | None = None
    throttle_active_time_ns: int | None = None
    dma_transfer_count: int | None = None
    percents: tuple[Percent, ...] = ()
    engine_times: tuple[tuple[str, float], ...] = ()
    instructions: tuple[tuple[str, float], ...] = ()
    durations_assumed: bool = False
    unavailable: tuple[str, ...] = ()
    spec: str | None = None
    sets: tuple[tuple[str, int], ...] = ()
    label: str | None = None

    def __post_init__(self) -> None:
        if not (isinstance(self.time_s, (int, float)) and not isinstance(self.time_s, bool)
                and math.isfinite(self.time_s) and self.time_s > 0):
            raise InputError(f"{self.source or 'measured'}: time_s={self.time_s!r} must be a "
                             "positive number of seconds")

    @property
    def flops(self) -> int | None:
        """W as the profile counts it: hardware FLOPs less transpose FLOPs (as Mm Arithmetic
        Intensity does), FLOPs."""
        if self.hardware_flops is None:
            return None
        return self.hardware_flops - (self.transpose_flops or 0)

    @property
    def Q(self) -> int | None:
        """Q as the profile counts it: HBM read + write bytes (None unless both are given)."""
        if self.hbm_read_bytes is None or self.hbm_write_bytes is None:
            return None
        return self.hbm_read_bytes + self.hbm_write_bytes

    @property
    def spill_bytes(self) -> int | None:
        """Spill save + reload bytes (None when the profile gives neither)."""
        if self.spill_save_bytes is None and self.spill_reload_bytes is None:
            return None
        return (self.spill_save_bytes or 0) + (self.spill_reload_bytes or 0)

    def raw_percent(self, name: str) -> Percent | None:
        return next((p for p in self.percents if p.name == name), None)

    def engine_time(self, prefix: str) -> float | None:
        return dict(self.engine_times).get(prefix)

    def work(self) -> int:
        """W for a profile used without a spec, FLOPs; InputError naming the file if absent."""
        if self.flops is None:
            raise InputError(f"{self.source or 'measured'}: no FLOP count: expected key "
                             "hardware_flops (or 'Hardware Flops'); give a SPEC or --flops")
        return self.flops

    def traffic(self) -> tuple[int, str]:
        """(Q bytes, how it was obtained) for a profile used without a spec: HBM read + write
        bytes, else W / mm_arithmetic_intensity rounded to the nearest byte."""
        if self.Q is not None:
            return self.Q, "hbm_read_bytes + hbm_write_bytes"
        i = self.mm_arithmetic_intensity
        if i:
            return round(self.work() / i), "(hardware_flops - transpose_flops) / mm_arithmetic_intensity"
        missing = "hbm_write_bytes" if self.hbm_read_bytes is not None else "hbm_read_bytes"
        raise InputError(f"{self.source or 'measured'}: no HBM bytes: expected keys hbm_read_bytes "
                         f"and hbm_write_bytes ({missing} is missing) or mm_arithmetic_intensity; "
                         "give a SPEC or --bytes")


def _metrics(data: object, where: str) -> dict:
    """The flat metrics dict of a measured file, unwrapping the profiler's JSON shapes."""
    if not isinstance(data, dict):
        raise InputError(f"{where}: expected a JSON object with time_s (seconds), got "
                         f"{type(data).__name__}")
    flat = {k: v for k, v in data.items() if not isinstance(v, (dict, list))}
    nested = [v for k, v in data.items() if isinstance(v, (dict, list))
              and (len(data) == 1 or _fold(k) in ("summary", "throttle_summary"))]
    for v in nested:
        if isinstance(v, list):
            v = v[0] if v and isinstance(v[0], dict) else {}
        if isinstance(v, dict):
            for k, x in _metrics(v, where).items():
                flat.setdefault(k, x)
    return flat


def _instructions(data: object, where: str) -> tuple[tuple[tuple[str, float], ...], bool]:
    """((nki_source_location, seconds) summed over the ``instruction`` records, whether any
    duration's unit is ASSUMED). A record's ``duration_ns`` is nanoseconds as [S20]'s Instruction
    table defines it; the legacy JSON's ``duration`` ([S23] shape; [S26] adds
    ``nki_source_location``) has no documented unit and is read in nanoseconds, ASSUMED (the unit
    of the [S20] field that replaced it, and of the records' timestamps)."""
    recs = data.get("instruction") if isinstance(data, dict) else None
    if not isinstance(recs, list):
        return (), False
    total: dict[str, float] = {}
    assumed = False
    for i, r in enumerate(recs):
        if not isinstance(r, dict) or "nki_source_location" not in r:
            continue
        key = "duration_ns" if "duration_ns" in r else "duration"
        loc, d = r["nki_source_location"], r.get(key)
        _too_big(d, f"instruction[{i}].{key}", where)
        if not isinstance(loc, str) or isinstance(d, bool) or not isinstance(d, (int, float)) \
                or not math.isfinite(d) or d < 0:
            raise InputError(f"{where}: instruction[{i}]: nki_source_location={loc!r}, "
                             f"{key}={d!r}: expected a 'file.py:LINE' string and a {key} >= 0 (ns)")
        assumed |= key == "duration"
        total[loc] = total.get(loc, 0.0) + d * 1e-9
    return tuple(sorted(total.items(), key=lambda kv: -kv[1])), assumed


#: how the per-instruction durations were read, by whether their unit is ASSUMED
DURATION_UNIT = {
    False: "duration_ns, nanoseconds by the [S20] Instruction table",
    True: "the legacy records' duration read in ns, ASSUMED: [S23] gives no unit; [S20]'s "
          "duration_ns is in ns"}


def _too_big(value: object, key: str, where: str) -> None:
    """InputError for an integer past :data:`loopsim.base.limits.MAX_INT` (JSON integers are
    unbounded; a float cannot hold them)."""
    from loopsim.base.limits import MAX_INT

    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > MAX_INT:
        digits = int(abs(value).bit_length() * math.log10(2)) + 1  # str() refuses > 4300 digits
        raise InputError(f"{where}: {key}=a {digits}-digit integer exceeds the largest "
                         "integer loopsim accepts (2^62; see docs/errors.md)")


def _number(value: object, key: str, where: str, *, integer: bool) -> int | float:
    _too_big(value, key, where)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise InputError(f"{where}: {key}={value!r} must be a number")
    if value < 0:
        raise InputError(f"{where}: {key}={value!r} must be >= 0")
    if integer:
        if value != int(value):
            raise InputError(f"{where}: {key}={value!r} must be a whole number")
        return int(value)
    return float(value)


def _quantity(value: object, key: str, name: str, where: str) -> object:
    """A UI string with a unit ("2.05 ms") as a number in the field's base unit; other values
    unchanged (checked by the caller)."""
    if not isinstance(value, str):
        return value
    kind = _KIND.get(name, "ratio")
    m = _NUMBER.fullmatch(value)
    units = _UNITS[kind]
    if m is None or m.group(2).lower() not in units or (kind == "time" and not m.group(2)):
        return value  # refused by the number check, with the value shown
    f = Decimal(m.group(1).replace(",", "")) * Decimal(units[m.group(2).lower()].numerator) / \
        Decimal(units[m.group(2).lower()].denominator)
    if kind in ("flops", "bytes", "count"):
        return int(f.to_integral_value())
    return float(f)


def _positive_time(value: object, key: str, where: str) -> float:
    _too_big(value, key, where)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or \
            not math.isfinite(value) or value <= 0:
        raise InputError(f"{where}: {key}={value!r} must be a positive number of seconds")
    if not MIN_TIME_S <= value <= MAX_TIME_S:
        raise InputError(f"{where}: {key}={value!r} s is outside {MIN_TIME_S:g} .. {MAX_TIME_S:g} s, "
                         "the times loopsim takes (see docs/errors.md)")
    return float(value)


def _record_keys(data: object, where: str) -> dict:
    """``spec``, ``set``, ``label`` of a plain record (which tiling it measures); never loaded."""
    if not isinstance(data, dict):
        return {}
    out: dict = {}
    spec, sets, label = data.get("spec"), data.get("set", {}), data.get("label")
    if spec is not None:
        if not isinstance(spec, str) or not spec:
            raise InputError(f"{where}: spec={spec!r} must be a spec name or path")
        out["spec"] = spec
    if not isinstance(sets, dict) or not all(
            isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool) for k, v in sets.items()):
        raise InputError(f"{where}: set={sets!r} must be an object of NAME: integer")
    out["sets"] = tuple(sorted(sets.items()))
    if label is not None:
        if not isinstance(label, str) or not label:
            raise InputError(f"{where}: label={label!r} must be a non-empty string")
        out["label"] = label
    return out


def parse(data: object, where: str = "measured") -> Profile:
    """A :class:`Profile` from a decoded measured file; errors name ``where``, the key and value."""
    fields: dict[str, object] = {}
    for key, value in _metrics(data, where).items():
        name = _ALIASES.get(_fold(str(key)))
        if name is None or name in fields:
            continue
        marked = isinstance(value, str) and value.strip().endswith("%")
        fields[name] = (_quantity(value, str(key), name, where), str(key), marked)
    have = [f for f in TIME_FIELDS if f in fields]
    if not have:
        raise InputError(f"{where}: no measured time: expected key time_s (seconds), or a "
                         "profiler summary's total_active_time or total_time")
    out: dict[str, object] = {}
    percents, engines, unavailable = [], [], []
    for name, (value, key, marked) in fields.items():
        if name in TIME_FIELDS:
            out[name] = _positive_time(value, key, where)
        elif name in PERCENT_FIELDS:
            _too_big(value, key, where)
            if isinstance(value, (int, float)) and not isinstance(value, bool) and \
                    math.isfinite(value) and value < 0:
                unavailable.append(key)  # the profiler's "unavailable" sentinel
                continue
            percents.append(Percent(name, _number(value, key, where, integer=False), key, marked))
        elif name.endswith("_active_time"):
            engines.append((name[:-len("_active_time")], _number(value, key, where, integer=False)))
        else:
            integer = name.endswith(("_flops", "_bytes", "_ns", "_count"))
            out[name] = _number(value, key, where, integer=integer)
    t_from = have[0]
    t = out.pop("time_s", None) if t_from == "time_s" else out[t_from]
    instr, assumed = _instructions(data, where)
    return Profile(float(t), where, t_from, percents=tuple(percents), engine_times=tuple(engines),
                   instructions=instr, durations_assumed=assumed, unavailable=tuple(unavailable),
                   **out, **_record_keys(data, where))


def load_all(path: str) -> list[Profile]:
    """Every measurement of a measured JSON file: one object, or a list of them (the format
    ``loopsim calibrate`` reads; see the module docstring)."""
    from loopsim.base import jsonfile

    data = jsonfile.read(path, f"--measured {path}", InputError)
    if isinstance(data, dict) and isinstance(data.get("measurements"), list):
        data = data["measurements"]  # the output of calibrate --json: its rows, by label
    if isinstance(data, list):
        if not data:
            raise InputError(f"--measured {path}: the list of measurements is empty")
        return [dataclasses.replace(parse(d, f"--measured {path}: [{i}]"), source=path)
                for i, d in enumerate(data)]
    return [dataclasses.replace(parse(data, f"--measured {path}"), source=path)]


def load(path: str) -> Profile:
    """Read a measured JSON file holding one measurement (see the module docstring)."""
    ps = load_all(path)
    if len(ps) != 1:
        raise InputError(f"--measured {path}: {len(ps)} measurements; here one is expected "
                         "(give each a spec/set or label to match it to a tiling)")
    return ps[0]


def matches(p: Profile, names: tuple[str, ...], params: Mapping[str, int],
            full: Mapping[str, int] | None = None) -> bool:
    """Whether the record ``p`` (its ``label``, or ``spec`` and ``set``) names the tiling known by
    ``names`` with parameters ``params``. ``full``: the record's parameters with its spec's
    defaults filled in (then every one must agree), else only its ``set`` is compared."""
    if p.label is not None:
        return p.label in names
    if p.spec is None:
        return False
    given = dict(p.sets) if full is None else full
    return p.spec in names and all(params.get(k, v) == v for k, v in given.items())


# ---------------------------------------------------------------------------------------------
# percent or fraction


def _close(v: float, x: float, abs_tol: float) -> bool:
    """``v`` (as written, rounded by the profiler) is ``x``: within 2% or ``abs_tol``."""
    return abs(v - x) <= max(0.02 * abs(x), abs_tol)


def _vote(v: float, fraction: float) -> str | None:
    """'percent' or 'fraction' when ``v`` matches exactly one reading of ``fraction`` (0-1)."""
    as_pct, as_frac = _close(v, 100 * fraction, 0.051), _close(v, fraction, 0.00051)
    return "percent" if as_pct and not as_frac else "fraction" if as_frac and not as_pct else None


def percent_scale(p: Profile, P: float | None = None) -> tuple[str, str]:
    """(``"percent"`` or ``"fraction"``, why) for the profile's ``*_percent`` fields, decided by
    their consistency with the other fields (``P``: the sheet's FLOP/s, for the MFU fields); a
    profile with none gives ("percent", ""). InputError naming the field when a value in (0, 1]
    cannot be checked, or when the fields disagree."""
    votes: list[tuple[str, str, str]] = []  # (scale, field key, why)
    dens = [(n, getattr(p, n)) for n in ("total_time", "total_exec_time", "total_active_time")
            if getattr(p, n)]
    for x in p.percents:
        if x.name in _FRACTION_BY_SCHEMA:
            continue
        t = None
        if x.name == "total_active_time_percent":
            t = p.total_active_time
        elif x.name.endswith("_active_time_percent"):
            t = p.engine_time(x.name[:-len("_active_time_percent")])
        checks = [(t / d, f"{x.key} against {x.name[:-len('_percent')]} / {dn}") for dn, d in dens
                  if t is not None] if t is not None else []
        if x.name in MFU_FIELDS and P and p.total_time:
            num = {"model_flops": p.model_flops, "hardware_flops": p.hardware_flops,
                   "hardware_flops - transpose_flops": p.flops}[MFU_FIELDS[x.name]]
            if num:
                for k, scope in ((1, ""), (2, ", at 2 x P (LNC=2)"), (0.5, ", at P / 2")):
                    checks.append((num / (k * P * p.total_time),
                                   f"{x.key} against {MFU_FIELDS[x.name]} / (P x total_time){scope}"))
        for frac, why in checks:
            v = _vote(x.raw, frac)
            if v is not None:
                votes.append((v, x.key, why))
                break
        else:
            if x.marked:
                votes.append(("percent", x.key, f"{x.key} is written with a % sign"))
            elif 1 < x.raw <= 100:
                votes.append(("percent", x.key, f"{x.key} = {x.raw:g} > 1"))
    kinds = {v for v, _, _ in votes}
    if len(kinds) == 2:
        a = next(v for v in votes if v[0] == "percent")
        b = next(v for v in votes if v[0] == "fraction")
        raise InputError(f"{p.source or 'measured'}: the *_percent fields disagree on their scale: "
                         f"{a[1]} reads as percent ({a[2]}), {b[1]} as a fraction ({b[2]})")
    if kinds:
        scale = kinds.pop()
        return scale, next(w for v, _, w in votes if v == scale)
    for x in p.percents:
        if x.name not in _FRACTION_BY_SCHEMA and 0 < x.raw <= 1:
            raise InputError(f"{p.source or 'measured'}: {x.key}={x.raw!r} could be percent or a "
                             "fraction and no other field tells which; write it with its unit, "
                             f"\"{x.raw:g}%\" or \"{100 * x.raw:g}%\"")
    return "percent", ""


def percent_value(x: Percent, scale: str) -> float:
    """The field in percent (0-100) under ``scale``."""
    if x.name in _FRACTION_BY_SCHEMA:
        return 100 * x.raw if x.raw <= 1 and not x.marked else x.raw
    return 100 * x.raw if scale == "fraction" and not x.marked else x.raw


@dataclass(frozen=True, slots=True)
class Disagreement:
    """The profile's value of ``what`` against the nest's, and a sentence saying which way."""

    what: str
    nest: float
    profile: float
    line: str

    @property
    def relative(self) -> float | None:
        """(profile - nest) / nest; None when the nest's value is 0."""
        return (self.profile - self.nest) / self.nest if self.nest else None

    def as_dict(self) -> dict:
        return {"what": self.what, "nest": self.nest, "profile": self.profile,
                "relative": self.relative, "line": self.line}


def _num(v: float) -> str:
    return f"{int(v):,}" if float(v).is_integer() else f"{v:.4g}"


def _disagree(what: str, nest: float, profile: float, template: str, ways: tuple[str, str],
              unit: str) -> Disagreement | None:
    """A disagreement when |profile - nest| > TOLERANCE * nest. ``template`` has ``{pct}`` and
    ``{way}`` (``ways[0]`` when the profile is larger, ``ways[1]`` when smaller)."""
    if nest == profile:
        return None
    if nest == 0:
        return Disagreement(what, nest, profile,
                            f"the profile has {what} = {_num(profile)} {unit} where the nest implies 0")
    rel = (profile - nest) / nest
    if abs(rel) <= TOLERANCE:
        return None
    text = template.format(pct=f"{abs(rel):.0%}", way=ways[0] if rel > 0 else ways[1])
    return Disagreement(what, nest, profile, f"{text} ({_num(profile)} vs {_num(nest)} {unit})")


def roof_status(hw, limit: str, dtype: str, W: int, Q: int) -> tuple[bool, str]:
    """On calibrated roofs (``hw.roofs == "measured"``): (whether the verdict's T, bound by
    ``limit``, is a prediction, a sentence saying why not or what it rests on). T is a prediction
    only when its limit is a roof calibrate fitted; a roof kept at its spec value, or a lower
    ceiling computed from the sheet's documented numbers, makes it a bound; a fitted limit whose
    other roof is a spec value makes it "at least" T. (True, "") on spec roofs."""
    if hw.roofs != "measured":
        return True, ""
    if limit not in ("memory", "compute"):
        return False, (f"the {limit} ceiling that sets T is computed from the sheet's documented "
                       "numbers, not fitted: T is a bound, not a prediction")
    if hw.roof_unfitted(limit, dtype):
        return False, (f"the {limit} roof that sets T was not fitted by calibrate (no measurement it "
                       "binds): it is the spec value, so T is a bound, not a prediction")
    other, amount = ("compute", W) if limit == "memory" else ("memory", Q)
    if amount and hw.roof_unfitted(other, dtype):
        return True, (f"its {other} roof is the spec one, not fitted: T is at least this")
    return True, ""


#: the gap's named causes, in the order the gap table lists them (the timeline's own seven, as
#: its reports name them, and what no field explains)
CAUSES = ("fixed cost", "no overlap", "extra bytes", "slower engine", "Tensor Engine under-fill",
          "small transfers", "DMA peak below BW", "unexplained")
#: the timeline's cause keys (loopsim.targets.neuron.timeline.CAUSES) -> the gap table's names
_TIMELINE_CAUSE = {"fixed_cost": "fixed cost", "no_overlap": "no overlap",
                   "slower_engine": "slower engine", "te_underfill": "Tensor Engine under-fill",
                   "small_transfers": "small transfers", "dma_rate": "DMA peak below BW",
                   "extra_bytes": "extra bytes"}


def _cause_of_limit(limit: str) -> str:
    """The gap cause a verdict limit above T_best stands for."""
    if limit == "tensor_engine":
        return "Tensor Engine under-fill"
    if any(w in limit for w in ("fixed", "latency", "overhead", "launch")):
        return "fixed cost"
    if any(w in limit for w in ("overlap", "serial", "timeline")):
        return "no overlap"
    return "slower engine"


@dataclass(frozen=True, slots=True)
class GapPart:
    """One named share of T_measured - T_best, seconds; ``note`` says where the figure comes from."""

    cause: str
    seconds: float
    note: str

    def as_dict(self) -> dict:
        return {"cause": self.cause, "seconds": self.seconds, "note": self.note}


@dataclass(frozen=True, slots=True)
class MfuFigure:
    """A profiler MFU-like field beside its recomputation ([S20] formula over total_time) and the
    same numerator over the active window; percent. ``note`` says where they part."""

    field: str
    numerator: str
    profiler: float | None
    over_total_time: float | None
    over_window: float
    note: str

    def as_dict(self) -> dict:
        return {"field": self.field, "numerator": self.numerator, "profiler_percent": self.profiler,
                "recomputed_over_total_time_percent": self.over_total_time,
                "over_active_window_percent": self.over_window, "note": self.note}


@dataclass(frozen=True, slots=True)
class Comparison:
    """A measured time against an entitlement and the verdict's predicted T. Times in seconds,
    rates in FLOP/s, BW in bytes/s. ``predicted``: the verdict's T (None: hand counts, T_best);
    ``limit`` and ``times``: the verdict's binding limit and its time per roof/ceiling."""

    entitlement: Entitlement
    profile: Profile
    disagreements: tuple[Disagreement, ...]
    predicted: float | None = None
    limit: str = ""
    times: tuple[tuple[str, float], ...] = ()
    scale: str = "percent"
    scale_why: str = ""
    predicted_lines: tuple[tuple[int, str, float, str], ...] = ()
    predicted_parts: tuple[tuple[str, float], ...] = ()  # the timeline's (cause key, s) of T - T_best
    predicted_busy: tuple[tuple[str, float], ...] = ()  # the timeline's (engine, busy s)

    @property
    def T(self) -> float:
        return self.profile.time_s

    @property
    def T_predicted(self) -> float:
        """The verdict's T (seconds); T_best for hand counts."""
        return self.entitlement.T_best if self.predicted is None else self.predicted

    @property
    def gap(self) -> float:
        """T_measured - T_best, seconds (negative: faster than entitled, so an input is wrong)."""
        return self.T - self.entitlement.T_best

    @property
    def fraction_of_entitlement(self) -> float:
        """T_best / T_measured: 1 at the roof."""
        return self.entitlement.T_best / self.T

    @property
    def fraction_of_predicted(self) -> float:
        """T_predicted / T_measured: the reference of the plot's measured point."""
        return self.T_predicted / self.T

    @property
    def rate(self) -> float:
        """Measured rate W / T_measured, FLOP/s (the measured point's height)."""
        return self.entitlement.W / self.T

    @property
    def mfu(self) -> float:
        """W / T_measured / P."""
        return self.rate / self.entitlement.P

    @property
    def achieved_bw(self) -> float:
        """Q / T_measured, bytes/s."""
        return self.entitlement.Q / self.T

    @property
    def bw_share(self) -> float:
        """Achieved BW / BW."""
        return self.achieved_bw / self.entitlement.BW

    def percent(self, name: str) -> float | None:
        """A profiler ``*_percent`` field in percent (its scale resolved), None if absent."""
        x = self.profile.raw_percent(name)
        return None if x is None else percent_value(x, self.scale)

    # -- MFU ----------------------------------------------------------------------------------

    def mfu_figures(self) -> list[MfuFigure]:
        """Each MFU-like figure [S20] defines, as the profiler computes it (its numerator over
        P x total_time), over the active window, and the profiler's own value where it gives one."""
        p, e = self.profile, self.entitlement
        nums = {"model_flops": p.model_flops, "hardware_flops": p.hardware_flops,
                "hardware_flops - transpose_flops": p.flops}
        out = []
        for name, what in MFU_FIELDS.items():
            theirs, num = self.percent(name), nums[what]
            shown_anyway = name in ("mfu_estimated_percent", "mfu_inst_estimated_percent")
            if num is None or (theirs is None and (not num or not shown_anyway)):
                continue
            tot = 100 * num / (e.P * p.total_time) if p.total_time and e.P else None
            win = 100 * num / (e.P * self.T) if e.P else math.nan
            out.append(MfuFigure(name, what, theirs, tot, win, self._mfu_note(name, what, num,
                                                                               theirs, tot)))
        return out

    def _mfu_note(self, name, what, num, theirs, tot) -> str:
        if theirs is None or tot is None:
            return "not in the profile" if theirs is None else "no total_time to recompute it"
        if num == 0 and theirs == 0:
            return ("0: model_flops come from HLO stats, which an NKI kernel has none of; "
                    "mfu_inst_estimated_percent is the comparable one")
        if not theirs:
            return f"the profiler gives 0 where {what} / (P x total_time) = {tot:.4g}%"
        r = tot / theirs
        if abs(r - 1) <= 0.02 or abs(theirs - tot) <= 0.051:
            return "agrees"
        implied = num / (self.profile.total_time * theirs / 100)
        k = implied / self.entitlement.P
        why = ("a factor of 2: the profiler's peak counts both physical cores of an LNC=2 core "
               "(or the sheet covers two cores and the profile one); check the sheet's scope"
               if abs(k - 2) < 0.05 or abs(k - 0.5) < 0.025 else
               "a different Tensor Engine clock, dtype rate or scope")
        return (f"differs: the profiler's {theirs:.4g}% implies a peak of {implied / 1e12:.4g} TFLOP/s "
                f"against the sheet's P = {self.entitlement.P / 1e12:.4g} TFLOP/s ({k:.3g}x): {why}")

    def mfu_notes(self) -> list[str]:
        """Sentences on where the profiler's figures and loopsim's part, and why."""
        e, p, out = self.entitlement, self.profile, []
        for f in self.mfu_figures():
            if f.profiler is not None and f.note != "agrees":
                out.append(f"{f.field}: {f.note}")
        if p.model_flops and p.flops and p.model_flops != p.flops:
            r = p.flops / p.model_flops
            out.append(f"model_flops = {p.model_flops:,} is 1/{r:.4g} of hardware_flops - "
                       f"transpose_flops = {p.flops:,}: the MFU fields on model FLOPs "
                       f"(mfu_estimated_percent) and on instruction FLOPs (mfu_inst_estimated_percent) "
                       f"differ by that factor, not by a peak; loopsim's W = {e.W:,}")
        if e.bound == "memory" and e.W:
            out.append(f"memory-bound (I = {e.I:.4g} < ridge {e.ridge:.4g} FLOPs/byte): MFU cannot "
                       f"exceed I/ridge = {e.I / e.ridge:.1%}; the fraction of entitlement "
                       f"({self.fraction_of_entitlement:.1%}) is measured against that limit")
        return out

    # -- engines and the gap ------------------------------------------------------------------

    def engine_rows(self) -> list[dict]:
        """Per engine: predicted busy time (s: the timeline's busy time when it ran, else the
        verdict's ceiling for that engine) and its share of the predicted T,
        measured active time (s) and its share of T_measured, and the profiler's own percent."""
        tm = dict(self.times)
        busy = dict(self.predicted_busy)  # the timeline's busy time per engine, when it ran
        out = []
        if not self.profile.engine_times and not any(
                x.name.endswith("_active_time_percent") for x in self.profile.percents):
            return out  # nothing measured per engine: no table
        for prefix, vname in ENGINES:
            tname = prefix.removesuffix("_engine")  # the timeline's engine names: dma, tensor, ...
            pred = busy.get(tname) if busy else tm.get(vname) if vname else None
            meas = self.profile.engine_time(prefix)
            theirs = self.percent(f"{prefix}_active_time_percent")
            if pred is None and meas is None and theirs is None:
                continue
            out.append({"engine": prefix, "predicted_busy_s": pred,
                        "predicted_busy_share": pred / self.T_predicted if pred is not None and self.T_predicted else None,
                        "measured_active_s": meas,
                        "measured_active_share": meas / self.T if meas is not None else None,
                        "profiler_percent": theirs})
        return out

    def _memory_time(self) -> float:
        """The predicted memory-side time (s): the slower of Q/BW and the DMA engines' time."""
        tm = dict(self.times)
        return max(tm.get("memory", self.entitlement.t_memory), tm.get("dma", 0.0),
                   tm.get("dma_transfers", 0.0))

    def gap_table(self) -> list[GapPart]:
        """T_measured - T_best split into :data:`CAUSES`; the parts add up to the gap exactly.

        Predicted part (T_predicted - T_best): the verdict's binding limit, named by cause. Measured
        part (T_measured - T_predicted), from the profile where it has the fields: idle time in the
        measured window (fixed cost), the active window beyond its busiest engine (no overlap), the
        busiest engine's active time beyond T_predicted (extra bytes at the predicted memory-side
        rate, the rest slower engine); what no field explains is unexplained."""
        from loopsim.base.fmt import fmt_time

        e, p = self.entitlement, self.profile
        parts = {c: [] for c in CAUSES}
        dp = self.T_predicted - e.T_best
        if dp > 0:
            told = 0.0
            for key, sec in self.predicted_parts:  # the timeline's own split of its T - T_best
                if sec and key in _TIMELINE_CAUSE:
                    parts[_TIMELINE_CAUSE[key]].append((sec, "predicted by the timeline"))
                    told += sec
            rest_p = dp - told
            # the verdict keeps the timeline's T to 12 significant digits: a residue below 1e-9
            # of T is that rounding, folded into the largest part (so the parts still add up)
            if told and abs(rest_p) <= 1e-9 * self.T_predicted:
                big = max((c for c in parts if parts[c]), key=lambda c: sum(x for x, _ in parts[c]))
                x, note = parts[big][-1]
                parts[big][-1] = (x + rest_p, note)
            elif abs(rest_p) > 1e-9 * self.T_predicted or not self.predicted_parts:
                parts[_cause_of_limit(self.limit)].append(
                    (rest_p, f"predicted: the verdict's {self.limit} ceiling is above T_best"
                     + (" (beyond the timeline's parts)" if self.predicted_parts else "")))
        rest = self.T - self.T_predicted
        window = p.total_active_time if p.total_active_time is not None else self.T
        if p.time_from != "total_active_time" and p.total_active_time is not None:
            idle = self.T - p.total_active_time
            parts["fixed cost"].append((idle, f"{p.time_from} - total_active_time: idle in the "
                                              "measured window"))
            rest -= idle
        extra_t, extra_note = 0.0, ""
        if p.Q is not None and e.Q:
            extra_t = (p.Q - e.Q) * self._memory_time() / e.Q
            extra_note = (f"{p.Q - e.Q:+,} bytes (profile {p.Q:,} vs Q {e.Q:,}) at "
                          "the predicted memory-side rate")
        busy = [(prefix, t) for prefix, t in p.engine_times if prefix != "sync_engine"]
        if busy:
            eng, t_busy = max(busy, key=lambda kv: kv[1])
            parts["no overlap"].append((window - t_busy, f"active window {fmt_time(window)} - "
                                                         f"busiest engine ({eng} {fmt_time(t_busy)})"))
            slow = t_busy - self.T_predicted
            if eng == "dma" and extra_t:
                parts["extra bytes"].append((extra_t, extra_note))
                slow -= extra_t
            parts["slower engine"].append((slow, f"{eng} active {fmt_time(t_busy)} vs predicted T "
                                                 f"{fmt_time(self.T_predicted)}"))
            rest -= window - self.T_predicted
        elif extra_t and (self.limit in ("memory", "dma") or self.predicted is None and e.bound == "memory"):
            parts["extra bytes"].append((extra_t, extra_note))
            rest -= extra_t
        parts["unexplained"].append((rest, "what the profile's fields do not account for"))
        return [GapPart(c, sum(x for x, _ in v), "; ".join(n for _, n in v)) for c, v in parts.items()
                if v]

    # -- output -------------------------------------------------------------------------------

    def as_dict(self) -> dict:
        p = self.profile
        prof = {x.name: percent_value(x, self.scale) for x in p.percents}
        return {"T": self.T, "T_from": p.time_from, "total_time": p.total_time,
                "total_active_time": p.total_active_time, "total_exec_time": p.total_exec_time,
                "T_best": self.entitlement.T_best, "T_predicted": self.T_predicted,
                "predicted_limit": self.limit or self.entitlement.bound,
                "gap": self.gap, "gap_to_predicted": self.T - self.T_predicted,
                "fraction_of_entitlement": self.fraction_of_entitlement,
                "fraction_of_predicted": self.fraction_of_predicted,
                "rate": self.rate, "MFU": self.mfu, "achieved_BW": self.achieved_bw,
                "BW_share": self.bw_share, "bound": self.entitlement.bound,
                "source": p.source,
                "flops": {"model_flops": p.model_flops, "hardware_flops": p.hardware_flops,
                          "transpose_flops": p.transpose_flops, "W_nest": self.entitlement.W},
                "hbm_read_bytes": p.hbm_read_bytes, "hbm_write_bytes": p.hbm_write_bytes,
                "spill_save_bytes": p.spill_save_bytes, "spill_reload_bytes": p.spill_reload_bytes,
                "percent_scale": self.scale, "percent_scale_why": self.scale_why,
                "unavailable": list(p.unavailable),
                "profiler": prof, "mfu": [f.as_dict() for f in self.mfu_figures()],
                "mfu_notes": self.mfu_notes(), "engines": self.engine_rows(),
                "throttle": self.throttle(),
                "gap_table": [g.as_dict() for g in self.gap_table()],
                "source_lines": self.source_lines(),
                "source_line_durations": DURATION_UNIT[self.profile.durations_assumed]
                if self.profile.instructions else None,
                "disagreements": [d.as_dict() for d in self.disagreements]}

    def source_lines(self) -> list[dict]:
        """Per source line: the profile's measured instruction time (``nki_source_location``)
        beside the predicted time of the kernel's statements on that line, per engine
        (``predicted_dma_s``: loads/stores, bytes over the DMA bandwidth;
        ``predicted_tensor_engine_s``: matmul instruction cycles; ``predicted_vector_engine_s``,
        ``..._scalar_engine_s``, ``..._gpsimd_engine_s``: the ops' instruction time on those
        engines), matched by line number; lines only one side has are listed too. Seconds; None
        where no statement of the line uses that engine."""
        pred: dict[int, dict] = {}
        for line, text, sec, kind in self.predicted_lines:
            e = pred.setdefault(line, {"statements": [], **{k: None for k in LINE_ENGINES}})
            if text not in e["statements"]:
                e["statements"].append(text)
            e[kind] = (e[kind] or 0.0) + sec
        out, seen = [], set()

        def row(loc, n, sec, hit):
            return {"location": loc, "line": n, "measured_s": sec,
                    **{f"predicted_{k}_s": hit[k] if hit else None for k in LINE_ENGINES},
                    "statements": hit["statements"] if hit else []}

        for loc, sec in self.profile.instructions:
            tail = loc.rpartition(":")[2]
            n = int(tail) if tail.isdigit() else None
            hit = pred.get(n) if n is not None else None
            if hit is not None:
                seen.add(n)
            out.append(row(loc, n, sec, hit))
        for n in sorted(set(pred) - seen):
            out.append(row(None, n, None, pred[n]))
        return out

    def throttle(self) -> dict | None:
        """The throttling fields, reported as such (percent), or None when the profile has none."""
        a = self.percent("throttle_active_time_percent")
        b = self.percent("max_achievable_util_with_throttling_percent")
        ns = self.profile.throttle_active_time_ns
        if a is None and b is None and ns is None:
            return None
        return {"throttle_active_time_percent": a, "max_achievable_util_with_throttling_percent": b,
                "throttle_active_time_s": ns * 1e-9 if ns is not None else None}

    def lines(self) -> list[str]:
        """Readable lines: the times, the gap table, figures of merit, engines, disagreements."""
        from loopsim.base.fmt import fmt_time

        e, p = self.entitlement, self.profile
        out = [f"measured ({p.source})"]
        beside = [f"{n} {fmt_time(getattr(p, n))}" for n in ("total_active_time", "total_exec_time",
                                                             "total_time")
                  if getattr(p, n) is not None and n != p.time_from]
        out.append(f"  T_measured          {fmt_time(self.T):>20}   ({p.time_from}"
                   + (f"; beside it: {', '.join(beside)}" if beside else "") + ")")
        if p.time_from == "total_time":
            out.append("  (total_time includes the run's idle start-up; a profile with "
                       "total_active_time is timed by that)")
        out.append(f"  gap = T - T_best    {fmt_time(self.gap):>20}   "
                   f"({self.fraction_of_entitlement:.1%} of entitlement reached)")
        out.append("  gap table           T_best " + fmt_time(e.T_best) + ", predicted T "
                   + fmt_time(self.T_predicted) + f" ({self.limit or e.bound}), measured T "
                   + fmt_time(self.T) + f" ({self.fraction_of_predicted:.1%} of predicted)")
        for g in self.gap_table():
            out.append(f"    {g.cause:<26}{fmt_time(g.seconds):>12}   {g.note}")
        bw = f"  achieved BW = Q/T   {self.achieved_bw / 1e9:>16.4g} GB/s   ({self.bw_share:.1%} of BW)"
        mfu = f"  MFU = W/T/P         {self.mfu:>20.1%}"
        out += [mfu, bw] if e.bound == "compute" else [bw] + ([mfu] if e.W else [])
        if p.spill_bytes is not None:
            out.append(f"  spill traffic       {p.spill_bytes:>20,} bytes   (save "
                       f"{p.spill_save_bytes or 0:,} + reload {p.spill_reload_bytes or 0:,}; part of "
                       "the profile's HBM bytes)")
        if any(x is not None for x in (p.model_flops, p.hardware_flops, p.transpose_flops)):
            out.append("  FLOPs               " + ", ".join(
                f"{n} {getattr(p, n):,}" for n in ("model_flops", "hardware_flops", "transpose_flops")
                if getattr(p, n) is not None) + f"; nest W {e.W:,}")
        for f in self.mfu_figures():
            theirs = "absent" if f.profiler is None else f"{f.profiler:.4g}%"
            tot = "-" if f.over_total_time is None else f"{f.over_total_time:.4g}%"
            num = f.numerator if " " not in f.numerator else f"({f.numerator})"
            out.append(f"  {f.field:<32} profiler {theirs}; {num} / (P x total_time) "
                       f"{tot}; over {p.time_from} {f.over_window:.4g}%")
        shown = [(x.name, percent_value(x, self.scale)) for x in p.percents
                 if x.name not in MFU_FIELDS and not x.name.endswith("_active_time_percent")
                 and "throttl" not in x.name]
        if shown:
            out.append("  profiler reports    " + ", ".join(f"{n} {v:.4g}%" for n, v in shown))
        if p.percents:
            out.append(f"  loopsim             MFU = W/T/P {self.mfu:.4g} ({100 * self.mfu:.4g}%), "
                       f"fraction of entitlement {self.fraction_of_entitlement:.1%}; *_percent "
                       f"fields read as {self.scale}" + (f" ({self.scale_why})" if self.scale_why else ""))
        if p.unavailable:
            out.append(f"  unavailable in the profile (negative sentinel): {', '.join(p.unavailable)}")
        rows = self.engine_rows()
        if rows:
            out.append(f"    {'engine':<16}{'predicted busy':>16}{'share':>8}{'measured active':>17}"
                       f"{'share':>8}{'profiler':>10}")
            for r in rows:
                def t(x):
                    return "-" if x is None else fmt_time(x)

                def pc(x):
                    return "-" if x is None else f"{x:.1%}"
                prof = "-" if r["profiler_percent"] is None else f"{r['profiler_percent']:.4g}%"
                out.append(f"    {r['engine']:<16}{t(r['predicted_busy_s']):>16}"
                           f"{pc(r['predicted_busy_share']):>8}{t(r['measured_active_s']):>17}"
                           f"{pc(r['measured_active_share']):>8}{prof:>10}")
        th = self.throttle()
        if th is not None:
            bits = []
            if th["throttle_active_time_percent"] is not None:
                bits.append(f"throttled {th['throttle_active_time_percent']:.4g}% of the time")
            if th["throttle_active_time_s"] is not None:
                bits.append(f"{fmt_time(th['throttle_active_time_s'])} throttled")
            if th["max_achievable_util_with_throttling_percent"] is not None:
                bits.append(f"utilisation allowed under throttling "
                            f"{th['max_achievable_util_with_throttling_percent']:.4g}%")
            out.append("  throttling          " + ", ".join(bits) +
                       " (the measured time includes it; the model has no throttling)")
        if p.instructions:
            out.append(f"  per source line: measured instruction time ({DURATION_UNIT[p.durations_assumed]}) "
                       "beside the predicted engine time")
            rows = self.source_lines()[:20]
            # the engine columns some line predicts (DMA and TE always, as before)
            cols = [k for k in LINE_ENGINES if k in ("dma", "tensor_engine")
                    or any(r[f"predicted_{k}_s"] is not None for r in rows)]
            out.append(f"    {'source line (nki_source_location)':<36}{'measured':>11}"
                       + "".join(f"{LINE_HEADS[k]:>14}" for k in cols) + "  statements")
            for r in rows:
                where = r["location"] or f"line {r['line']}"
                out.append(f"    {where:<36}{fmt_time(r['measured_s']):>11}"
                           + "".join(f"{fmt_time(r[f'predicted_{k}_s']):>14}" for k in cols)
                           + f"  {'; '.join(r['statements'])}")
        out += [f"  {n}" for n in self.mfu_notes()]
        if self.gap < 0:
            out.append("  the measured time beats T_best: a roof (P, BW) or the nest's Q is wrong")
        elif self.predicted is not None and self.T < self.T_predicted:
            out.append(f"  the measured time beats the predicted T ({self.limit}): the prediction's "
                       "constants are pessimistic for this kernel (the gap table's unexplained part "
                       "is negative by as much)")
        out += [f"  {d.line}" for d in self.disagreements]
        return out


def compare(e: Entitlement, profile: Profile, *, read_bytes: int | None = None,
            write_bytes: int | None = None, verdict=None,
            predicted_lines: tuple[tuple[int, str, float, str], ...] = (),
            predicted_parts: tuple[tuple[str, float], ...] = (),
            predicted_busy: tuple[tuple[str, float], ...] = ()) -> Comparison:
    """Set ``profile`` against ``e`` and the ``verdict`` (its T is the prediction; None: hand
    counts, T_best); ``read_bytes``/``write_bytes`` split the nest's Q (optional), so a profile
    giving only one of HBM read/write bytes is still compared; ``predicted_lines``: (source line,
    statement, predicted seconds, engine) set beside the profile's per-line instruction time;
    ``predicted_parts``: the timeline's (cause, seconds) split of the predicted T - T_best. InputError when the profile's
    ``*_percent`` fields cannot be read as percent or fraction (:func:`percent_scale`)."""
    scale, why = percent_scale(profile, e.P)
    ds: list[Disagreement | None] = []
    more = ("more", "fewer")
    if profile.flops is not None:
        ds.append(_disagree("W", e.W, profile.flops,
                            "the profile did {pct} {way} FLOPs than the nest implies", more, "FLOPs"))
    if profile.Q is not None:
        ds.append(_disagree("Q", e.Q, profile.Q,
                            "the profile moved {pct} {way} bytes than the nest implies", more, "bytes"))
    else:
        for what, verb, nest, prof in (("Q read", "read", read_bytes, profile.hbm_read_bytes),
                                       ("Q written", "wrote", write_bytes, profile.hbm_write_bytes)):
            if nest is not None and prof is not None:
                ds.append(_disagree(what, nest, prof, f"the profile {verb} {{pct}} {{way}} HBM bytes "
                                    "than the nest implies", more, "bytes"))
    higher = ("higher", "lower")
    if profile.mm_arithmetic_intensity is not None and e.Q:
        ds.append(_disagree("I", e.I, profile.mm_arithmetic_intensity,
                            "the profile's intensity is {pct} {way} than the nest's", higher,
                            "FLOPs/byte"))
    if profile.peak_flops_bandwidth_ratio is not None:
        ds.append(_disagree("ridge", e.ridge, profile.peak_flops_bandwidth_ratio,
                            "the profile's ridge (Peak Flops Bandwidth Ratio) is {pct} {way} than "
                            "the sheet's P/BW: check the scope", higher, "FLOPs/byte"))
    pred = limit = None
    times: tuple = ()
    if verdict is not None:
        pred, limit, times = verdict.T, verdict.limit, tuple(verdict.times)
    return Comparison(e, profile, tuple(d for d in ds if d is not None), pred, limit or "",
                      times, scale, why, tuple(predicted_lines), tuple(predicted_parts),
                      tuple(predicted_busy))
