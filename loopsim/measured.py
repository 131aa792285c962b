"""Measured points: a measured time (and optionally a profiler summary) set against the entitlement.

A measured file is JSON with at least ``time_s``, the measured time in seconds. It may also carry
the Neuron profiler's summary fields as the profiler writes them, snake_case (``hardware_flops``,
``transpose_flops``, ``hbm_read_bytes``, ``hbm_write_bytes``, ``mm_arithmetic_intensity``,
``peak_flops_bandwidth_ratio``, ``total_time``) or as the Overall Summary shows them ("Hardware
Flops", "Raw Flops", "HBM read bytes", "Mm Arithmetic Intensity", ...): keys are compared with
case, spaces and hyphens folded (``Raw Flops`` == ``raw_flops``). The ``summary-json`` shape, one
top-level key wrapping the metrics dict, and the legacy ``{"summary": [{...}]}`` shape are
unwrapped. Unknown keys are ignored (a summary has about a hundred).

From the entitlement (W FLOPs, Q bytes, P FLOP/s, BW bytes/s) and T_measured (s):

- gap = T_measured - T_best (s); fraction of entitlement reached = T_best / T_measured
- MFU = W / T_measured / P (the figure of merit for a compute-bound kernel)
- achieved BW = Q / T_measured (bytes/s) and its share of BW (for a memory-bound kernel)
- a line for each of W, Q and I (and the ridge) where the profile disagrees with the nest by
  more than 1%, saying which way.
"""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from .entitle import Entitlement
from .errors import InputError

#: relative difference above which a profile field is reported as disagreeing with the nest
TOLERANCE = 0.01

#: folded key -> field; the profiler's snake_case names and its UI's title-case names
_ALIASES = {
    "time_s": "time_s",
    "total_time": "total_time",
    "hardware_flops": "hardware_flops",
    "raw_flops": "hardware_flops",
    "transpose_flops": "transpose_flops",
    "hbm_read_bytes": "hbm_read_bytes",
    "hbm_write_bytes": "hbm_write_bytes",
    "mm_arithmetic_intensity": "mm_arithmetic_intensity",
    "matmul_arithmetic_intensity": "mm_arithmetic_intensity",
    "peak_flops_bandwidth_ratio": "peak_flops_bandwidth_ratio",
}


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


def parse(data: object, where: str = "measured") -> Profile:
    """A :class:`Profile` from a decoded measured file; errors name ``where``, the key and value."""
    fields: dict[str, object] = {}
    for key, value in _metrics(data, where).items():
        name = _ALIASES.get(_fold(str(key)))
        if name is None or name in fields:
            continue
        integer = name.endswith(("_flops", "_bytes"))
        fields[name] = (value, key, integer)
    if "time_s" not in fields and "total_time" not in fields:
        raise InputError(f"{where}: no measured time: expected key time_s (seconds)")
    out: dict[str, object] = {}
    for name, (value, key, integer) in fields.items():
        if name in ("time_s", "total_time"):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or \
                    not math.isfinite(value) or value <= 0:
                raise InputError(f"{where}: {key}={value!r} must be a positive number of seconds")
            continue
        out[name] = _number(value, str(key), where, integer=integer)
    t = fields.get("time_s", fields.get("total_time"))[0]
    return Profile(float(t), where, **out)


def load(path: str) -> Profile:
    """Read a measured JSON file (see the module docstring)."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as e:
        raise InputError(f"--measured {path}: cannot read ({e.strerror})") from None
    except UnicodeDecodeError:
        raise InputError(f"--measured {path}: not a UTF-8 JSON file") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise InputError(f"--measured {path}: malformed JSON: {e}") from None
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

    def as_dict(self) -> dict:
        return {"T": self.T, "gap": self.gap, "fraction_of_entitlement": self.fraction_of_entitlement,
                "rate": self.rate, "MFU": self.mfu, "achieved_BW": self.achieved_bw,
                "BW_share": self.bw_share, "bound": self.entitlement.bound,
                "source": self.profile.source,
                "disagreements": [d.as_dict() for d in self.disagreements]}

    def lines(self) -> list[str]:
        """Readable lines: the gap, the bound-specific figure of merit, the disagreements."""
        from .report import fmt_time

        e = self.entitlement
        out = [f"measured ({self.profile.source})",
               f"  T_measured          {fmt_time(self.T):>20}",
               f"  gap = T - T_best    {fmt_time(self.gap):>20}   "
               f"({self.fraction_of_entitlement:.1%} of entitlement reached)"]
        bw = f"  achieved BW = Q/T   {self.achieved_bw / 1e9:>16.4g} GB/s   ({self.bw_share:.1%} of BW)"
        mfu = f"  MFU = W/T/P         {self.mfu:>20.1%}"
        out += [mfu, bw] if e.bound == "compute" else [bw] + ([mfu] if e.W else [])
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
