"""Measured points: a measured time (and optionally a profiler summary) set against the entitlement.

A measured file is JSON with at least ``time_s``, the measured time in seconds. It may also carry
the Neuron profiler's summary fields as the profiler writes them, snake_case (``hardware_flops``,
``transpose_flops``, ``hbm_read_bytes``, ``hbm_write_bytes``, ``mm_arithmetic_intensity``,
``peak_flops_bandwidth_ratio``, ``total_time``) or as the Overall Summary shows them ("Hardware
Flops", "Raw Flops", "HBM read bytes", "Mm Arithmetic Intensity", ...): keys are compared with
case, spaces and hyphens folded (``Raw Flops`` == ``raw_flops``). The ``summary-json`` shape, one
top-level key wrapping the metrics dict, and the legacy ``{"summary": [{...}]}`` shape are
unwrapped. Unknown keys are ignored (a summary has about a hundred).

Values are numbers, or strings as the UI shows them with their unit: times ("2.05 ms", "310 us"),
FLOP counts ("64.694 GFLOPS": 64.694e9 FLOPs, the count, as the UI labels it), bytes ("1.38 GiB",
"512 KB"), percentages ("45.2%"), plain counts ("12,345"). A time without a unit is refused in a
string ("1e-3" is ambiguous); a UI string that rounds a count (1.38 GiB) gives the nearest integer.
``*_percent`` fields are percent (0-100) as the schema [S20] defines them.

A profile alone (no spec) is a hand count: :meth:`Profile.work` is W = hardware_flops -
transpose_flops and :meth:`Profile.traffic` is Q = hbm_read_bytes + hbm_write_bytes, or W /
mm_arithmetic_intensity when the bytes are missing. Spill traffic (``spill_save_bytes``,
``spill_reload_bytes``) is kept apart: the profiler's HBM bytes already include it.

From the entitlement (W FLOPs, Q bytes, P FLOP/s, BW bytes/s) and T_measured (s):

- gap = T_measured - T_best (s); fraction of entitlement reached = T_best / T_measured
- MFU = W / T_measured / P (the figure of merit for a compute-bound kernel)
- achieved BW = Q / T_measured (bytes/s) and its share of BW (for a memory-bound kernel)
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
from pathlib import Path
from typing import Mapping

from loopsim.model.entitle import Entitlement
from loopsim.base.errors import InputError
from loopsim.base.limits import MAX_TIME_S, MIN_TIME_S

#: relative difference above which a profile field is reported as disagreeing with the nest
TOLERANCE = 0.01

#: folded key -> field; the profiler's snake_case names and its UI's title-case names
_ALIASES = {
    "time_s": "time_s",
    "total_time": "total_time",
    "total_runtime": "total_time",
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
    "mfu_estimated_percent": "mfu_estimated_percent",
    "model_flops_utilization": "mfu_estimated_percent",
    "mfu_inst_estimated_percent": "mfu_inst_estimated_percent",
    "hfu_estimated_percent": "hfu_estimated_percent",
    "hardware_flops_utilization": "hfu_estimated_percent",
    "mbu_estimated_percent": "mbu_estimated_percent",
    "memory_bandwidth_utilization": "mbu_estimated_percent",
}

#: what kind of quantity each field is (for UI strings with units); the rest are plain ratios
_KIND = {"time_s": "time", "total_time": "time", "mm_arithmetic_intensity": "ratio",
         "peak_flops_bandwidth_ratio": "ratio"}
_KIND.update({f: "percent" for f in set(_ALIASES.values()) if f.endswith("_percent")})
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
}
_NUMBER = re.compile(r"\s*([-+]?(?:\d[\d,]*)?\.?\d+(?:[eE][-+]?\d+)?)\s*(\S*)\s*$")


def _fold(key: str) -> str:
    return "_".join(key.strip().lower().replace("-", " ").split())


@dataclass(frozen=True, slots=True)
class Profile:
    """One measurement. ``time_s`` in seconds; FLOPs and bytes as integers; None where absent."""

    time_s: float
    source: str = ""
    hardware_flops: int | None = None
    transpose_flops: int | None = None
    hbm_read_bytes: int | None = None
    hbm_write_bytes: int | None = None
    mm_arithmetic_intensity: float | None = None
    peak_flops_bandwidth_ratio: float | None = None
    model_flops: int | None = None
    spill_save_bytes: int | None = None
    spill_reload_bytes: int | None = None
    mfu_estimated_percent: float | None = None
    mfu_inst_estimated_percent: float | None = None
    hfu_estimated_percent: float | None = None
    mbu_estimated_percent: float | None = None

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
    def hbm_bytes(self) -> int | None:
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

    def work(self) -> int:
        """W for a profile used without a spec, FLOPs; InputError naming the file if absent."""
        if self.flops is None:
            raise InputError(f"{self.source or 'measured'}: no FLOP count: expected key "
                             "hardware_flops (or 'Hardware Flops'); give a SPEC or --flops")
        return self.flops

    def traffic(self) -> tuple[int, str]:
        """(Q bytes, how it was obtained) for a profile used without a spec: HBM read + write
        bytes, else W / mm_arithmetic_intensity rounded to the nearest byte."""
        if self.hbm_bytes is not None:
            return self.hbm_bytes, "hbm_read_bytes + hbm_write_bytes"
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
              and (len(data) == 1 or _fold(k) == "summary")]
    for v in nested:
        if isinstance(v, list):
            v = v[0] if v and isinstance(v[0], dict) else {}
        if isinstance(v, dict):
            for k, x in _metrics(v, where).items():
                flat.setdefault(k, x)
    return flat


def _number(value: object, key: str, where: str, *, integer: bool) -> int | float:
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
    if kind in ("flops", "bytes"):
        return int(f.to_integral_value())
    return float(f)


def parse(data: object, where: str = "measured") -> Profile:
    """A :class:`Profile` from a decoded measured file; errors name ``where``, the key and value."""
    fields: dict[str, object] = {}
    for key, value in _metrics(data, where).items():
        name = _ALIASES.get(_fold(str(key)))
        if name is None or name in fields:
            continue
        integer = name.endswith(("_flops", "_bytes"))
        fields[name] = (_quantity(value, str(key), name, where), key, integer)
    if "time_s" not in fields and "total_time" not in fields:
        raise InputError(f"{where}: no measured time: expected key time_s (seconds)")
    out: dict[str, object] = {}
    for name, (value, key, integer) in fields.items():
        if name in ("time_s", "total_time"):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or \
                    not math.isfinite(value) or value <= 0:
                raise InputError(f"{where}: {key}={value!r} must be a positive number of seconds")
            if not MIN_TIME_S <= value <= MAX_TIME_S:
                raise InputError(f"{where}: {key}={value!r} s is outside {MIN_TIME_S:g} .. "
                                 f"{MAX_TIME_S:g} s, the times loopsim takes (see docs/errors.md)")
            continue
        out[name] = _number(value, str(key), where, integer=integer)
    t = fields.get("time_s", fields.get("total_time"))[0]
    return Profile(float(t), where, **out)


def load(path: str) -> Profile:
    """Read a measured JSON file (see the module docstring)."""
    from loopsim.base import jsonfile

    data = jsonfile.read(path, f"--measured {path}", InputError)
    return dataclasses.replace(parse(data, f"--measured {path}"), source=path)


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


@dataclass(frozen=True, slots=True)
class Comparison:
    """A measured time against an entitlement. Times in seconds, rates in FLOP/s, BW in bytes/s."""

    entitlement: Entitlement
    profile: Profile
    disagreements: tuple[Disagreement, ...]

    @property
    def T(self) -> float:
        return self.profile.time_s

    @property
    def gap(self) -> float:
        """T_measured - T_best, seconds (negative: faster than entitled, so an input is wrong)."""
        return self.T - self.entitlement.T_best

    @property
    def fraction_of_entitlement(self) -> float:
        """T_best / T_measured: 1 at the roof."""
        return self.entitlement.T_best / self.T

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

    @property
    def profiler_mfu(self) -> tuple[str, float] | None:
        """(field, percent) of the profiler's own MFU: ``mfu_inst_estimated_percent`` (its
        FLOPs from the instructions, as loopsim counts W) else ``mfu_estimated_percent``."""
        p = self.profile
        for name in ("mfu_inst_estimated_percent", "mfu_estimated_percent"):
            v = getattr(p, name)
            if v is not None:
                return name, v
        return None

    def mfu_notes(self) -> list[str]:
        """Sentences on where the profiler's MFU and loopsim's figures part, and why."""
        e, p, out = self.entitlement, self.profile, []
        pm = self.profiler_mfu
        ours = 100 * self.mfu
        if p.mfu_estimated_percent is not None and p.model_flops == 0:
            out.append("the profiler's mfu_estimated_percent counts model_flops from HLO stats, "
                       "0 for an NKI kernel; mfu_inst_estimated_percent is the comparable one")
            if pm is not None and pm[0] == "mfu_estimated_percent":
                pm = None
        if pm is not None:
            name, theirs = pm
            if theirs and abs(theirs - ours) > TOLERANCE * max(theirs, ours):
                w = p.flops if p.flops is not None else e.W
                implied = w / (self.T * theirs / 100)
                r = implied / e.P
                why = ("a factor of 2: the profile divides by both physical cores of an LNC=2 core "
                       "(or the sheet covers two cores and the profile one); check the sheet's scope"
                       if abs(r - 2) < 0.05 or abs(r - 0.5) < 0.025 else
                       "the profile counts other FLOPs than the nest (see W above)"
                       if any(d.what == "W" for d in self.disagreements) else
                       "a different Tensor Engine clock, dtype rate or scope")
                out.append(f"the profiler's MFU {theirs:.3g}% differs from loopsim's W/T/P "
                           f"{ours:.3g}%: it implies a peak of {implied / 1e12:.4g} TFLOP/s against "
                           f"the sheet's P = {e.P / 1e12:.4g} TFLOP/s ({r:.3g}x): {why}")
        if e.bound == "memory" and e.W:
            out.append(f"memory-bound (I = {e.I:.4g} < ridge {e.ridge:.4g} FLOPs/byte): MFU cannot "
                       f"exceed I/ridge = {e.I / e.ridge:.1%}; the fraction of entitlement "
                       f"({self.fraction_of_entitlement:.1%}) is measured against that limit")
        return out

    def as_dict(self) -> dict:
        p = self.profile
        prof = {k: getattr(p, k) for k in ("mfu_estimated_percent", "mfu_inst_estimated_percent",
                                           "hfu_estimated_percent", "mbu_estimated_percent")
                if getattr(p, k) is not None}
        return {"T": self.T, "gap": self.gap, "fraction_of_entitlement": self.fraction_of_entitlement,
                "rate": self.rate, "MFU": self.mfu, "achieved_BW": self.achieved_bw,
                "BW_share": self.bw_share, "bound": self.entitlement.bound,
                "source": self.profile.source,
                "spill_save_bytes": p.spill_save_bytes, "spill_reload_bytes": p.spill_reload_bytes,
                "profiler": prof, "mfu_notes": self.mfu_notes(),
                "disagreements": [d.as_dict() for d in self.disagreements]}

    def lines(self) -> list[str]:
        """Readable lines: the gap, the bound-specific figure of merit, the disagreements."""
        from loopsim.base.fmt import fmt_time

        e = self.entitlement
        out = [f"measured ({self.profile.source})",
               f"  T_measured          {fmt_time(self.T):>20}",
               f"  gap = T - T_best    {fmt_time(self.gap):>20}   "
               f"({self.fraction_of_entitlement:.1%} of entitlement reached)"]
        bw = f"  achieved BW = Q/T   {self.achieved_bw / 1e9:>16.4g} GB/s   ({self.bw_share:.1%} of BW)"
        mfu = f"  MFU = W/T/P         {self.mfu:>20.1%}"
        out += [mfu, bw] if e.bound == "compute" else [bw] + ([mfu] if e.W else [])
        p = self.profile
        if p.spill_bytes is not None:
            out.append(f"  spill traffic       {p.spill_bytes:>20,} bytes   (save "
                       f"{p.spill_save_bytes or 0:,} + reload {p.spill_reload_bytes or 0:,}; part of "
                       "the profile's HBM bytes)")
        shown = [(label, getattr(p, k)) for label, k in (
            ("MFU (mfu_inst_estimated_percent)", "mfu_inst_estimated_percent"),
            ("MFU (mfu_estimated_percent)", "mfu_estimated_percent"),
            ("HFU", "hfu_estimated_percent"), ("MBU", "mbu_estimated_percent")) if getattr(p, k) is not None]
        if shown:
            out.append("  profiler reports    " + ", ".join(f"{l} {v:.4g}%" for l, v in shown))
            out.append(f"  loopsim             MFU = W/T/P {self.mfu:.4g} ({100 * self.mfu:.4g}%), "
                       f"fraction of entitlement {self.fraction_of_entitlement:.1%}")
        out += [f"  {n}" for n in self.mfu_notes()]
        if self.gap < 0:
            out.append("  the measured time beats T_best: a roof (P, BW) or the nest's Q is wrong")
        out += [f"  {d.line}" for d in self.disagreements]
        return out


def compare(e: Entitlement, profile: Profile, *, read_bytes: int | None = None,
            write_bytes: int | None = None) -> Comparison:
    """Set ``profile`` against ``e``; ``read_bytes``/``write_bytes`` split the nest's Q (optional),
    so a profile giving only one of HBM read/write bytes is still compared."""
    ds: list[Disagreement | None] = []
    more = ("more", "fewer")
    if profile.flops is not None:
        ds.append(_disagree("W", e.W, profile.flops,
                            "the profile did {pct} {way} FLOPs than the nest implies", more, "FLOPs"))
    if profile.hbm_bytes is not None:
        ds.append(_disagree("Q", e.Q, profile.hbm_bytes,
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
    return Comparison(e, profile, tuple(d for d in ds if d is not None))
