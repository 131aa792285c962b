"""Tilings side by side: specs x ``--vary`` parameter products -> analysed rows, ranked.

``--vary TN=128,256,512 --vary TM=64,128`` expands to the product of the listed values, applied
to every spec that has the parameter. Rows are ranked by T_best, then T_worst; the best row is the
first one that fits SBUF. A row that does not fit stays in the table, marked; a row that cannot be
counted at all (its capacity cannot hold one instruction's tiles) stays too, with its error.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

from . import program as program_mod
from . import spec as spec_mod
from .errors import CapacityError, InputError, SpecError
from .ir import Kernel
from .report import Report


def parse_vary(items: list[str] | None) -> dict[str, tuple[int, ...]]:
    """``["TN=128,256"]`` -> {"TN": (128, 256)}; every value a positive integer."""
    out: dict[str, tuple[int, ...]] = {}
    for item in items or ():
        name, eq, values = item.partition("=")
        name = name.strip()
        if not eq or not name.isidentifier():
            raise InputError(f"--vary {item}: expected NAME=INT,INT,...")
        if name in out:
            raise InputError(f"--vary {name}: given twice; list all its values in one --vary")
        vals = []
        for v in values.split(","):
            v = v.strip()
            try:
                n = int(v.replace("_", ""))
            except ValueError:
                raise InputError(f"--vary {name}={values}: '{v}' is not an integer") from None
            if n <= 0:
                raise InputError(f"--vary {name}={values}: {n} must be > 0")
            vals.append(n)
        out[name] = tuple(dict.fromkeys(vals))
    return out


@dataclass(frozen=True, slots=True)
class Variant:
    """One tiling to analyse: ``spec`` as the user named it, the bound kernel, the varied values."""

    label: str
    spec: str
    kernel: Kernel | program_mod.Program  # a single nest, or a schedule of kernels ([ops])
    varied: tuple[tuple[str, int], ...]


def expand(specs: list[str], sets: dict[str, int], vary: dict[str, tuple[int, ...]]) -> list[Variant]:
    """Every spec at every combination of the ``vary`` values it has parameters for."""
    for name in vary:
        if name in sets:
            raise InputError(f"--vary {name} and --set {name} both given; use one")
    files = [(s, spec_mod.read(s)) for s in specs]
    for name in vary:
        if not any(name in sf.params for _, sf in files):
            has = "; ".join(f"{sf.path} has {', '.join(sf.params) or '(none)'}" for _, sf in files)
            raise InputError(f"--vary {name}: no spec has a parameter {name} ({has})")
    for name, value in sets.items():
        if not any(name in sf.params for _, sf in files):
            has = "; ".join(f"{sf.path} has {', '.join(sf.params) or '(none)'}" for _, sf in files)
            raise SpecError(f"--set {name}={value}: no spec has a parameter {name} ({has})")
    out = []
    for arg, sf in files:
        names = [n for n in vary if n in sf.params]
        own_sets = {k: v for k, v in sets.items() if k in sf.params}
        kname = sf.data["kernel"].get("name", sf.path)
        for combo in itertools.product(*(vary[n] for n in names)):
            varied = tuple(zip(names, combo))
            params = spec_mod.bind_params(sf, {**own_sets, **dict(varied)})
            kernel = program_mod.build(sf, params)
            label = " ".join([str(kname)] + [f"{n}={v}" for n, v in varied])
            out.append(Variant(label, arg, kernel, varied))
    labels = [v.label for v in out]
    if len(set(labels)) != len(labels):
        out = [Variant(f"{v.label} ({v.spec})", v.spec, v.kernel, v.varied) for v in out]
    return out


@dataclass(frozen=True, slots=True)
class Row:
    """One analysed tiling; ``report`` is None when it could not be counted (``error`` says why)."""

    variant: Variant
    report: Report | None
    error: str = ""
    best: bool = False

    @property
    def key(self) -> tuple[float, float]:
        if self.report is None:
            return (math.inf, math.inf)
        e = self.report.entitlement
        return (e.T_best, e.T_worst)

    @property
    def fits(self) -> bool:
        return self.report is not None and self.report.counts.residency.fits


def analyze_all(variants: list[Variant], hw, *, policy: str = "as-written",
                sbuf_bytes: int | None = None, dtype: str | None = None) -> list[Row]:
    """Analyse every variant and rank them (T_best, then T_worst); mark the best fitting row."""
    rows = []
    for v in variants:
        try:
            rows.append(Row(v, program_mod.report_of(v.kernel, hw, policy=policy,
                                                     sbuf_bytes=sbuf_bytes, dtype=dtype)))
        except CapacityError as e:
            rows.append(Row(v, None, str(e)))
    rows.sort(key=lambda r: r.key)
    best = next((r for r in rows if r.fits), None)
    return [Row(r.variant, r.report, r.error, r is best) for r in rows]


def row_dict(row: Row, rank: int) -> dict:
    """The JSON/CSV row: W, Q, r per input, compulsory Q, I, T_best, T_worst, SBUF peak and fit."""
    v = row.variant
    d: dict = {"rank": rank, "label": v.label, "spec": v.spec, "kernel": v.kernel.name,
               "params": dict(v.kernel.params), "varied": dict(v.varied), "best": row.best}
    if row.report is None:
        return {**d, "fits": False, "error": row.error, "T_best": None, "T_worst": None}
    rep = row.report
    c, e = rep.counts, rep.entitlement
    res = c.residency
    inputs = {t.name for t in rep.counts.tensors if not t.output}
    return {**d, "W": e.W, "Q": e.Q,
            "r": {t.name: t.r for t in c.tensors if t.name in inputs},
            "compulsory_Q": c.compulsory_bytes,
            "Q_over_compulsory": e.Q / c.compulsory_bytes if c.compulsory_bytes else None,
            "I": e.I if math.isfinite(e.I) else None, "T_best": e.T_best, "T_worst": e.T_worst,
            "bound": e.bound, "rate": e.rate, "dtype": rep.dtype,
            "sbuf_peak_bytes": res.peak_bytes, "sbuf_capacity_bytes": res.capacity_bytes,
            "fits": res.fits, **_ceiling_fields(rep), **_lower_bound_fields(rep)}


def _lower_bound_fields(rep: Report) -> dict:
    """``lower_bound_Q`` (bytes, :mod:`loopsim.bound`) and ``Q_over_bound``; None if not a matmul."""
    lb = getattr(rep, "lower_bound", None)
    return {"lower_bound_Q": lb.Q_bytes if lb else None,
            "Q_over_bound": lb.ratio(rep.entitlement.Q) if lb and lb.Q_bytes else None}


def _ceiling_fields(rep: Report) -> dict:
    """The binding roof and the lowest lower ceiling, where the report has ceilings."""
    c = getattr(rep, "ceilings", None)
    if c is None:
        return {}
    from .ceilings import binding_roof

    low = c.lowest
    return {"binding_roof": binding_roof(c, rep.entitlement),
            "lowest_ceiling": None if low is None else {"name": low.name, "P": low.P, "T": low.T}}
