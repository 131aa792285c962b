"""The NeuronCore sheet (``family = "neuron"``): Trainium/Inferentia roofs, fast memory and limits.

The schema (tensor engine PE array, SBUF partitions, PSUM banks, DMA engines, Vector/Scalar/GpSimd
engines) and every rule that reads it: the partition cost of a tile, the matmul tile limits (one
place: :meth:`NeuronCore.tile_limits`), and the ceilings, engine timeline and DMA time of a kernel
(:mod:`.ceilings`, :mod:`.engines`, :mod:`.dma`). Derived values are computed from sourced inputs:

- P(dtype)  = pe_rows × pe_cols × 2 FLOP × clock_hz × physical_cores × factor(dtype)   [FLOP/s]
- bw        = hbm.device_bw ÷ cores_per_device × physical_cores                         [bytes/s]
- sbuf_partition_bytes = sbuf.bytes ÷ partitions                                        [bytes]
- engine roof = width(dtype) × engine clock_hz × physical_cores                         [elements/s]
- dma_bw    = dma.core_bw × physical_cores (all DMA engines of the scope)               [bytes/s]

Examples
--------
>>> from loopsim.targets import hardware
>>> hw = hardware.load("trn1-core")
>>> hw.P("bf16"), hw.bw, round(hw.ridge("bf16"), 1)
(91750400000000, 410000000000, 223.8)
>>> hw.tile_limits()
{'K': 128, 'M': 128, 'N': 512}
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction

from loopsim.base.errors import HardwareError
from loopsim.base.limits import MAX_MM_INIT_CYCLES
from loopsim.targets.base import Roofs
from loopsim.base.vocab import OTHER_ENGINES as ENGINES  # a sheet's [engines.NAME]: vector, scalar, gpsimd
from loopsim.targets.hardware import DTYPES, _MISSING, Measured, Value, _short

TOP_KEYS = {"tensor", "sbuf", "psum", "hbm", "dma", "engines", "link", "timeline"}
FLOPS_PER_MAC = 2  # one multiply-accumulate of the PE array is two FLOPs
#: the ``[timeline]`` constants a sheet may give (each sourced, or ``assumed`` with a reason), units
TIMELINE_KEYS = {
    "dma_fixed_ns": "ns per DMA transfer (descriptor setup, synchronisation, semaphore to start)",
    "engine_min_cycles": "engine cycles: the shortest Vector/Scalar/GpSimd instruction (MIN_II)",
    "te_fill_cycles": "TensorE cycles from a matmul's issue until its PSUM result can be read",
}

#: the constants ``loopsim calibrate`` can fit to measured times, by name: (the sheet key holding
#: it, unit). The timeline's own (every :data:`TIMELINE_KEYS`), the Tensor Engine's per-instruction
#: floor and the DMA engines' peak (whose [dma] throughput curve keeps its shape: efficiency by
#: bytes per partition scales with it). :meth:`NeuronCore.with_constants` replaces them.
CALIBRATABLE = {**{k: (f"timeline.{k}", u) for k, u in TIMELINE_KEYS.items()},
                "mm_init_cycles": ("tensor.mm_init_cycles", "TensorE cycles: the shortest matmul instruction (MM_INIT)"),
                "dma_core_bw": ("dma.core_bw", "bytes/s of one physical core's DMA engines at peak")}


@dataclass(frozen=True, slots=True)
class NeuronCore(Roofs):
    """One NeuronCore scope's roofs and limits (a :class:`~loopsim.targets.base.Target`), every
    number with its source or derivation.

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
    #: the timeline's constants (``[timeline]``, see :data:`TIMELINE_KEYS`): (key, value, assumed)
    timeline: tuple[tuple[str, int, bool], ...] = ()
    _spec_flops: tuple[tuple[str, int], ...] = field(default=(), repr=False, compare=False)
    #: (bytes per partition, DMA throughput relative to peak), ascending, ending at 1 (dma.throughput)
    dma_curve: tuple[tuple[int, float], ...] = ()
    dma_curve_source: str = ""
    #: per mille of the DMA engines' throughput a DMA transpose (HBM -> SBUF) reaches, None: not on
    #: the sheet (a transpose then moves at the copy rate)
    dma_transpose_permille: int | None = None
    family: str = "neuron"
    _rate_name = "documented Tensor Engine rate"

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
    def psum_partition_bytes(self) -> int:
        return self.psum_banks * self.psum_bank_bytes

    @property
    def psum_bank_fp32(self) -> int:
        """fp32 values one PSUM bank holds per partition (512 on NeuronCore)."""
        return self.psum_bank_bytes // 4

    def timeline_value(self, key: str) -> int | None:
        """A ``[timeline]`` constant of the sheet (units in :data:`TIMELINE_KEYS`), None if absent."""
        return next((v for k, v, _ in self.timeline if k == key), None)

    def constants(self) -> dict[str, int]:
        """The :data:`CALIBRATABLE` constants this sheet gives, by name (absent ones left out)."""
        out = {k: v for k, v, _ in self.timeline}
        out["mm_init_cycles"] = self.mm_init_cycles
        if self.dma_bw:
            out["dma_core_bw"] = self.dma_bw // self.physical_cores
        return {k: out[k] for k in CALIBRATABLE if k in out}

    def with_constants(self, overrides) -> "NeuronCore":
        """A copy whose :data:`CALIBRATABLE` constants are ``overrides`` (name -> integer value),
        the rest as the sheet gives them: what ``calibrate`` runs the timeline on. The copy's
        ``values`` still show the sheet's own sources (a written calibrated sheet is reloaded)."""
        unknown = set(overrides) - set(CALIBRATABLE)
        if unknown:
            raise HardwareError(f"{self.name}: no calibratable constant {sorted(unknown)[0]!r}; "
                                f"known: {', '.join(CALIBRATABLE)}")
        tl = {k: (v, a) for k, v, a in self.timeline}
        ch = {}
        for k, v in overrides.items():
            v = int(v)
            if k == "mm_init_cycles":
                ch["mm_init_cycles"] = v
            elif k == "dma_core_bw":
                if v <= 0:
                    raise HardwareError(f"{self.name}: dma_core_bw={v} must be > 0")
                ch["dma_bw"] = v * self.physical_cores
            else:
                tl[k] = (v, False)
        ch["timeline"] = tuple((k, v, a) for k, (v, a) in tl.items())
        import dataclasses

        return dataclasses.replace(self, **ch)

    @property
    def mm_init_seconds(self) -> float:
        return self.mm_init_cycles / self.clock_hz

    # -- the Target protocol (loopsim.targets.base) ---------------------------------------------

    @property
    def lanes(self) -> int | None:
        """SBUF partitions: a tile's cost is bytes per partition (None on a sheet without them)."""
        return self.partitions

    @property
    def accumulator_bytes(self) -> int:
        """PSUM bytes of one physical core (banks × bank bytes × partitions)."""
        return self.psum_banks * self.psum_bank_bytes * (self.partitions or 1)

    def tile_cost(self, shape, tensor):
        """SBUF cost of a tile: bytes per partition (bytes on a sheet without partitions).

        A tile of p rows on the partition axis by f free elements takes ceil(p / partitions) × f ×
        element bytes of each partition's budget: a tile using fewer partitions wastes the rest.
        ``shape`` may hold broadcastable integer arrays (many blocks at once)."""
        if not self.partitions:
            return math.prod(shape) * tensor.elem_bytes
        ax = tensor.partition_axis
        rows = -(-shape[ax] // self.partitions)
        return math.prod(shape[:ax]) * rows * math.prod(shape[ax + 1:]) * tensor.elem_bytes

    def tile_limits(self) -> dict[str, int]:
        """The largest matmul tile per role, elements: K_t the SBUF partitions the operands lie on
        and the PE rows they feed (the PE rows alone without partitions), M_t the PE columns
        (stationary free size), N_t the moving free size. The one place these limits are spelled."""
        k = min(self.partitions, self.pe_rows) if self.partitions else self.pe_rows
        return {"K": k, "M": self.pe_cols, "N": self.moving_max}

    def cannot_run(self, kernel) -> list[str]:
        """Why ``kernel``'s matmul tiles exceed this core's limits, one line each."""
        from loopsim.count.counts import tile_reasons

        return tile_reasons(kernel, self.tile_limits(), self.name)

    def ceilings(self, kernel, *, dtype: str, parallel=None, link_bw=None, strict: bool = False):
        from loopsim.targets.neuron import ceilings

        return ceilings.compute(kernel, self, dtype=dtype, parallel=parallel, link_bw=link_bw,
                                strict=strict)

    def steps(self, stage, op_map, tensor_map, counts, dtype: str, where: str):
        from loopsim.targets.neuron import engines

        return tuple(engines.stage_steps(stage, op_map, tensor_map, counts, self, dtype, where))

    @property
    def transfer_bw(self) -> int | None:
        """The DMA engines' bandwidth as the verdict applies it, bytes/s: none with measured roofs
        (the measured BW already is the memory side as achieved) or on a sheet without one."""
        return self.dma_bw if self.dma_bw and self.roofs != "measured" else None

    def dma_transpose_slowdown(self) -> float:
        """How much longer a DMA transpose holds the DMA engines than a copy of the same bytes:
        1000 / ``dma.transpose`` (per mille), 1 on a sheet without it."""
        return 1000 / self.dma_transpose_permille if self.dma_transpose_permille else 1.0

    def dma_efficiency(self, bytes_per_partition: float) -> float:
        """DMA throughput relative to peak for a transfer of that many bytes per partition (the
        sheet's ``[dma] throughput`` curve), in (0, 1]; 1 on a sheet without one."""
        if not self.dma_curve:
            return 1.0
        from loopsim.targets.neuron.dma import relative_throughput

        return relative_throughput(bytes_per_partition, self.dma_curve)

    def transfer_lines(self, kernel) -> tuple[tuple[int, str, float], ...]:
        """(source line, statement, seconds) of each load/store with a source line: its bytes over
        the DMA engines' bandwidth (its share of the DMA ceiling); () without a DMA bandwidth."""
        if not self.dma_bw:
            return ()
        from loopsim.targets.neuron import dma

        r = dma.report(kernel, self)
        return tuple((s.line, s.text, s.bytes / self.dma_bw) for s in r.statements if s.line)

    def engine_lines(self, kernel, dtype: str,
                     work_of=None) -> tuple[tuple[int, str, float, str], ...]:
        """(source line, statement, seconds, engine) of each matmul with a source line, its
        Tensor Engine instruction time (:func:`loopsim.targets.neuron.ceilings.matmul_lines`),
        then of each op statement per engine it runs on, the busy time the timeline charges
        (:func:`loopsim.targets.neuron.engines.op_lines`; ``work_of(stmt)``: its (engine, passes),
        default its kind's). Engines: ``tensor``, ``vector``, ``scalar``, ``gpsimd``."""
        from loopsim.targets.neuron.ceilings import matmul_lines
        from loopsim.ir.ops import default_work
        from loopsim.targets.neuron.engines import op_lines

        mm = tuple((ln, text, sec, "tensor") for ln, text, sec in matmul_lines(kernel, self, dtype))
        return mm + op_lines(kernel, self, work_of or default_work)

    def matmul_floor(self, dtype: str, m: int, n: int, k: int, kt: int, mt: int, nt: int,
                     cores: int = 1) -> float:
        """Seconds the Tensor Engine needs at least for an m x k by k x n matmul whose instructions
        have K_t <= kt, M_t <= mt, N_t <= nt, on ``cores`` physical cores: every instruction holds
        the PE array for max(N_i, N_min) cycles and covers K_i M_i N_i <= kt mt N_i of the kmn
        products, so the cycles are at least max(kmn / (kt mt), N_min kmn / (kt mt nt)), 1/cores of
        them on the busiest core; clock and dtype factors as in :mod:`.ceilings`."""
        spec_hw = self.with_roofs("spec")
        p_ref = spec_hw.P("bf16")
        f = spec_hw.P(dtype) / p_ref
        cycle_s = 2 * self.pe_rows * self.pe_cols * self.physical_cores / p_ref
        slow = max(1.0, f) / f
        work = m * n * k
        cycles = max(work / (kt * mt), self.mm_init_cycles * work / (kt * mt * nt)) / cores
        return cycles * cycle_s * slow

    def predict(self, stage, op_map, counts, dtype: str, times: dict, details: dict, *,
                run: bool = True, exact: bool = False):
        """The engine timeline of one stage (:mod:`.timeline`), added to ``times``/``details``.
        Not on measured roofs: the timeline times transfers and instructions from the sheet's
        documented constants, while calibrated roofs already are the machine as achieved (as the
        DMA ceiling, :meth:`dma_time`); added, it would bind a calibrated sheet's prediction for
        the very kernel it was fitted to above that kernel's measured time. ``exact``: walk
        every instruction (no loop cut and extrapolated)."""
        if self.roofs == "measured":
            return None
        from loopsim.targets.neuron import timeline

        return timeline.attach(stage, op_map, counts, self, dtype, times, details, run=run,
                               exact=exact)

    def dma_time(self, kernel, counts, *, exact: bool) -> tuple[float, str] | None:
        """The DMA engines' ceiling (:mod:`.dma`): bytes over the scope's aggregate DMA bandwidth,
        seconds, and a line saying so. ``exact``: from the nest's transfers as written (the busiest
        core of an LNC split); else Q. None with measured roofs (the measured BW already is the
        memory side as achieved) or on a sheet without a DMA bandwidth."""
        if self.transfer_bw is None:
            return None
        if not exact:
            return (counts.Q / self.dma_bw,
                    f"DMA: Q = {counts.Q:,} bytes at the DMA engines' {self.dma_bw / 1e9:.4g} GB/s")
        from loopsim.targets.neuron import dma

        d = dma.report(kernel, self)
        share = "<0.1%" if d.small_share < 0.001 else f"{d.small_share:.1%}"
        small = f"; {share} of them in transfers below {dma.SMALL} B per partition" \
            if d.small_bytes else ""
        if d.transposed_bytes:
            small += (f"; {d.transposed_bytes:,} bytes by DMA transpose at "
                      + (f"{self.dma_transpose_permille / 10:g}% of the DMA rate (dma.transpose)"
                         if self.dma_transpose_permille else "the copy rate (no dma.transpose on the sheet)"))
        return d.T, (f"DMA: {d.transfers:,} transfers, {d.bytes:,} bytes at the DMA engines' "
                     f"{self.dma_bw / 1e9:.4g} GB/s" + (f" (busiest of {d.cores} cores)"
                                                      if d.cores > 1 else "") + small)


def build(b) -> NeuronCore:
    """A NeuronCore sheet (``family = "neuron"``) from the generic builder :class:`hardware._Builder`."""
    d = b.data
    h = b.head(TOP_KEYS)
    cores, per_dev = h["physical_cores"], h["cores_per_device"]

    # tensor engine
    te = b.table(d.get("tensor", _MISSING), "tensor")
    b.known(te, "tensor", {"pe_rows", "pe_cols", "clock_hz", "peak_flops", "moving_max",
                              "mm_init_cycles", "dtypes"})
    rows = b.number(te.get("pe_rows", _MISSING), "tensor.pe_rows", unit="PE rows").value
    cols = b.number(te.get("pe_cols", _MISSING), "tensor.pe_cols", unit="PE columns").value
    clock = b.number(te.get("clock_hz", _MISSING), "tensor.clock_hz", unit="Hz").value
    moving = b.number(te.get("moving_max", _MISSING), "tensor.moving_max", unit="elements").value
    mm = b.number(te.get("mm_init_cycles", _MISSING), "tensor.mm_init_cycles", positive=False,
                     unit="TensorE cycles", assumed_ok=True)
    if mm.value > MAX_MM_INIT_CYCLES:
        b.fail("tensor.mm_init_cycles.value", mm.value, f"exceeds {MAX_MM_INIT_CYCLES:,} cycles, the "
                  "largest fixed cost per matmul instruction loopsim accepts (see docs/errors.md)")
    b.derived("tensor.stationary_max", cols, "elements",
                 "= tensor.pe_cols (the stationary tile's free size is bounded by the PE columns)")
    if "peak_flops" in te:
        peak = b.number(te["peak_flops"], "tensor.peak_flops", unit="FLOP/s per physical core").value
        if b.values[-1].source.kind != "defined":
            b.fail("tensor.peak_flops.source", te["peak_flops"].get("source"),
                      "is not allowed: a real sheet derives P from pe_rows × pe_cols × 2 × clock_hz")
        base = Fraction(peak) * cores
        base_how = f"tensor.peak_flops {peak:_} × physical_cores {cores}"
    else:
        base = Fraction(rows * cols * FLOPS_PER_MAC * clock * cores)
        base_how = (f"pe_rows {rows} × pe_cols {cols} × {FLOPS_PER_MAC} FLOP/MAC × clock_hz {clock:_} "
                    f"× physical_cores {cores}")
    flops = b.rates(te, base, base_how)

    # SBUF / PSUM
    sb = b.table(d.get("sbuf", _MISSING), "sbuf")
    b.known(sb, "sbuf", {"bytes", "partitions"})
    sbuf = b.number(sb.get("bytes", _MISSING), "sbuf.bytes", unit="bytes per physical core").value
    parts = None
    if "partitions" in sb:
        parts = b.number(sb["partitions"], "sbuf.partitions", unit="partitions").value
        if sbuf % parts:
            b.fail("sbuf.bytes.value", sbuf, f"is not a multiple of sbuf.partitions={parts}")
        b.derived("sbuf.partition_bytes", sbuf // parts, "bytes per partition",
                     f"sbuf.bytes {sbuf:_} ÷ sbuf.partitions {parts}")
    else:
        b.derived("sbuf.partition_bytes", sbuf, "bytes", "flat memory (no partitions): = sbuf.bytes")
    b.derived("sbuf.bytes_in_scope", sbuf * cores, "bytes",
                 f"sbuf.bytes {sbuf:_} × physical_cores {cores} (each physical core has its own SBUF)")
    ps = b.table(d.get("psum", _MISSING), "psum")
    b.known(ps, "psum", {"banks", "bank_bytes"})
    banks = b.number(ps.get("banks", _MISSING), "psum.banks", unit="banks per partition").value
    bank_bytes = b.number(ps.get("bank_bytes", _MISSING), "psum.bank_bytes", unit="bytes").value
    if bank_bytes % 4:
        b.fail("psum.bank_bytes.value", bank_bytes, "must be a multiple of 4 (fp32 values)")
    b.derived("psum.bank_fp32", bank_bytes // 4, "fp32 values per bank per partition",
                 f"psum.bank_bytes {bank_bytes} ÷ 4 bytes")
    b.derived("psum.partition_bytes", banks * bank_bytes, "bytes per partition",
                 f"psum.banks {banks} × psum.bank_bytes {bank_bytes}")

    # HBM
    bw, device_bw = b.hbm(cores, per_dev, flops)

    # DMA
    dm = b.table(d.get("dma", _MISSING), "dma")
    b.known(dm, "dma", {"engines", "core_bw", "throughput", "transpose"})
    dma = b.number(dm.get("engines", _MISSING), "dma.engines", unit="DMA engines per physical core").value
    dma_bw = None
    if "core_bw" in dm:
        core_bw = b.number(dm["core_bw"], "dma.core_bw",
                              unit="bytes/s per physical core (all its DMA engines)").value
        dma_bw = core_bw * cores
        b.derived("dma.bw", dma_bw, "bytes/s (scope)",
                     f"dma.core_bw {core_bw:_} × physical_cores {cores} (each physical core has "
                     "its own DMA engines)")

    curve, curve_src = _dma_curve(b, dm["throughput"]) if "throughput" in dm else ((), "")
    transpose = None
    if "transpose" in dm:
        transpose = b.number(dm["transpose"], "dma.transpose",
                             unit="per mille of the DMA throughput a DMA transpose reaches").value
        if transpose > 1000:
            b.fail("dma.transpose.value", transpose, "must be at most 1000 (per mille of the DMA throughput)")

    # engines
    engines = []
    en = b.table(d.get("engines", {}), "engines")
    for ename, node in en.items():
        path = f"engines.{ename}"
        if ename not in ENGINES:
            b.fail(path, _short(node), f"is not a known engine; expected one of: {', '.join(ENGINES)}")
        node = b.table(node, path)
        b.known(node, path, {"clock_hz", "width", "documented_fp32_flops"})
        eclock = None
        if "clock_hz" in node:
            eclock = b.number(node["clock_hz"], f"{path}.clock_hz", unit="Hz").value
        widths = []
        wt = b.table(node.get("width", {}), f"{path}.width")
        for wd, wn in wt.items():
            if wd != "default" and wd not in DTYPES:
                b.fail(f"{path}.width.{wd}", _short(wn), f"is not 'default' or a known dtype")
            w = b.number(wn, f"{path}.width.{wd}", unit="elements/cycle").value
            widths.append((wd, w))
        if "documented_fp32_flops" in node:
            b.number(node["documented_fp32_flops"], f"{path}.documented_fp32_flops",
                        unit="FLOP/s per physical core (documented; not used as a roof)")
        if eclock is not None:
            for wd, w in widths:
                b.derived(f"{path}.roof.{wd}", w * eclock * cores, "elements/s (scope)",
                             f"{path}.width.{wd} {w} × {path}.clock_hz {eclock:_} × physical_cores {cores}")
        engines.append((ename, eclock, tuple(widths)))

    link = b.link()
    timeline = []
    if "timeline" in d:
        tl = b.table(d["timeline"], "timeline")
        b.known(tl, "timeline", set(TIMELINE_KEYS))
        for key, unit in TIMELINE_KEYS.items():
            if key in tl:
                v = b.number(tl[key], f"timeline.{key}", positive=False, unit=unit, assumed_ok=True)
                timeline.append((key, v.value, v.assumed))
    measured = b.measured(d.get("measured", _MISSING))

    return NeuronCore(
        **h, partitions=parts, sbuf_bytes=sbuf, bw=bw, device_bw=device_bw, clock_hz=clock,
        pe_rows=rows, pe_cols=cols, moving_max=moving, stationary_max=cols, psum_banks=banks,
        psum_bank_bytes=bank_bytes, mm_init_cycles=mm.value, mm_init_assumed=mm.assumed,
        dma_engines=dma, link_bw=link, roofs="spec",
        flops=tuple(flops), engines=tuple(engines), values=tuple(b.values), measured=measured,
        dma_bw=dma_bw, _spec_flops=tuple(flops), dma_curve=curve, dma_curve_source=curve_src,
        timeline=tuple(timeline), dma_transpose_permille=transpose,
    )


def _dma_curve(b, node) -> tuple[tuple[tuple[int, float], ...], str]:
    """``[dma] throughput = { permille = [[BYTES_PER_PARTITION, PERMILLE], ...], source = ... }``:
    DMA throughput relative to peak by transfer size, ascending, its last point 1000 (the peak)."""
    path = "dma.throughput"
    node = b.table(node, path)
    b.known(node, path, {"permille", "source", "quote", "paraphrase", "defined", "note"})
    pts = node.get("permille", _MISSING)
    if not isinstance(pts, list) or len(pts) < 2:
        b.fail(f"{path}.permille", pts, "must be a list of at least two [bytes per partition, permille] pairs")
    out, last = [], 0
    for i, pt in enumerate(pts):
        where = f"{path}.permille[{i}]"
        if not (isinstance(pt, list) and len(pt) == 2):
            b.fail(where, pt, "must be a pair [bytes per partition, permille]")
        x = b.scalar(pt[0], f"{where}[0]")
        y = b.scalar(pt[1], f"{where}[1]")
        if x <= last:
            b.fail(f"{where}[0]", x, "must be larger than the point before (ascending sizes)")
        if y > 1000:
            b.fail(f"{where}[1]", y, "must be <= 1000 (permille of peak)")
        out.append((x, y / 1000))
        last = x
    if out[-1][1] != 1:
        b.fail(f"{path}.permille[{len(pts) - 1}][1]", pts[-1][1], "must be 1000: the curve ends at the peak")
    src = b.source(node, path)
    shown = ", ".join(f"{x} B {y:.1%}" for x, y in out)
    b.values.append(Value(path, shown, "of peak DMA throughput, by bytes per partition", src))
    return tuple(out), str(src)
