"""The records of a kernel's lower ceilings every target returns, and the interconnect roof.

:class:`Ceilings` holds the ceilings (each a :class:`Ceiling`: a FLOP rate and the time it
implies), the accumulator memory's use (:class:`Psum`; :meth:`Psum.absent` on a machine without
one) and the interconnect (:class:`Link`) of a matmul split across chips (``[parallel]``, the
curriculum's Day 2): over K an all-reduce of the partial outputs, 2 (C-1)/C x output bytes per chip
(ring); over N an all-gather of the output shards, (C-1) x the chip's output bytes; T = bytes /
link bandwidth. A family's module computes them (:mod:`loopsim.targets.neuron.ceilings`,
:mod:`loopsim.targets.flat`).

Units: FLOP/s, seconds, bytes, bytes/s.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from loopsim.base.errors import HardwareError
from loopsim.ir.kernel import Kernel, Matmul


@dataclass(frozen=True, slots=True)
class Ceiling:
    """One lower ceiling: ``P`` the FLOP/s it allows, ``T`` the seconds it implies (W / P),
    ``factor`` its fraction of the scope's bf16 Tensor Engine peak (None for engines and links)."""

    name: str
    P: float
    T: float
    explanation: str
    factor: float | None = None
    assumed: bool = False

    def as_dict(self) -> dict:
        d = {"name": self.name, "P": self.P, "T": self.T, "factor": self.factor,
             "explanation": self.explanation}
        if self.assumed:
            d["assumed"] = True
        return d


@dataclass(frozen=True, slots=True)
class Psum:
    """Accumulator memory use (PSUM on NeuronCore). Banks and bytes per partition; elements are per
    whole tile. Computed by a target that has one (:mod:`loopsim.targets.neuron.ceilings`)."""

    banks: int
    bank_bytes: int
    tile_banks: int  # banks the largest accumulator tile takes
    live: int  # accumulator tiles open at once, at the peak
    needed_banks: int
    evacuated_elements: int
    engine: str | None
    T_evacuate: float | None  # seconds on ``engine``; no HBM bytes
    added_elements: int = 0  # of evacuated_elements, those added into SBUF tiles by ``acc``
    too_big: tuple[str, ...] = ()  # accumulator tiles larger than all of PSUM, one line each

    @classmethod
    def absent(cls) -> "Psum":
        """A machine without an accumulator memory (a flat target): nothing to fit."""
        return cls(0, 0, 0, 0, 0, 0, None, None)

    @property
    def fits(self) -> bool:
        return self.needed_banks <= self.banks and not self.too_big

    def verdict(self) -> str:
        if not self.banks and not self.live:
            return "no accumulator memory on this machine"
        if not self.live:
            return f"no matmul accumulators: 0 of {self.banks} PSUM banks"
        what = f"{self.live} live accumulator tile(s) x {self.tile_banks} bank(s)"
        if self.too_big:
            return "does not fit: " + "; ".join(self.too_big)
        if self.fits:
            return f"fits: {what} = {self.needed_banks} of {self.banks} PSUM banks"
        return (f"does not fit: {what} = {self.needed_banks} banks but PSUM has {self.banks}; "
                "the accumulation must be split or its partial sums leave PSUM")

    def as_dict(self) -> dict:
        return {"banks": self.banks, "bank_bytes": self.bank_bytes, "tile_banks": self.tile_banks,
                "live_accumulators": self.live, "needed_banks": self.needed_banks, "fits": self.fits,
                "evacuated_elements": self.evacuated_elements, "evacuation_engine": self.engine,
                "T_evacuate": self.T_evacuate, "evacuation_hbm_bytes": 0,
                "sbuf_accumulated_elements": self.added_elements, "verdict": self.verdict()}


@dataclass(frozen=True, slots=True)
class Parallel:
    """A kernel (the per-chip shard described by the spec) run on ``chips`` chips, split over K or N."""

    chips: int
    over: str


@dataclass(frozen=True, slots=True)
class Link:
    chips: int
    over: str
    bytes: int  # per chip, across the link
    bw: int  # bytes/s
    bw_source: str
    T: float  # seconds

    def as_dict(self) -> dict:
        return {"chips": self.chips, "over": self.over, "bytes": self.bytes, "bw": self.bw,
                "bw_source": self.bw_source, "T": self.T}


@dataclass(frozen=True, slots=True)
class Ceilings:
    """Everything below the roofs for one kernel on one sheet and dtype."""

    dtype: str
    P_ref: int  # bf16 Tensor Engine peak of the scope (spec), FLOP/s
    W: int
    instructions: int
    instruction_s: float | None  # mean seconds per matmul instruction
    cores: int
    split: str | None
    ceilings: tuple[Ceiling, ...]
    psum: Psum
    link: Link | None
    notes: tuple[str, ...] = ()
    # (loopsim.ir.ops.EngineWork, seconds or None when the sheet has no roof for its engine)
    work: tuple = ()

    @property
    def assumed(self) -> tuple:
        """The engine work charged for calls the front end does not model."""
        return tuple(w for w, _ in self.work if w.assumed)

    def get(self, name: str) -> Ceiling:
        for c in self.ceilings:
            if c.name == name:
                return c
        raise KeyError(name)

    @property
    def lowest(self) -> Ceiling | None:
        return min(self.ceilings, key=lambda c: c.P) if self.ceilings else None


def link_bytes(kernel: Kernel, par: Parallel) -> int:
    """Bytes one chip moves across the link: over K an all-reduce of its partial outputs
    (ring: 2 (C-1)/C of them), over N an all-gather of the output shards ((C-1) x its shard)."""
    out = {s.out.tensor for s, _ in kernel.statements() if isinstance(s, Matmul)}
    b = sum(t.bytes for t in kernel.outputs if t.name in out)
    c = par.chips
    return -(-2 * (c - 1) * b // c) if par.over == "K" else (c - 1) * b


def link(kernel, hw, par: Parallel, link_bw: int | None) -> Link:
    """The interconnect ceiling of ``kernel`` split over ``par.chips`` chips: ``link_bw`` (--link-bw)
    or the sheet's ``link_bw``, bytes/s per link."""
    if link_bw is not None:
        bw, src = link_bw, "--link-bw"
    elif hw.link_bw is not None:
        bw, src = hw.link_bw, f"{hw.name} link.bw"
    else:
        raise HardwareError(f"--hardware {hw.name}: the spec splits the matmul over {par.chips} chips "
                            "but the sheet has no link.bw (bytes/s per link); give --link-bw BYTES_PER_S")
    if isinstance(bw, bool) or not isinstance(bw, int) or bw <= 0:
        raise HardwareError(f"--link-bw {bw!r} must be a positive integer (bytes/s)")
    b = link_bytes(kernel, par)
    return Link(par.chips, par.over, b, bw, src, b / bw)


def link_ceiling(kernel: Kernel, hw, par: Parallel, link_bw: int | None, W: int) -> tuple[Link, Ceiling]:
    """The :class:`Link` of ``kernel`` split over ``par`` and the ceiling it sets on W FLOPs."""
    ln = link(kernel, hw, par, link_bw)
    how = ("all-reduce of the partial outputs, 2(C-1)/C x output bytes" if par.over == "K"
           else "all-gather of the output shards, (C-1) x this chip's output bytes")
    return ln, Ceiling("link", W / ln.T if ln.T else math.inf, ln.T,
                       f"tensor parallel over {par.over} on {par.chips} chips: "
                       f"{ln.bytes:,} bytes ({how}) at {ln.bw:.4g} B/s ({ln.bw_source})")
