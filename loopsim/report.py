"""Kernel + hardware sheet + policy -> one report: counts, entitlement, residency; JSON and text."""

from __future__ import annotations

import math
from dataclasses import dataclass

from .counts import Counts, check_tiles, count
from .entitle import Entitlement
from .errors import CapacityError
from .ir import DTYPES, Kernel, Matmul


def kernel_dtype(kernel: Kernel) -> str:
    """The dtype whose Tensor Engine roof applies: the widest matmul operand dtype (bf16 if none)."""
    tm = kernel.tensor_map
    dts = {tm[a.tensor].dtype for s, _ in kernel.statements() if isinstance(s, Matmul)
           for a in (s.stationary, s.moving)}
    if not dts:
        return "bf16"
    if "fp32" in dts:
        return "fp32"
    return max(dts, key=lambda d: (DTYPES[d], d == "bf16"))


def capacity_units(hw, sbuf_bytes: int | None) -> int:
    """The SBUF budget in the simulator's units: bytes per partition, or bytes on flat sheets."""
    total = hw.sbuf_bytes if sbuf_bytes is None else sbuf_bytes
    if isinstance(total, bool) or not isinstance(total, int) or total <= 0:
        raise CapacityError(f"--sbuf-bytes={total!r} must be a positive integer")
    return total // hw.partitions if hw.partitions else total


@dataclass(frozen=True, slots=True)
class Report:
    counts: Counts
    entitlement: Entitlement
    hardware: object
    dtype: str
    params: tuple[tuple[str, int], ...] = ()
    ceilings: object = None  # loopsim.ceilings.Ceilings (lower ceilings, PSUM, LNC, link roof)
    lower_bound: object = None  # loopsim.bound.LowerBound for matmul-shaped kernels, else None

    def as_dict(self) -> dict:
        c, e, hw = self.counts, self.entitlement, self.hardware
        res = c.residency
        d = {
            "kernel": c.kernel,
            "hardware": hw.name,
            "scope": hw.scope,
            "policy": c.policy,
            "dtype": self.dtype,
            "params": dict(self.params),
            **e.as_dict(),
            "compulsory_Q": c.compulsory_bytes,
            "Q_over_compulsory": c.hbm_bytes / c.compulsory_bytes if c.compulsory_bytes else None,
            "matmul_instructions": c.instructions,
            "tensors": {t.name: {"bytes": t.bytes, "read_bytes": t.read_bytes,
                                 "write_bytes": t.write_bytes, "r": t.r,
                                 "role": "output" if t.output else "input"}
                        for t in c.tensors},
            "sbuf": {"peak_bytes": res.peak_bytes, "capacity_bytes": res.capacity_bytes,
                     "fits": res.fits, "mode": res.mode, "what": res.what,
                     "needed_bytes": res.needed_cost * (res.partitions or 1),
                     "partitions": res.partitions,
                     "per_partition_peak_bytes": res.peak_cost if res.partitions else None,
                     "per_partition_capacity_bytes": res.capacity_cost if res.partitions else None},
        }
        if math.isinf(d["I"]):
            d["I"] = None
        lb = self.lower_bound
        d["lower_bound_Q"] = lb.Q_bytes if lb is not None else None
        d["Q_over_bound"] = lb.ratio(c.hbm_bytes) if lb is not None and lb.Q_bytes else None
        if self.ceilings is not None:
            from .ceilings import report_fields
            d.update(report_fields(self.ceilings, e, hw))
        return d


