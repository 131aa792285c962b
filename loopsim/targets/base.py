"""The seam between the model and a machine: the :class:`Target` protocol and the family registry.

A hardware sheet names its ``family`` (``"neuron"`` when absent: every Trainium/Inferentia sheet);
the family's module builds the sheet into an object that implements :class:`Target`. The model,
the counts and the search ask a target only what this protocol names; every rule of one machine
family (its sheet schema, its fast memory's layout, its tile limits, its engines) lives in that
family's module. A new family (a GPU, a TPU) is one module plus sheets: see docs/development.md
and :mod:`loopsim.targets.flat`, the smallest example.

Units: FLOP/s, bytes/s, bytes; a tile's *cost* is in the target's fast-memory units (bytes per
lane: per SBUF partition on NeuronCore; plain bytes on a flat machine), ``lanes`` of them a byte row.
"""

from __future__ import annotations

import dataclasses
import importlib
import math
from fractions import Fraction
from typing import Protocol, runtime_checkable

from loopsim.base.errors import HardwareError

__all__ = ["Target", "FAMILIES", "family_module", "Roofs", "tile_cost_bytes"]

#: family key of a sheet -> the module that builds it (``build(builder) -> Target``)
FAMILIES = {"neuron": "loopsim.targets.neuron.sheet", "flat": "loopsim.targets.flat"}
DEFAULT_FAMILY = "neuron"
#: roof kinds a sheet has: documented ("spec") or measured on the machine
ROOFS = ("spec", "measured")


def _fmt(v) -> str:
    if isinstance(v, Fraction):
        return _fmt(v.numerator) if v.denominator == 1 else f"{v} (≈{float(v):.6g})"
    if isinstance(v, float):
        return f"{v:.6g}"
    if isinstance(v, int) and abs(v) >= 10_000:
        return f"{v:_} (≈{v:.4g})"
    return str(v)


@runtime_checkable
class Target(Protocol):
    """What the model asks of a machine, in ten groups of members (each may be a field or a property):

    - ``name``, ``family``: the sheet's name and its family key.
    - ``scope``, ``physical_cores``: what the sheet's numbers cover (text) and how many cores.
    - ``roofs`` / ``with_roofs(which)``: "spec" or "measured", and the sheet with the other kind.
    - ``P(dtype)``: peak FLOP/s of the scope for a dtype; ``dtypes()`` the dtypes it has.
    - ``bw``: bytes/s of slow memory (HBM) for the scope.
    - ``sbuf_bytes``, ``accumulator_bytes``, ``lanes``: fast-memory capacity per core (bytes), the
      accumulator memory beside it (bytes; 0 if none), and the lanes a tile's cost is per
      (None: flat, costs are bytes).
    - ``tile_cost(shape, tensor)``: fast-memory cost of one on-chip tile (ints, or broadcastable
      integer arrays of extents for many blocks at once).
    - ``tile_limits()``: the largest matmul tile per role ``{"K": .., "M": .., "N": ..}`` ({} if
      none); ``cannot_run(kernel)``: why a kernel cannot run on it, one line each (tiles).
    - ``ceilings(kernel, dtype=, parallel=, link_bw=, strict=)``, ``steps(...)``,
      ``dma_time(kernel, counts, exact=)``: the lower ceilings, the engine timeline of a stage's
      ops, and the transfer engines' time of a kernel; ``transfer_bw`` (bytes/s of those engines,
      None if none), ``dma_efficiency(bytes_per_lane)`` (relative throughput of one transfer),
      ``transfer_lines(kernel)`` (per source line, seconds of transfers) and
      ``engine_lines(kernel, dtype, work_of=None)`` (per source line, seconds of engine
      instructions and the engine: matmuls on the Tensor Engine, ops on theirs, ``work_of(stmt)``
      giving an op statement's (engine, passes), default its kind's);
      ``matmul_floor(dtype, m, n, k, kt, mt, nt, cores)``: seconds no tiling with those tile
      limits can beat on the matmul engine (0 where there is none), the search's pruning bound.
    - ``predict(stage, op_map, counts, dtype, times, details, run=)``: the predicted run of a
      stage (an instruction timeline, docs/timeline.md), added to ``times`` as ``timeline`` (and
      its cheap floor; ``run=False`` the floor only); returns it, or None where the target has none.
    - ``core_split``: whether the target runs a kernel split across cores (LNC), checked by
      :func:`loopsim.count.lnc.check_scope` against ``physical_cores``.
    """

    name: str
    family: str
    scope: str
    physical_cores: int
    roofs: str
    bw: int
    sbuf_bytes: int

    def with_roofs(self, which: str) -> "Target": ...
    def P(self, dtype: str = "bf16") -> int: ...
    def dtypes(self) -> list[str]: ...
    @property
    def lanes(self) -> int | None: ...
    @property
    def accumulator_bytes(self) -> int: ...
    def tile_cost(self, shape, tensor): ...
    def tile_limits(self) -> dict[str, int]: ...
    def cannot_run(self, kernel) -> list[str]: ...
    def ceilings(self, kernel, *, dtype: str, parallel=None, link_bw=None, strict: bool = False): ...
    def steps(self, stage, op_map, tensor_map, counts, dtype: str, where: str): ...
    def dma_time(self, kernel, counts, *, exact: bool) -> tuple[float, str] | None: ...
    @property
    def transfer_bw(self) -> int | None: ...
    def dma_efficiency(self, bytes_per_lane: float) -> float: ...
    def matmul_floor(self, dtype: str, m: int, n: int, k: int, kt: int, mt: int, nt: int,
                     cores: int = 1) -> float: ...
    def transfer_lines(self, kernel) -> tuple[tuple[int, str, float], ...]: ...
    def predict(self, stage, op_map, counts, dtype: str, times: dict, details: dict, *,
                run: bool = True, exact: bool = False): ...
    def engine_lines(self, kernel, dtype: str,
                     work_of=None) -> tuple[tuple[int, str, float, str], ...]: ...


