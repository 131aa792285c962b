"""Hardware sheets: TOML in ``hardware/`` → a frozen :class:`Hardware` with every number sourced.

A sheet states only *sourced* (or, for the illustrative toy, *defined*) inputs; the loader computes
every derived value from them and records the derivation beside it:

- P(dtype)  = pe_rows × pe_cols × 2 FLOP × clock_hz × physical_cores × factor(dtype)   [FLOP/s]
- bw        = hbm.device_bw ÷ cores_per_device × physical_cores                         [bytes/s]
- sbuf_partition_bytes = sbuf.bytes ÷ partitions                                        [bytes]
- engine roof = width(dtype) × engine clock_hz × physical_cores                         [elements/s]
- dma_bw    = dma.core_bw × physical_cores (all DMA engines of the scope)               [bytes/s]

Sheets are read with :mod:`tomllib` only; nothing in a sheet is executed. Every malformed sheet is
reported as one line, ``<file>: <key path>=<value> <what is wrong>``.

Units: bytes, bytes/s, FLOP/s, Hz, all integers in the sheets (``2.4 GHz`` is ``2400000000``).

Examples
--------
>>> hw = load("trn1-core")
>>> hw.P("bf16")
91750400000000
>>> hw.bw
410000000000
>>> round(hw.ridge("bf16"), 1)
223.8
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path

from loopsim.base import tomlfile
from loopsim.base.data import data_dir
from loopsim.base.errors import HardwareError
from loopsim.base.limits import MAX_INT, MAX_MM_INIT_CYCLES

__all__ = ["Source", "Alternative", "Value", "Measured", "Hardware", "names", "load", "loads"]

SCHEMA = 1
DTYPES = ("bf16", "fp16", "tf32", "fp32", "fp8", "mxfp8", "mxfp4")
ENGINES = ("vector", "scalar", "gpsimd")
ROOFS = ("spec", "measured")
ALT_PER = ("device", "core", "factor", "value")
FLOPS_PER_MAC = 2


# --------------------------------------------------------------------------------------------
# value types
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Source:
    """Where a number comes from.

    ``kind`` is one of:

    - ``"doc"``: ``doc`` is a key of hardware-sources.md §0 (``S2``), ``title`` its document title,
      and ``quote`` verbatim text from it, or, when only a table cell was recorded, ``paraphrase``.
    - ``"derived"``: ``derivation`` is the arithmetic the loader did from other fields.
    - ``"defined"``: ``derivation`` explains a value the sheet itself defines (illustrative machines,
      a sheet's own scope); never a property of real hardware.
    - ``"measured"``: ``derivation`` says where it was measured.
    """

    kind: str
    doc: str = ""
    title: str = ""
    quote: str = ""
    paraphrase: str = ""
    derivation: str = ""
    note: str = ""

    def __str__(self) -> str:
        if self.kind == "doc":
            text = f'[{self.doc}] {self.title}: '
            text += f'"{self.quote}"' if self.quote else f"(paraphrase) {self.paraphrase}"
        elif self.kind == "derived":
            text = f"derived: {self.derivation}"
        elif self.kind == "measured":
            text = f"measured: {self.derivation}"
        else:
            text = f"defined: {self.derivation}"
        return text + (f" — {self.note}" if self.note else "")


@dataclass(frozen=True, slots=True)
class Alternative:
    """A figure a source gives that the sheet does not use, kept beside the one it does.

    ``per`` says what the value covers: ``"device"``, ``"core"`` (one physical core),
    ``"factor"`` (a dtype rate factor relative to bf16) or ``"value"`` (a limit, not scaled).
    """

    value: int | Fraction
    per: str
    source: Source

    def in_scope(self, physical_cores: int, cores_per_device: int) -> Fraction | None:
        """The value scaled to a sheet's scope (None for factors)."""
        if self.per == "device":
            return Fraction(self.value) * physical_cores / cores_per_device
        if self.per == "core":
            return Fraction(self.value) * physical_cores
        return None  # factors and limits do not scale with the scope


@dataclass(frozen=True, slots=True)
class Value:
    """One number of a sheet (given or derived), with its unit, source and alternatives."""

    key: str  # dotted key path, e.g. "tensor.clock_hz" or "P.bf16"
    value: int | Fraction | float
    unit: str
    source: Source
    alternatives: tuple[Alternative, ...] = ()
    assumed: bool = False
    reason: str = ""


@dataclass(frozen=True, slots=True)
class Measured:
    """Measured roofs: FLOP/s per dtype and bytes/s for the sheet's scope, each with where measured."""

    flops: tuple[tuple[str, int, str], ...]  # (dtype, FLOP/s, where)
    bw: int
    bw_where: str


def _fmt(v) -> str:
    if isinstance(v, Fraction):
        return _fmt(v.numerator) if v.denominator == 1 else f"{v} (≈{float(v):.6g})"
    if isinstance(v, float):
        return f"{v:.6g}"
    if isinstance(v, int) and abs(v) >= 10_000:
        return f"{v:_} (≈{v:.4g})"
    return str(v)


def _to_int(x: Fraction) -> int:
    return x.numerator if x.denominator == 1 else round(x)


# --------------------------------------------------------------------------------------------
# the sheet
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Hardware:
    """One machine scope's roofs and limits, every number with its source or derivation.

    Fields are per the sheet's *scope* (``physical_cores`` cores) unless named per core:
    ``sbuf_bytes`` and ``dma_engines`` are per physical core, because each physical core has its
    own SBUF, PSUM and DMA engines.
    """

    name: str
    about: str
    scope: str
    physical_cores: int
    cores_per_device: int
    partitions: int | None
    sbuf_bytes: int  # per physical core
    bw: int  # bytes/s for the whole scope (spec, or measured after with_roofs("measured"))
    device_bw: int
    clock_hz: int
    pe_rows: int
    pe_cols: int
    moving_max: int
    stationary_max: int
    psum_banks: int
    psum_bank_bytes: int
    mm_init_cycles: int
    mm_init_assumed: bool
    dma_engines: int  # per physical core
    link_bw: int | None  # bytes/s per interconnect link; None where no source gives it
    illustrative: bool
    roofs: str  # "spec" or "measured"
    path: str
    flops: tuple[tuple[str, int], ...]  # (dtype, FLOP/s for the scope), spec or measured
    engines: tuple[tuple[str, int | None, tuple[tuple[str, int], ...]], ...]  # (name, clock, widths)
    values: tuple[Value, ...]
    measured: Measured | None = None
    notes: tuple[str, ...] = ()
    dma_bw: int | None = None  # bytes/s, aggregate of every DMA engine in the scope; None if unsourced
    _spec_flops: tuple[tuple[str, int], ...] = field(default=(), repr=False, compare=False)

    # -- roofs -------------------------------------------------------------------------------

    def P(self, dtype: str = "bf16") -> int:
        """Tensor Engine peak for ``dtype`` over the whole scope, FLOP/s."""
        for d, p in self.flops:
            if d == dtype:
                return p
        known = ", ".join(d for d, _ in self.flops)
        what = "measured roof" if self.roofs == "measured" else "documented Tensor Engine rate"
        raise HardwareError(f"{self.name}: dtype '{dtype}' has no {what}; known: {known}")

    def dtypes(self) -> list[str]:
        return [d for d, _ in self.flops]

    def ridge(self, dtype: str = "bf16") -> float:
        """P(dtype) / bw, FLOP per byte."""
        return self.P(dtype) / self.bw

    def engine_roof(self, engine: str, dtype: str = "fp32") -> float:
        """Vector / Scalar / GpSimd throughput over the scope, elements per second.

        width(dtype) elements/cycle × engine clock × physical_cores, the width being the
        documented data-path width for ``dtype`` (or the engine's width for "other data types").
        """
        for name, clock, widths in self.engines:
            if name != engine:
                continue
            w = dict(widths)
            width = w.get(dtype, w.get("default"))
            if clock is None or width is None:
                raise HardwareError(
                    f"{self.name}: engines.{engine} has no documented data-path width for "
                    f"'{dtype}'" if clock is not None else
                    f"{self.name}: engines.{engine} has no documented clock"
                )
            return float(width * clock * self.physical_cores)
        known = ", ".join(n for n, _, _ in self.engines) or "none"
        raise HardwareError(f"{self.name}: no engine '{engine}' on this sheet; known: {known}")

    # -- sizes -------------------------------------------------------------------------------

    @property
    def sbuf_partition_bytes(self) -> int:
        """SBUF bytes per partition per physical core (== sbuf_bytes on flat-memory sheets)."""
        return self.sbuf_bytes if self.partitions is None else self.sbuf_bytes // self.partitions

    @property
    def k_tile_max(self) -> int:
        """Largest contraction tile K_t of a matmul, elements: the SBUF partitions the operands lie
        on and the PE rows they feed (the PE rows alone on a flat-memory sheet)."""
        return min(self.partitions, self.pe_rows) if self.partitions else self.pe_rows

    @property
    def sbuf_bytes_in_scope(self) -> int:
        """SBUF bytes over all physical cores of the scope (each core has its own SBUF)."""
        return self.sbuf_bytes * self.physical_cores

    @property
    def psum_partition_bytes(self) -> int:
        return self.psum_banks * self.psum_bank_bytes

    @property
    def psum_bank_fp32(self) -> int:
        """fp32 values one PSUM bank holds per partition (512 on NeuronCore)."""
        return self.psum_bank_bytes // 4

    @property
    def mm_init_seconds(self) -> float:
        return self.mm_init_cycles / self.clock_hz

    def value(self, key: str) -> Value:
        """The sourced/derived record for a dotted key (``"hbm.device_bw"``, ``"P.bf16"``, ``"bw"``)."""
        for v in self.values:
            if v.key == key:
                return v
        raise HardwareError(f"{self.name}: no value '{key}'; known: {', '.join(v.key for v in self.values)}")

    # -- roof kinds --------------------------------------------------------------------------

    def with_roofs(self, which: str) -> Hardware:
        """'spec' → the spec sheet; 'measured' → a copy whose P and BW are the measured ones."""
        if which not in ROOFS:
            raise HardwareError(f"{self.name}: roofs='{which}' must be one of: {', '.join(ROOFS)}")
        if which == "spec":
            if self.roofs == "spec":
                return self
            return dataclasses.replace(self, roofs="spec", flops=self._spec_flops, bw=self._spec_bw())
        if self.measured is None:
            raise HardwareError(
                f"{self.name}: roofs='measured' but the sheet has no [measured] section; "
                "measure P and BW and add them, or use the spec roofs"
            )
        m = self.measured
        return dataclasses.replace(
            self, roofs="measured", flops=tuple((d, p) for d, p, _ in m.flops), bw=m.bw
        )

    def roof_unfitted(self, limit: str, dtype: str) -> bool:
        """Whether, on measured roofs, the roof ``limit`` ("memory" or "compute" for ``dtype``) is a
        spec value that ``loopsim calibrate`` kept for want of a measurement (its ``where`` says
        "not fitted"): a time it sets is still a bound, not a prediction."""
        if self.roofs != "measured" or self.measured is None:
            return False
        if limit == "memory":
            return self.measured.bw_where.startswith("not fitted")
        if limit == "compute":
            return any(d == dtype and w.startswith("not fitted") for d, _, w in self.measured.flops)
        return False

    def _spec_bw(self) -> int:
        return int(self.value("bw").value)

    # -- text --------------------------------------------------------------------------------

    def describe(self) -> str:
        """Every value with its source or derivation, alternatives in scope, and the scope."""
        lines = [
            f"{self.name} — {self.about}",
            f"scope: {self.scope} (physical_cores={self.physical_cores}, "
            f"cores_per_device={self.cores_per_device})",
            f"roofs: {self.roofs}" + (" (ILLUSTRATIVE machine, not real hardware)" if self.illustrative else ""),
            f"sheet: {self.path}",
        ]
        if self.roofs == "measured" and self.measured is not None:
            lines.append(f"  measured bw = {_fmt(self.measured.bw)} bytes/s — {self.measured.bw_where}")
            for d, p, where in self.measured.flops:
                lines.append(f"  measured P.{d} = {_fmt(p)} FLOP/s — {where}")
        for v in self.values:
            flag = "  [ASSUMED: " + v.reason + "]" if v.assumed else ""
            lines.append(f"  {v.key} = {_fmt(v.value)} {v.unit}{flag}")
            lines.append(f"      {v.source}")
            for a in v.alternatives:
                scaled = a.in_scope(self.physical_cores, self.cores_per_device)
                where = f" per {a.per}" if a.per in ("device", "core") else ""
                extra = f"; in this scope {_fmt(scaled)}" if scaled is not None and scaled != a.value else ""
                lines.append(f"      alternative: {_fmt(a.value)}{where}{extra} — {a.source}")
        for n in self.notes:
            lines.append(f"  note: {n}")
        return "\n".join(lines)


# --------------------------------------------------------------------------------------------
# loading
# --------------------------------------------------------------------------------------------


def _bundled_dir() -> Path:
    return data_dir("hardware")


def names() -> list[str]:
    """Names of the bundled sheets, sorted."""
    root = _bundled_dir()
    try:
        return sorted(p.name[:-5] for p in root.iterdir() if p.name.endswith(".toml"))
    except (FileNotFoundError, NotADirectoryError):
        return []


def load(name_or_path: str) -> Hardware:
    """Load a bundled sheet by name, or a sheet file by path. The rule is textual (the same as for
    specs): a path contains a separator or ends in ``.toml``; anything else is a bundled name."""
    s = str(name_or_path)
    if tomlfile.is_path(s):
        p = tomlfile.existing_file(s, HardwareError, "hardware sheet file")
        return loads(tomlfile.read_text(p, s, HardwareError, "sheet"), origin=s)
    known = names()
    if s not in known:
        raise HardwareError(f"unknown hardware '{_clip(s)}'; known: {', '.join(known)} (a sheet "
                            "file's path contains / or ends in .toml)")
    res = _bundled_dir() / f"{s}.toml"
    return loads(tomlfile.read_text(res, f"hardware/{s}.toml", HardwareError, "sheet"),
                 origin=f"hardware/{s}.toml")


_clip = tomlfile.clip


def loads(text: str, origin: str = "<string>") -> Hardware:
    """Parse and validate one sheet's TOML text. ``origin`` names it in errors."""
    data = tomlfile.loads(text, origin, HardwareError, malformed="(file)=<unparsable> is not valid TOML")
    return _Builder(origin, data).build()


_VALUE_KEYS = {"value", "source", "quote", "paraphrase", "defined", "note", "alternatives", "assumed", "reason"}
_ALT_KEYS = {"value", "per", "source", "quote", "paraphrase", "defined", "note"}
_TOP_KEYS = {"schema", "name", "about", "illustrative", "notes", "sources", "scope", "tensor", "sbuf",
             "psum", "hbm", "dma", "engines", "link", "measured"}


class _Builder:
    def __init__(self, origin: str, data: dict):
        self.origin = origin
        self.data = data
        self.values: list[Value] = []
        self.sources: dict[str, str] = {}

    # -- error helpers -----------------------------------------------------------------------

    def fail(self, key: str, value, what: str):
        if value is _MISSING:
            shown = "<missing>"
        elif isinstance(value, _Shown):
            shown = str(value)
        else:
            shown = _short(value)
        raise HardwareError(f"{self.origin}: {key}={shown} {what}")

    def table(self, node, key: str, *, required=True) -> dict | None:
        if node is _MISSING:
            if required:
                self.fail(key, _MISSING, "is required (a table)")
            return None
        if not isinstance(node, dict):
            self.fail(key, node, "must be a table")
        return node

    def known(self, node: dict, key: str, allowed: set[str]):
        for k in node:
            if k not in allowed:
                self.fail(f"{key}.{k}" if key else k, node[k], f"is not a known key; expected one of: "
                          f"{', '.join(sorted(allowed))}")

    def text(self, node: dict, key: str, path: str, *, required=True) -> str:
        v = node.get(key, _MISSING)
        if v is _MISSING:
            if required:
                self.fail(path, v, "is required (a string)")
            return ""
        if not isinstance(v, str) or not v.strip():
            self.fail(path, v, "must be a non-empty string")
        return v

    # -- sourced numbers ---------------------------------------------------------------------

    def source(self, node: dict, path: str, *, what: str = "value") -> Source:
        note = node.get("note", "")
        if not isinstance(note, str):
            self.fail(f"{path}.note", note, "must be a string")
        if "defined" in node:
            if "source" in node:
                self.fail(f"{path}.defined", node["defined"], "cannot be combined with source")
            d = node["defined"]
            if not isinstance(d, str) or not d.strip():
                self.fail(f"{path}.defined", d, "must be a non-empty string saying why the sheet defines it")
            return Source("defined", derivation=d, note=note)
        key = node.get("source", _MISSING)
        if key is _MISSING:
            self.fail(path, _short(node), f"has no source: give source = \"S<n>\" with quote or "
                      f"paraphrase, or defined = \"...\"")
        if not isinstance(key, str) or key not in self.sources:
            self.fail(f"{path}.source", key, f"is not a key of [sources]; known: {', '.join(self.sources)}")
        quote = node.get("quote", "")
        para = node.get("paraphrase", "")
        for k, v in (("quote", quote), ("paraphrase", para)):
            if not isinstance(v, str):
                self.fail(f"{path}.{k}", v, "must be a string")
        if not quote.strip() and not para.strip():
            self.fail(f"{path}.source", key, "needs a verbatim quote (or a paraphrase)")
        return Source("doc", doc=key, title=self.sources[key], quote=quote, paraphrase=para, note=note)

    def number(self, node, path: str, *, positive=True, allow_fraction=False, unit="",
               record=True, assumed_ok=False) -> Value:
        node = self.table(node, path)
        self.known(node, path, _VALUE_KEYS)
        v = node.get("value", _MISSING)
        if v is _MISSING:
            self.fail(f"{path}.value", v, "is required")
        v = self.scalar(v, f"{path}.value", positive=positive, allow_fraction=allow_fraction)
        src = self.source(node, path)
        alts = self.alternatives(node.get("alternatives", []), f"{path}.alternatives")
        assumed = node.get("assumed", False)
        if not isinstance(assumed, bool):
            self.fail(f"{path}.assumed", assumed, "must be true or false")
        if assumed and not assumed_ok:
            self.fail(f"{path}.assumed", assumed, "is only allowed on tensor.mm_init_cycles")
        reason = node.get("reason", "")
        if assumed and (not isinstance(reason, str) or not reason.strip()):
            self.fail(f"{path}.reason", reason if reason else _MISSING, "must say why the value is assumed")
        val = Value(path, v, unit, src, alts, assumed, reason if assumed else "")
        if record:
            self.values.append(val)
        return val

    def scalar(self, v, path: str, *, positive=True, allow_fraction=False):
        if isinstance(v, bool):
            self.fail(path, v, "must be an integer, not a boolean")
        if isinstance(v, int):
            out = Fraction(v) if allow_fraction else v
        elif allow_fraction and isinstance(v, str):
            # digits only (no exponent: Fraction("1e99999999") would take hours), each part <= 2^62
            m = _FRACTION.match(v.replace(" ", ""))
            try:
                out = Fraction(v.replace(" ", "")) if m and len(v) <= 64 else None
            except ZeroDivisionError:
                out = None
            if out is None or out.numerator > MAX_INT or out.denominator > MAX_INT:
                self.fail(path, v, "must be an integer or a fraction like \"1/4\"")
        elif isinstance(v, float):
            self.fail(path, v, "must be an integer (write 2.4 GHz as 2400000000), not a float")
        else:
            self.fail(path, v, "must be an integer" + (" or a fraction like \"1/4\"" if allow_fraction else ""))
        if abs(out) > MAX_INT:
            self.fail(path, v, "exceeds the largest number loopsim accepts (2^62; see docs/errors.md)")
        if positive and out <= 0:
            self.fail(path, v, "must be > 0")
        if not positive and out < 0:
            self.fail(path, v, "must be >= 0")
        return out

    def alternatives(self, node, path: str) -> tuple[Alternative, ...]:
        if not isinstance(node, list):
            self.fail(path, node, "must be a list of tables")
        out = []
        for i, a in enumerate(node):
            p = f"{path}[{i}]"
            if not isinstance(a, dict):
                self.fail(p, a, "must be a table")
            self.known(a, p, _ALT_KEYS)
            v = self.scalar(a.get("value", _MISSING) if "value" in a else self.fail(f"{p}.value", _MISSING, "is required"),
                            f"{p}.value", allow_fraction=True)
            per = a.get("per", _MISSING)
            if per not in ALT_PER:
                self.fail(f"{p}.per", per, f"must be one of: {', '.join(ALT_PER)}")
            v = _to_int(v) if v.denominator == 1 else v
            out.append(Alternative(v, per, self.source(a, p)))
        return tuple(out)

    def derived(self, key: str, value, unit: str, derivation: str, alts=(), note="") -> Value:
        val = Value(key, value, unit, Source("derived", derivation=derivation, note=note), tuple(alts))
        self.values.append(val)
        return val

    # -- the whole sheet ---------------------------------------------------------------------

    def build(self) -> Hardware:
        d = self.data
        self.known(d, "", _TOP_KEYS)
        schema = d.get("schema", _MISSING)
        if schema != SCHEMA or isinstance(schema, bool):
            self.fail("schema", schema, f"must be {SCHEMA}")
        name = self.text(d, "name", "name")
        about = self.text(d, "about", "about")
        illustrative = d.get("illustrative", False)
        if not isinstance(illustrative, bool):
            self.fail("illustrative", illustrative, "must be true or false")
        notes = d.get("notes", [])
        if not isinstance(notes, list) or not all(isinstance(n, str) for n in notes):
            self.fail("notes", notes, "must be a list of strings")

        srcs = self.table(d.get("sources", _MISSING), "sources")
        for k, t in srcs.items():
            if not isinstance(t, str) or not t.strip():
                self.fail(f"sources.{k}", t, "must be the document title (a non-empty string)")
        self.sources = dict(srcs)

        # scope
        sc = self.table(d.get("scope", _MISSING), "scope")
        self.known(sc, "scope", {"text", "physical_cores", "cores_per_device"})
        scope_text = self.text(sc, "text", "scope.text")
        cores = self.number(sc.get("physical_cores", _MISSING), "scope.physical_cores", unit="cores").value
        per_dev = self.number(sc.get("cores_per_device", _MISSING), "scope.cores_per_device", unit="cores").value
        if cores > per_dev:
            self.fail("scope.physical_cores.value", cores, f"exceeds scope.cores_per_device={per_dev}")

        # tensor engine
        te = self.table(d.get("tensor", _MISSING), "tensor")
        self.known(te, "tensor", {"pe_rows", "pe_cols", "clock_hz", "peak_flops", "moving_max",
                                  "mm_init_cycles", "dtypes"})
        rows = self.number(te.get("pe_rows", _MISSING), "tensor.pe_rows", unit="PE rows").value
        cols = self.number(te.get("pe_cols", _MISSING), "tensor.pe_cols", unit="PE columns").value
        clock = self.number(te.get("clock_hz", _MISSING), "tensor.clock_hz", unit="Hz").value
        moving = self.number(te.get("moving_max", _MISSING), "tensor.moving_max", unit="elements").value
        mm = self.number(te.get("mm_init_cycles", _MISSING), "tensor.mm_init_cycles", positive=False,
                         unit="TensorE cycles", assumed_ok=True)
        if mm.value > MAX_MM_INIT_CYCLES:
            self.fail("tensor.mm_init_cycles.value", mm.value, f"exceeds {MAX_MM_INIT_CYCLES:,} cycles, the "
                      "largest fixed cost per matmul instruction loopsim accepts (see docs/errors.md)")
        self.derived("tensor.stationary_max", cols, "elements",
                     "= tensor.pe_cols (the stationary tile's free size is bounded by the PE columns)")
        if "peak_flops" in te:
            peak = self.number(te["peak_flops"], "tensor.peak_flops", unit="FLOP/s per physical core").value
            if self.values[-1].source.kind != "defined":
                self.fail("tensor.peak_flops.source", te["peak_flops"].get("source"),
                          "is not allowed: a real sheet derives P from pe_rows × pe_cols × 2 × clock_hz")
            base = Fraction(peak) * cores
            base_how = f"tensor.peak_flops {peak:_} × physical_cores {cores}"
        else:
            base = Fraction(rows * cols * FLOPS_PER_MAC * clock * cores)
            base_how = (f"pe_rows {rows} × pe_cols {cols} × {FLOPS_PER_MAC} FLOP/MAC × clock_hz {clock:_} "
                        f"× physical_cores {cores}")
        dts = self.table(te.get("dtypes", _MISSING), "tensor.dtypes")
        if "bf16" not in dts:
            self.fail("tensor.dtypes.bf16", _MISSING, "is required (the reference rate)")
        flops = []
        for dt, node in dts.items():
            path = f"tensor.dtypes.{dt}"
            if dt not in DTYPES:
                self.fail(path, _short(node), f"is not a known dtype; expected one of: {', '.join(DTYPES)}")
            node = self.table(node, path)
            node = {("value" if k == "factor" else k): v for k, v in node.items()}
            if "value" not in node:
                self.fail(f"{path}.factor", _MISSING, "is required (rate relative to bf16)")
            if dt == "bf16" and node["value"] != 1:
                self.fail(f"{path}.factor", node["value"], "must be 1 (bf16 is the reference rate)")
            fv = self.number(node, path + ".factor", allow_fraction=True, unit="× bf16 rate", record=False)
            # documented TFLOPS figures sit beside P; other factors beside the factor
            self.values.append(dataclasses.replace(
                fv, alternatives=tuple(a for a in fv.alternatives if a.per == "factor")))
            p = base * fv.value
            flops.append((dt, _to_int(p)))
            self.derived(f"P.{dt}", _to_int(p), "FLOP/s (scope)",
                         f"{base_how} × factor {fv.value} (tensor.dtypes.{dt})",
                         alts=[a for a in fv.alternatives if a.per != "factor"])

        # SBUF / PSUM
        sb = self.table(d.get("sbuf", _MISSING), "sbuf")
        self.known(sb, "sbuf", {"bytes", "partitions"})
        sbuf = self.number(sb.get("bytes", _MISSING), "sbuf.bytes", unit="bytes per physical core").value
        parts = None
        if "partitions" in sb:
            parts = self.number(sb["partitions"], "sbuf.partitions", unit="partitions").value
            if sbuf % parts:
                self.fail("sbuf.bytes.value", sbuf, f"is not a multiple of sbuf.partitions={parts}")
            self.derived("sbuf.partition_bytes", sbuf // parts, "bytes per partition",
                         f"sbuf.bytes {sbuf:_} ÷ sbuf.partitions {parts}")
        else:
            self.derived("sbuf.partition_bytes", sbuf, "bytes", "flat memory (no partitions): = sbuf.bytes")
        self.derived("sbuf.bytes_in_scope", sbuf * cores, "bytes",
                     f"sbuf.bytes {sbuf:_} × physical_cores {cores} (each physical core has its own SBUF)")
        ps = self.table(d.get("psum", _MISSING), "psum")
        self.known(ps, "psum", {"banks", "bank_bytes"})
        banks = self.number(ps.get("banks", _MISSING), "psum.banks", unit="banks per partition").value
        bank_bytes = self.number(ps.get("bank_bytes", _MISSING), "psum.bank_bytes", unit="bytes").value
        if bank_bytes % 4:
            self.fail("psum.bank_bytes.value", bank_bytes, "must be a multiple of 4 (fp32 values)")
        self.derived("psum.bank_fp32", bank_bytes // 4, "fp32 values per bank per partition",
                     f"psum.bank_bytes {bank_bytes} ÷ 4 bytes")
        self.derived("psum.partition_bytes", banks * bank_bytes, "bytes per partition",
                     f"psum.banks {banks} × psum.bank_bytes {bank_bytes}")

        # HBM
        hb = self.table(d.get("hbm", _MISSING), "hbm")
        self.known(hb, "hbm", {"device_bw"})
        dev_bw = self.number(hb.get("device_bw", _MISSING), "hbm.device_bw", unit="bytes/s per device")
        bw = Fraction(dev_bw.value) * cores / per_dev
        if _to_int(bw) <= 0:
            self.fail("hbm.device_bw.value", dev_bw.value, f"÷ cores_per_device {per_dev} × "
                      f"physical_cores {cores} rounds to 0 bytes/s; the scope needs a bandwidth >= 1")
        self.derived("bw", _to_int(bw), "bytes/s (scope)",
                     f"hbm.device_bw {dev_bw.value:_} ÷ cores_per_device {per_dev} × physical_cores {cores}")
        for dt, p in flops:
            self.derived(f"ridge.{dt}", p / _to_int(bw), "FLOP/byte", f"P.{dt} ÷ bw")

        # DMA
        dm = self.table(d.get("dma", _MISSING), "dma")
        self.known(dm, "dma", {"engines", "core_bw"})
        dma = self.number(dm.get("engines", _MISSING), "dma.engines", unit="DMA engines per physical core").value
        dma_bw = None
        if "core_bw" in dm:
            core_bw = self.number(dm["core_bw"], "dma.core_bw",
                                  unit="bytes/s per physical core (all its DMA engines)").value
            dma_bw = core_bw * cores
            self.derived("dma.bw", dma_bw, "bytes/s (scope)",
                         f"dma.core_bw {core_bw:_} × physical_cores {cores} (each physical core has "
                         "its own DMA engines)")

        # engines
        engines = []
        en = self.table(d.get("engines", {}), "engines")
        for ename, node in en.items():
            path = f"engines.{ename}"
            if ename not in ENGINES:
                self.fail(path, _short(node), f"is not a known engine; expected one of: {', '.join(ENGINES)}")
            node = self.table(node, path)
            self.known(node, path, {"clock_hz", "width", "documented_fp32_flops"})
            eclock = None
            if "clock_hz" in node:
                eclock = self.number(node["clock_hz"], f"{path}.clock_hz", unit="Hz").value
            widths = []
            wt = self.table(node.get("width", {}), f"{path}.width")
            for wd, wn in wt.items():
                if wd != "default" and wd not in DTYPES:
                    self.fail(f"{path}.width.{wd}", _short(wn), f"is not 'default' or a known dtype")
                w = self.number(wn, f"{path}.width.{wd}", unit="elements/cycle").value
                widths.append((wd, w))
            if "documented_fp32_flops" in node:
                self.number(node["documented_fp32_flops"], f"{path}.documented_fp32_flops",
                            unit="FLOP/s per physical core (documented; not used as a roof)")
            if eclock is not None:
                for wd, w in widths:
                    self.derived(f"{path}.roof.{wd}", w * eclock * cores, "elements/s (scope)",
                                 f"{path}.width.{wd} {w} × {path}.clock_hz {eclock:_} × physical_cores {cores}")
            engines.append((ename, eclock, tuple(widths)))

        # link
        link = None
        if "link" in d:
            lk = self.table(d["link"], "link")
            self.known(lk, "link", {"bw"})
            link = self.number(lk.get("bw", _MISSING), "link.bw", unit="bytes/s per link").value

        measured = self.measured(d.get("measured", _MISSING))

        return Hardware(
            name=name, about=about, scope=scope_text, physical_cores=cores, cores_per_device=per_dev,
            partitions=parts, sbuf_bytes=sbuf, bw=_to_int(bw), device_bw=dev_bw.value, clock_hz=clock,
            pe_rows=rows, pe_cols=cols, moving_max=moving, stationary_max=cols, psum_banks=banks,
            psum_bank_bytes=bank_bytes, mm_init_cycles=mm.value, mm_init_assumed=mm.assumed,
            dma_engines=dma, link_bw=link, illustrative=illustrative, roofs="spec", path=self.origin,
            flops=tuple(flops), engines=tuple(engines), values=tuple(self.values), measured=measured,
            notes=tuple(notes), dma_bw=dma_bw, _spec_flops=tuple(flops),
        )

    def measured(self, node) -> Measured | None:
        if node is _MISSING:
            return None
        node = self.table(node, "measured")
        self.known(node, "measured", {"bw", "flops"})

        def one(n, path):
            n = self.table(n, path)
            self.known(n, path, {"value", "where"})
            v = self.scalar(n["value"] if "value" in n else self.fail(f"{path}.value", _MISSING, "is required"),
                            f"{path}.value")
            where = self.text(n, "where", f"{path}.where")
            self.values.append(Value(f"measured.{path.split('.', 1)[1]}", v,
                                     "FLOP/s" if "flops" in path else "bytes/s",
                                     Source("measured", derivation=where)))
            return v, where

        bw, bw_where = one(node.get("bw", _MISSING), "measured.bw")
        fl = self.table(node.get("flops", _MISSING), "measured.flops")
        if not fl:
            self.fail("measured.flops", fl, "must give at least one dtype")
        flops = []
        for dt, n in fl.items():
            if dt not in DTYPES:
                self.fail(f"measured.flops.{dt}", _short(n), f"is not a known dtype; expected one of: {', '.join(DTYPES)}")
            v, where = one(n, f"measured.flops.{dt}")
            flops.append((dt, v, where))
        return Measured(tuple(flops), bw, bw_where)


_FRACTION = re.compile(r"^(\d+(\.\d+)?|\d+/\d+)$")


class _Missing:
    def __repr__(self):
        return "<missing>"


_MISSING = _Missing()


class _Shown(str):
    """A value already formatted for an error message."""


def _short(v) -> _Shown:
    if isinstance(v, _Shown):
        return v
    s = repr(v)
    return _Shown(s if len(s) <= 60 else s[:57] + "...")
