"""Hardware sheets: TOML in ``hardware/`` → a frozen target object with every number sourced.

This module is the generic loader: sourced values (:class:`Source`, :class:`Value`,
:class:`Alternative`), the checks every sheet shares (schema, name, scope, dtype rates, HBM,
link, measured roofs) and :func:`load`. The sheet's ``family`` key (default ``"neuron"``) picks the
module that reads the rest of it and builds a :class:`~loopsim.targets.base.Target`:
:mod:`loopsim.targets.neuron.sheet` (Trainium/Inferentia) or :mod:`loopsim.targets.flat` (the
Day 1 machine: P, BW, one memory).

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
>>> load("toy").family
'flat'
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
from loopsim.base.limits import MAX_INT
from loopsim.base.vocab import RATE_DTYPES
from loopsim.targets.base import DEFAULT_FAMILY, ROOFS, _fmt, family_module  # noqa: F401 (ROOFS, _fmt re-exported)

__all__ = ["Source", "Alternative", "Value", "Measured", "names", "load", "loads"]

SCHEMA = 1
DTYPES = RATE_DTYPES  # the dtypes a sheet may give a rate for (loopsim.base.vocab)
ALT_PER = ("device", "core", "factor", "value")


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
    - ``"calibrated"``: ``derivation`` says which measurements ``loopsim calibrate`` fitted it to
      (a sheet value's ``calibrated = "..."``, written by ``calibrate -o``); ``note`` keeps the
      value it replaced and that value's source.
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
        elif self.kind == "calibrated":
            text = f"calibrated: {self.derivation}"
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


def _to_int(x: Fraction) -> int:
    return x.numerator if x.denominator == 1 else round(x)


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


def load(name_or_path: str):
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


def loads(text: str, origin: str = "<string>"):
    """Parse and validate one sheet's TOML text. ``origin`` names it in errors."""
    data = tomlfile.loads(text, origin, HardwareError, malformed="(file)=<unparsable> is not valid TOML")
    return _Builder(origin, data).build()


_VALUE_KEYS = {"value", "source", "quote", "paraphrase", "defined", "note", "alternatives", "assumed", "reason",
               "calibrated"}
_ALT_KEYS = {"value", "per", "source", "quote", "paraphrase", "defined", "note"}

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
        if "calibrated" in node:  # written by loopsim calibrate -o: the fit's provenance
            if "source" in node:
                self.fail(f"{path}.calibrated", node["calibrated"], "cannot be combined with source")
            d = node["calibrated"]
            if not isinstance(d, str) or not d.strip():
                self.fail(f"{path}.calibrated", d, "must be a non-empty string saying what it was fitted to")
            return Source("calibrated", derivation=d, note=note)
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
            self.fail(f"{path}.assumed", assumed, "is only allowed on tensor.mm_init_cycles and timeline.*")
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

    # -- the parts every family shares ------------------------------------------------------

    def build(self):
        """The sheet's family (``family``, default neuron) builds it: a :class:`~loopsim.targets.base.Target`."""
        fam = self.data.get("family", DEFAULT_FAMILY)
        return family_module(fam, self.origin).build(self)

    def head(self, top_keys: set[str]) -> dict:
        """schema, family, name, about, illustrative, notes, [sources] and [scope], checked."""
        d = self.data
        self.known(d, "", top_keys | {"schema", "family", "name", "about", "illustrative", "notes",
                                      "sources", "scope", "measured"})
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

        sc = self.table(d.get("scope", _MISSING), "scope")
        self.known(sc, "scope", {"text", "physical_cores", "cores_per_device"})
        scope_text = self.text(sc, "text", "scope.text")
        cores = self.number(sc.get("physical_cores", _MISSING), "scope.physical_cores", unit="cores").value
        per_dev = self.number(sc.get("cores_per_device", _MISSING), "scope.cores_per_device", unit="cores").value
        if cores > per_dev:
            self.fail("scope.physical_cores.value", cores, f"exceeds scope.cores_per_device={per_dev}")
        return dict(name=name, about=about, illustrative=illustrative, notes=tuple(notes),
                    scope=scope_text, physical_cores=cores, cores_per_device=per_dev, path=self.origin)

    def rates(self, te: dict, base: Fraction, base_how: str, section: str = "tensor") -> list[tuple[str, int]]:
        """P per dtype: ``base`` (FLOP/s of the scope at bf16) x each ``[SECTION.dtypes]`` factor."""
        dts = self.table(te.get("dtypes", _MISSING), f"{section}.dtypes")
        if "bf16" not in dts:
            self.fail(f"{section}.dtypes.bf16", _MISSING, "is required (the reference rate)")
        flops = []
        for dt, node in dts.items():
            path = f"{section}.dtypes.{dt}"
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
                         f"{base_how} × factor {fv.value} ({section}.dtypes.{dt})",
                         alts=[a for a in fv.alternatives if a.per != "factor"])
        return flops

    def hbm(self, cores: int, per_dev: int, flops) -> tuple[int, int]:
        """[hbm] device_bw -> (bw of the scope, device bw), bytes/s; the ridge per dtype recorded."""
        hb = self.table(self.data.get("hbm", _MISSING), "hbm")
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
        return _to_int(bw), dev_bw.value

    def link(self) -> int | None:
        """[link] bw: bytes/s per chip-to-chip link, or None."""
        if "link" not in self.data:
            return None
        lk = self.table(self.data["link"], "link")
        self.known(lk, "link", {"bw"})
        return self.number(lk.get("bw", _MISSING), "link.bw", unit="bytes/s per link").value

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