def family_module(family: str, origin: str):
    """The module building sheets of ``family`` (an error naming the sheet for an unknown one)."""
    if not isinstance(family, str) or family not in FAMILIES:
        raise HardwareError(f"{origin}: family={family!r} is not a known machine family; "
                            f"expected one of: {', '.join(FAMILIES)}")
    return importlib.import_module(FAMILIES[family])


def tile_cost_bytes(shape, tensor) -> int:
    """Bytes of a tile of ``shape`` elements of ``tensor`` (a flat memory's tile cost)."""
    return math.prod(shape) * tensor.elem_bytes


class Roofs:
    """The roof members every sheet family shares (mixin of a frozen dataclass with ``flops``,
    ``_spec_flops``, ``measured``, ``values``, ``roofs``, ``bw`` and ``name``)."""

    __slots__ = ()

    def P(self, dtype: str = "bf16") -> int:
        """Peak for ``dtype`` over the whole scope, FLOP/s."""
        for d, p in self.flops:
            if d == dtype:
                return p
        known = ", ".join(d for d, _ in self.flops)
        what = "measured roof" if self.roofs == "measured" else self._rate_name
        raise HardwareError(f"{self.name}: dtype '{dtype}' has no {what}; known: {known}")

    _rate_name = "documented rate"

    def dtypes(self) -> list[str]:
        return [d for d, _ in self.flops]

    def ridge(self, dtype: str = "bf16") -> float:
        """P(dtype) / bw, FLOP per byte."""
        return self.P(dtype) / self.bw

    def value(self, key: str):
        """The sourced/derived record for a dotted key (``"hbm.device_bw"``, ``"P.bf16"``, ``"bw"``)."""
        for v in self.values:
            if v.key == key:
                return v
        raise HardwareError(f"{self.name}: no value '{key}'; known: {', '.join(v.key for v in self.values)}")

    @property
    def sbuf_bytes_in_scope(self) -> int:
        """Fast-memory bytes over all physical cores of the scope (each core has its own)."""
        return self.sbuf_bytes * self.physical_cores

    def with_roofs(self, which: str):
        """'spec' → the spec sheet; 'measured' → a copy whose P and BW are the measured ones."""
        if which not in ROOFS:
            raise HardwareError(f"{self.name}: roofs='{which}' must be one of: {', '.join(ROOFS)}")
        if which == "spec":
            if self.roofs == "spec":
                return self
            return dataclasses.replace(self, roofs="spec", flops=self._spec_flops,
                                       bw=int(self.value("bw").value))
        if self.measured is None:
            raise HardwareError(
                f"{self.name}: roofs='measured' but the sheet has no [measured] section; "
                "measure P and BW and add them, or use the spec roofs"
            )
        m = self.measured
        return dataclasses.replace(
            self, roofs="measured", flops=tuple((d, p) for d, p, _ in m.flops), bw=m.bw
        )

    @property
    def calibrated(self) -> tuple[tuple[str, str], ...]:
        """(sheet key, provenance) of each value ``loopsim calibrate`` fitted (source kind
        ``calibrated``); empty on a documented sheet."""
        return tuple((v.key, v.source.derivation) for v in self.values if v.source.kind == "calibrated")

    @property
    def calibration(self) -> str | None:
        """One line for every report that shows the sheet's constants: which values are calibrated,
        to what, and from which measurements (None on a sheet without calibrated values)."""
        cal = self.calibrated
        parts = []
        if cal:
            vals = ", ".join(f"{k.rpartition('.')[2]} = {self.value(k).value:,}" for k, _ in cal)
            parts.append(f"{vals} ({cal[0][1].split(';')[0]})")
        m = self.measured if self.roofs == "measured" else None
        src = next((w for w in [m.bw_where] + [w for _, _, w in m.flops]
                    if w.startswith("loopsim calibrate")), None) if m is not None else None
        if src is not None:
            fitted = [f"bw = {m.bw:.4g} B/s"] * (not m.bw_where.startswith("not fitted")) + [
                f"P.{d} = {p:.4g} FLOP/s" for d, p, w in m.flops if not w.startswith("not fitted")]
            parts.append(f"measured roofs {', '.join(fitted)} ({src.split(':')[0]})")
        return "calibrated: " + "; ".join(parts) if parts else None

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