def analyze(kernel: Kernel, hw, *, policy: str = "as-written", sbuf_bytes: int | None = None,
            dtype: str | None = None, trace=None, allow_scope_mismatch: bool = False,
            parallel=None, link_bw: int | None = None) -> Report:
    """Count the kernel's traffic on ``hw`` and entitle it (P for ``dtype``, default the kernel's).

    A kernel split across physical cores (LNC, :mod:`loopsim.lnc`) is counted per core; its core
    count must match the sheet's scope unless ``allow_scope_mismatch``. ``parallel`` (a
    :class:`loopsim.ceilings.Parallel`) adds the interconnect roof. Lower ceilings in ``ceilings``.
    """
    from . import ceilings as ceil_mod, lnc

    check_tiles(kernel, hw.k_tile_max, hw.pe_cols, hw.moving_max, hw.name)
    lnc.check_scope(kernel, hw, allow=allow_scope_mismatch)
    if lnc.split_loop(kernel) is not None:
        c = lnc.count_split(kernel, policy=policy, capacity=capacity_units(hw, sbuf_bytes),
                            partitions=hw.partitions)
    else:
        c = count(kernel, policy=policy, capacity=capacity_units(hw, sbuf_bytes),
                  partitions=hw.partitions, trace=trace)
    dt = dtype or kernel_dtype(kernel)
    e = Entitlement(c.flops, c.hbm_bytes, hw.P(dt), hw.bw)
    ceil = ceil_mod.compute(kernel, hw, dtype=dt, parallel=parallel, link_bw=link_bw)
    from .bound import lower_bound
    return Report(c, e, hw, dt, kernel.params, ceil, lower_bound(kernel, hw, sbuf_bytes))


def _si(x: float, unit: str) -> str:
    if x == 0:
        return f"0 {unit}"
    for f, p in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1, ""), (1e-3, "m"), (1e-6, "µ"),
                 (1e-9, "n")):
        if abs(x) >= f:
            return f"{x / f:.4g} {p}{unit}"
    return f"{x:.3g} {unit}"


def fmt_time(s: float) -> str:
    return _si(s, "s")


def format_text(rep: Report) -> str:
    """A readable table of the report."""
    c, e, hw = rep.counts, rep.entitlement, rep.hardware
    params = ", ".join(f"{k}={v}" for k, v in rep.params)
    lines = [f"{c.kernel} on {hw.name} ({hw.scope}); policy {c.policy}; {rep.dtype}",
             f"  params: {params}" if params else "", ""]
    lines.append(f"  W (Tensor Engine)   {e.W:>20,} FLOPs   ({c.instructions:,} matmul instructions)")
    lines.append("  Q by tensor:")
    lines.append(f"    {'tensor':<10}{'bytes':>16}{'read':>18}{'written':>18}{'r':>9}")
    for t in c.tensors:
        lines.append(f"    {t.name:<10}{t.bytes:>16,}{t.read_bytes:>18,}{t.write_bytes:>18,}{t.r:>9.4g}")
    lines.append(f"  Q                   {e.Q:>20,} bytes")
    over = f"   (Q is {e.Q / c.compulsory_bytes:.3g}x this)" if c.compulsory_bytes else ""
    lines.append(f"  compulsory Q        {c.compulsory_bytes:>20,} bytes{over}")
    lines.append(f"  I = W/Q             {e.I:>20.4g} FLOPs/byte")
    lines.append(f"  P ({rep.dtype})          {_si(e.P, 'FLOP/s'):>20}")
    lines.append(f"  BW                  {_si(e.BW, 'B/s'):>20}")
    lines.append(f"  ridge I* = P/BW     {e.ridge:>20.4g} FLOPs/byte")
    lines.append(f"  W/P                 {fmt_time(e.t_compute):>20}")
    lines.append(f"  Q/BW                {fmt_time(e.t_memory):>20}")
    lines.append(f"  T_best              {fmt_time(e.T_best):>20}   {e.bound}-bound")
    lines.append(f"  T_worst             {fmt_time(e.T_worst):>20}")
    lines.append(f"  entitled rate       {_si(e.rate, 'FLOP/s'):>20}   ({e.rate / e.P:.1%} of P)")
    lines.append(f"  SBUF ({c.residency.what}, {c.residency.mode}): {c.residency.verdict()}")
    if rep.lower_bound is not None:
        lb = rep.lower_bound
        lines.append(f"  I/O lower bound     {lb.Q_bytes:>20,} bytes   (Q is {lb.ratio(e.Q):.3g}x this; "
                     f"{lb.binding}, S = SBUF + PSUM = {lb.fast_bytes:,} bytes)")
    if rep.ceilings is not None:
        from .ceilings import format_report_lines
        lines += format_report_lines(rep.ceilings, e, hw)
    return "\n".join(l for l in lines if l is not None)
