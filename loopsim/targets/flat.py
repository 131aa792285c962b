"""The flat target (``family = "flat"``): the curriculum's Day 1 machine — P, BW and one memory.

The smallest :class:`~loopsim.targets.base.Target`, and the example a new family follows: a
frozen dataclass of the sheet's numbers, the protocol's members, and :func:`build` reading the
sheet's own sections with the generic builder. A flat machine has no lanes (a tile costs its
bytes), no tile limits, no accumulator memory, no engines beside the one rate P and no transfer
engines: its only ceiling is the interconnect of a ``[parallel]`` spec.

Sheet: ``[compute] peak_flops`` (FLOP/s per core, ``defined``) with ``[compute.dtypes]`` factors,
``[memory] bytes`` (the one fast memory, per core), ``[hbm] device_bw``, optional ``[link] bw``.

>>> from loopsim.targets import hardware
>>> toy = hardware.load("toy")
>>> toy.P("bf16"), toy.bw, toy.ridge(), toy.lanes, toy.tile_limits()
(1000000000000, 100000000000, 10.0, None, {})
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction

from loopsim.targets.base import Roofs, tile_cost_bytes
from loopsim.targets.hardware import _MISSING, Measured, Value


@dataclass(frozen=True, slots=True)
class FlatMachine(Roofs):
    """P per dtype and BW over ``physical_cores`` cores, and one fast memory of ``sbuf_bytes`` per core."""

    name: str
    about: str
    scope: str
    physical_cores: int
    cores_per_device: int
    sbuf_bytes: int  # the one fast memory, bytes per core
    bw: int  # bytes/s for the scope
    device_bw: int
    link_bw: int | None
    illustrative: bool
    roofs: str
    path: str
    flops: tuple[tuple[str, int], ...]
    values: tuple[Value, ...]
    measured: Measured | None = None
    notes: tuple[str, ...] = ()
    _spec_flops: tuple[tuple[str, int], ...] = field(default=(), repr=False, compare=False)
    family: str = "flat"
    lanes = None  # a tile costs its bytes
    accumulator_bytes = 0

    def tile_cost(self, shape, tensor):
        return tile_cost_bytes(shape, tensor)

    def tile_limits(self) -> dict[str, int]:
        return {}

    def cannot_run(self, kernel) -> list[str]:
        return []

    def ceilings(self, kernel, *, dtype: str, parallel=None, link_bw=None, strict: bool = False):
        from loopsim.count.lnc import kernel_cores, split_loop
        from loopsim.count.counts import shape_flops
        from loopsim.targets.ceilings import Ceilings, Psum, link_ceiling

        W, split = shape_flops(kernel), split_loop(kernel)
        ln, out = None, ()
        if parallel is not None:
            ln, c = link_ceiling(kernel, self, parallel, link_bw, W)
            out = (c,)
        return Ceilings(dtype, self.P("bf16"), W, 0, None, kernel_cores(kernel),
                        split.var if split else None, out, Psum.absent(), ln)

    def steps(self, stage, op_map, tensor_map, counts, dtype: str, where: str):
        return ()  # one rate P: no engines to time ops on

    transfer_bw = None  # no transfer engines beside BW

    def dma_time(self, kernel, counts, *, exact: bool):
        return None

    def dma_efficiency(self, nbytes: float) -> float:
        return 1.0  # no transfer engines: every transfer at BW

    def transfer_lines(self, kernel):
        return ()  # no transfer engines: no per-statement transfer time

    def predict(self, stage, op_map, counts, dtype: str, times: dict, details: dict, *,
                run: bool = True, exact: bool = False):
        return None  # one rate P and one BW: nothing to schedule, T is the roofline's

    def engine_lines(self, kernel, dtype: str, work_of=None):
        return ()  # one rate P: no engine instructions to time per statement

    def matmul_floor(self, dtype: str, m: int, n: int, k: int, kt: int, mt: int, nt: int,
                     cores: int = 1) -> float:
        return 0.0  # no instruction cost: W/P is the compute floor

    def engine_roof(self, engine: str, dtype: str = "fp32") -> float:
        from loopsim.base.errors import HardwareError

        raise HardwareError(f"{self.name}: no engine '{engine}' on this sheet (a flat machine has only P)")


def build(b) -> FlatMachine:
    """A flat sheet from the generic builder (:class:`loopsim.targets.hardware._Builder`)."""
    h = b.head({"compute", "memory", "hbm", "link"})
    cores, per_dev = h["physical_cores"], h["cores_per_device"]
    co = b.table(b.data.get("compute", _MISSING), "compute")
    b.known(co, "compute", {"peak_flops", "dtypes"})
    peak = b.number(co.get("peak_flops", _MISSING), "compute.peak_flops", unit="FLOP/s per core").value
    flops = b.rates(co, Fraction(peak) * cores, f"compute.peak_flops {peak:_} × physical_cores {cores}",
                    section="compute")
    mem = b.table(b.data.get("memory", _MISSING), "memory")
    b.known(mem, "memory", {"bytes"})
    fast = b.number(mem.get("bytes", _MISSING), "memory.bytes", unit="bytes per core").value
    bw, device_bw = b.hbm(cores, per_dev, flops)
    link = b.link()
    measured = b.measured(b.data.get("measured", _MISSING))
    return FlatMachine(**h, sbuf_bytes=fast, bw=bw, device_bw=device_bw, link_bw=link, roofs="spec",
                       flops=tuple(flops), values=tuple(b.values), measured=measured,
                       _spec_flops=tuple(flops))
