"""A NeuronCore timeline: the kernel's instructions on the engines' queues, costed from the sheet.

The nest runs in program order, loop iteration by loop iteration. Every statement execution becomes
instructions (:mod:`loopsim.targets.schedule` schedules them):

- ``load`` / ``store``: one DMA transfer per execution (per chunk of ``load A[...] by R``), on a
  queue of its own statement, sharing the core's DMA engines (a pipe). It starts
  ``timeline.dma_fixed_ns`` after what it waits for (descriptor setup, synchronisation and
  semaphore-to-start latency, [S11]; queued transfers hide it) and holds the engines for
  ``bytes / (e × dma.core_bw / dma.engines × eff)``: e = min(dma.engines, partitions it touches)
  engines (ASSUMED from [S1]'s "16 DMA transfers (one per DMA engine)" for a 128-row tile), eff =
  the throughput the [S10] figure shows for its bytes per partition
  (:func:`loopsim.targets.neuron.dma.relative_throughput`).
- ``matmul``: one Tensor Engine instruction per batch value, max(N_t, MM_INIT) cycles × the dtype's
  cycle factor (fp32 4x) at the TensorE clock [S1]; its PSUM result is readable
  ``timeline.te_fill_cycles`` later (ASSUMED). An accumulation group (the matmuls into one output
  tile) holds ceil(N_t × 4 B / psum.bank_bytes) PSUM banks from its first matmul until its tile is
  read out; a group waits for free banks.
- reading a PSUM tile out (the copy to SBUF before a store of a matmul output, an ``acc``, an op
  reading a matmul output) and every op: an instruction on its engine of max(MIN_II cycles,
  elements / the engine's roof) (``timeline.engine_min_cycles``, [S30]'s ``max(MIN_II, N)``);
  an op on several engines runs on each in turn.

Dependencies: an instruction waits for the last writer of every tile it reads (RAW); a load or
an op output into a buffer waits until every reader of what the buffer held has finished (WAR):
execution j of a statement inside a loop uses buffer j mod ``buffers`` (:func:`buffers_of`), so
one buffer serialises a load behind the previous tile's compute and two let them overlap. A store
of a tile nothing wrote on chip (the copy idiom) writes out the last load's buffer.

An LNC split kernel runs each physical core's share on its own engines (its own DMA engines, PSUM
and queues); T is the busiest core's.

Large kernels: each loop longer than a few iterations is cut to its first iterations and its last
(interior iterations are alike), the cut nest run at 2^j corner sizes and every figure (makespan,
busy time, gap parts) extrapolated multilinearly in the trip counts
(:func:`loopsim.targets.schedule.multilinear`): cost grows with the loop structure, not the trip
count. Where the whole kernel fits the instruction budget it runs exactly.

Units: seconds, bytes.
"""

from __future__ import annotations

import math
from operator import sub as _sub
from dataclasses import dataclass

from loopsim.base.errors import HardwareError
from loopsim.count.counts import buffers_of
from loopsim.ir.kernel import Accumulate, Kernel, Load, Loop, Matmul, Store
from loopsim.ir.ops import default_work, work_of_stage
from loopsim.ir.ops import get as op_kind
from loopsim.ir.tiles import full_extent, matmul_roles
from loopsim.targets import schedule as tl
from loopsim.targets.neuron.dma import relative_throughput, transfer_parts
from loopsim.targets.neuron.engines import engine_seconds, work_seconds

#: instructions one run of the (cut) nest may have, over all corner runs
BUDGET = 24_000
#: the most loops cut for extrapolation (2^MAX_CUT corner runs, each up to BUDGET instructions):
#: a nest needing more (a trace left many loops unrolled beside each other) gets no timeline
MAX_CUT = 12
#: the budget of ``--model exact``: no loop is cut (every instruction walked)
EXACT = 2 ** 62
#: a loop cut for extrapolation keeps this many iterations (its first KEEP-1 and its last) and
#: runs again with one more
KEEP = 4
#: instructions (:func:`_size`) from which a run walks compiled by default: below, numba's import
#: and loading the compiled walk from its cache (~0.5 s CPU) cost more than the Python walk
#: (~4.5 us an instruction); docs/performance.md
COMPILED_FROM = 100_000
ENGINE_ORDER = ("dma", "tensor", "vector", "scalar", "gpsimd")
#: the Day-7 causes of a gap, in the order reports list them
CAUSES = ("fixed_cost", "no_overlap", "slower_engine", "te_underfill", "small_transfers",
          "dma_rate", "extra_bytes")
CAUSE_TEXT = {
    "fixed_cost": "fixed cost: before the first and after the last instruction of the binding engine, "
                  "and DMA start latency it waits through",
    "no_overlap": "no overlap: the binding engine waits for the other (DMA for data, or compute for a buffer)",
    "slower_engine": "slower engine: the binding engine waits for a Vector/Scalar/GpSimd instruction",
    "te_underfill": "Tensor Engine busy but below P (tile fill, MM_INIT issue rate, dtype)",
    "small_transfers": "DMA below peak: transfers under the size the DMA engines need (and fewer engines)",
    "dma_rate": "the DMA engines' peak is below BW",
    "extra_bytes": "bytes the DMA moves beyond Q",
}


@dataclass(frozen=True, slots=True)
class Timeline:
    """The predicted run of one kernel. ``T``: makespan (s); ``serial``: every instruction one after
    another (s); ``busy``: (engine, seconds) of the busiest core; ``instructions``: (engine, count)
    over every core; ``gap``: (cause, seconds) splitting T - T_best (when T >= T_best);
    ``reference``: the engine the gap is measured on (``tensor`` when W/P binds the roofline, else
    ``dma``); ``critical``: the engine kind holding most of the critical path; ``exact``: the whole
    nest ran (else extrapolated from ``runs`` cut runs of at most ``simulated`` instructions);
    ``notes``: what the model left out."""

    kernel: str
    T: float
    T_best: float
    serial: float
    busy: tuple[tuple[str, float], ...]
    instructions: tuple[tuple[str, int], ...]
    gap: tuple[tuple[str, float], ...]
    reference: str
    critical: str
    exact: bool
    runs: int
    simulated: int
    cut: tuple[tuple[str, int, int], ...]  # (loop var, trips, iterations run)
    constants: tuple[tuple[str, str], ...]  # (constant, value and source) the costs used
    notes: tuple[str, ...] = ()
    sched: object = None  # the largest run's Scheduler (for pictures), not compared

    @property
    def busy_map(self) -> dict[str, float]:
        return dict(self.busy)

    def busy_share(self) -> dict[str, float]:
        return {k: (v / self.T if self.T else 0.0) for k, v in self.busy}

    @property
    def count(self) -> int:
        return sum(n for _, n in self.instructions)

    def summary(self) -> str:
        """One line: T, the binding engine and busy shares."""
        sh = ", ".join(f"{k} {v:.0%}" for k, v in self.busy_share().items())
        how = "" if self.exact else f"; extrapolated from {self.runs} cut runs"
        return (f"timeline: {self.count:,} instructions, critical path on {self.critical}; "
                f"busy {sh}{how}")

    def as_dict(self) -> dict:
        return {"T": self.T, "T_best": self.T_best, "T_serial": self.serial,
                "reference": self.reference, "critical": self.critical,
                "engines": {k: {"busy_s": v, "busy_share": (v / self.T if self.T else 0.0),
                                "instructions": dict(self.instructions).get(k, 0)}
                            for k, v in self.busy},
                "instructions": dict(self.instructions),
                "gap": {k: v for k, v in self.gap}, "gap_total": max(0.0, self.T - self.T_best),
                "exact": self.exact, "runs": self.runs, "simulated_instructions": self.simulated,
                "cut_loops": [{"loop": v, "trips": t, "run": r} for v, t, r in self.cut],
                "constants": dict(self.constants), "notes": list(self.notes)}


# ---------------------------------------------------------------------------------------------
# costs from the sheet


@dataclass(frozen=True, slots=True)
class Costs:
    """Per-core cost constants from the sheet (seconds, bytes/s, cycles)."""

    dma_fixed: float
    dma_engine_bw: float  # bytes/s of one DMA engine
    dma_engines: int
    partitions: int | None
    te_cycle: float  # s per TensorE cycle
    mm_init: int
    te_slow: float  # cycles per instruction relative to bf16
    te_fill: float  # s
    min_cycles: int
    psum_banks: int
    psum_bank_bytes: int
    roofs: tuple[tuple[str, float, float], ...]  # (engine, elements/s of one core, clock Hz)
    dma_curve: tuple[tuple[int, float], ...] = ()  # the sheet's [dma] throughput curve

    def clock(self, name: str, hw) -> float:
        """The clock (Hz) of the sheet's ``name`` engine."""
        return next(c for e, c, _ in hw.engines if e == name)


def costs(hw, dtype: str) -> tuple[Costs, tuple[tuple[str, str], ...], list[str]]:
    notes = []
    fixed_ns = hw.timeline_value("dma_fixed_ns")
    min_c = hw.timeline_value("engine_min_cycles")
    fill_c = hw.timeline_value("te_fill_cycles")
    if not hw.timeline:
        notes.append(f"{hw.name} has no [timeline] constants: no DMA fixed cost, engine overhead "
                     "or Tensor Engine fill (throughput only)")
    core_dma = (hw.dma_bw or hw.bw) / hw.physical_cores
    if hw.roofs == "measured":
        core_dma = hw.bw / hw.physical_cores
        notes.append(f"measured roofs: the DMA engines' peak is the measured BW ({hw.bw / 1e9:.4g} GB/s)")
    elif not hw.dma_bw:
        notes.append(f"{hw.name} has no DMA bandwidth: DMA at the core's share of BW")
    spec = hw.with_roofs("spec")
    f = spec.P(dtype) / spec.P("bf16")
    c = Costs(dma_fixed=(fixed_ns or 0) * 1e-9, dma_engine_bw=core_dma / hw.dma_engines,
              dma_engines=hw.dma_engines, partitions=hw.partitions, te_cycle=1.0 / hw.clock_hz,
              mm_init=hw.mm_init_cycles, te_slow=max(1.0, f) / f,
              te_fill=(fill_c or 0) / hw.clock_hz, min_cycles=min_c or 0,
              psum_banks=hw.psum_banks, psum_bank_bytes=hw.psum_bank_bytes, roofs=(),
              dma_curve=hw.dma_curve)
    cal = {k.rpartition(".")[2] for k, _ in hw.calibrated}  # fitted by loopsim calibrate
    assumed = {k for k, _, a in hw.timeline if a}

    def mark(key: str) -> str:
        return " (calibrated)" if key in cal else " (ASSUMED)" if key in assumed else ""

    used = (("dma_fixed_ns", f"{fixed_ns} ns{mark('dma_fixed_ns')}" if fixed_ns is not None else "absent (0)"),
            ("dma_engine_bw", f"{core_dma / hw.dma_engines / 1e9:.4g} GB/s = dma.core_bw / dma.engines "
                              f"({hw.dma_engines})" + (" (dma.core_bw calibrated)" if "core_bw" in cal else "")),
            ("dma_efficiency", f"by bytes per partition, the sheet's [dma] throughput ({hw.dma_curve_source})"),
            ("mm_init_cycles", f"{hw.mm_init_cycles}" + (" (calibrated)" if "mm_init_cycles" in cal else
                                                         " (ASSUMED)" if hw.mm_init_assumed else "")),
            ("te_fill_cycles", f"{fill_c}{mark('te_fill_cycles')}" if fill_c is not None else "absent (0)"),
            ("engine_min_cycles", f"{min_c}{mark('engine_min_cycles')}" if min_c is not None else "absent (0)"))
    return c, used, notes


# ---------------------------------------------------------------------------------------------
# the run of a (possibly cut) nest


class _Core:
    """One physical core's queues, buffers and PSUM."""

    def __init__(self, sched: tl.Scheduler, core: int, c: Costs):
        self.sched = sched
        self.core = core
        self.pipe = f"dma{core}"
        self.writers: dict[str, list] = {}  # tensor -> [(starts, ends, instr, slot)], newest last
        self.exact: dict[tuple, tuple] = {}  # (tensor, starts, ends) -> its newest writer
        self.cover: dict[tuple, tuple] = {}  # (tensor, region) -> (version, writers found)
        self.version: dict[str, int] = {}  # tensor -> writes so far
        self.slot_free: dict = {}  # slot -> the instructions reading its content (tl.Scheduler.slot_wait)
        self.execs: dict[int, int] = {}  # statement -> executions so far
        self.groups: dict[tuple, list] = {}  # (tensor, starts) -> [its first matmul (holds its
        # PSUM banks: the scheduler's pool ``core``), its last matmul, ends]
        self.last_load: tuple | None = None
        self.queues: dict[str, int] = {}

    def q(self, name: str, kind: str) -> int:
        qid = self.queues.get(name)
        if qid is None:  # named NAME@CORE on a core past the first
            qid = self.queues[name] = self.sched.queue_id(f"{name}@{self.core}" if self.core else name, kind)
        return qid


_UNKNOWN = object()  # not decided yet

#: the tile geometry of an access under its loops (its objects kept, so a reused id never matches)
_GEOM: dict = {}


def _geometry(acc, loops, t):
    """Per axis of the tile ``acc`` under ``loops``: (terms, offset, extent, the tensor's size)."""
    key = (id(acc), id(t), *map(id, loops))
    geom = _GEOM.get(key)
    if geom is None or geom[0] is not acc or geom[2] is not t or \
            len(geom[1]) != len(loops) or any(a is not b for a, b in zip(geom[1], loops)):
        if len(_GEOM) > 1 << 14:
            _GEOM.clear()
        geom = _GEOM[key] = (acc, loops, t, tuple((acc.terms_of(axis), acc.offset_of(axis),
                                                   full_extent(acc, axis, loops, t), t.shape[axis])
                                                  for axis in range(len(acc.index))))
    return geom[3]


def _region(geom, env):
    """(starts, ends) of the tile of geometry ``geom`` (:func:`_geometry`) at loop values ``env``,
    or None when it starts past the tensor's edge (the execution does not run)."""
    st, en = [], []
    for terms, off, ext, dim in geom:
        s = off
        for v, c in terms:
            s += env[v] * c
        if s >= dim:
            return None
        st.append(s)
        s += ext
        en.append(s if s < dim else dim)
    return tuple(st), tuple(en)


#: region functions by geometry (:func:`_regioner`)
_REGIONER: dict = {}


def _regioner(geom):
    """:func:`_region` of ``geom`` as a function of ``env`` alone, written out for the geometry
    (the same integer arithmetic, without the loops over axes and terms: the walk calls it once
    per access per execution)."""
    f = _REGIONER.get(geom)
    if f is not None:
        return f
    plain = all(type(x) is int for terms, *rest in geom for x in (*rest, *(c for _, c in terms))) and \
        all(type(v) is str and v.isidentifier() for terms, *_ in geom for v, _ in terms)
    if not plain:  # not plain integers and names: the general loop
        return lambda env: _region(geom, env)
    lines, st, en = ["def f(env):"], [], []
    for a, (terms, off, ext, dim) in enumerate(geom):
        expr = " + ".join([repr(off)] + [f"env[{v!r}] * {c!r}" for v, c in terms])
        lines += [f"    s{a} = {expr}", f"    if s{a} >= {dim!r}:", "        return None",
                  f"    e{a} = s{a} + {ext!r}"]
        st.append(f"s{a}")
        en.append(f"(e{a} if e{a} < {dim!r} else {dim!r})")
    lines.append(f"    return ({''.join(x + ', ' for x in st)}), ({''.join(x + ', ' for x in en)})")
    ns: dict = {}
    exec("\n".join(lines), ns)  # noqa: S102 -- built from integers and variable names only
    if len(_REGIONER) > 1 << 14:
        _REGIONER.clear()
    f = _REGIONER[geom] = ns["f"]
    return f


def _overlap(a, b) -> bool:
    (s1, e1), (s2, e2) = a, b
    for x, z, y, w in zip(s1, e1, s2, e2):
        if x >= w or y >= z:
            return False
    return True


class _Run:
    def __init__(self, kernel: Kernel, hw, dtype: str, c: Costs, keep: dict, work_of,
                 compiled: bool = False):
        self.k = kernel
        self.hw = hw
        self.dtype = dtype
        self.c = c
        self.keep = keep
        self.work_of = work_of
        self.tm = kernel.tensor_map
        self.sched = tl.Scheduler(c.psum_banks)
        self.compiled = compiled  # walk and schedule in the compiled walk (walk.py) where it applies
        self.cores: dict[int, _Core] = {}
        self.mm_out = {s.out.tensor for s, _ in kernel.statements() if isinstance(s, Matmul)}
        self.stmt_id: dict[int, int] = {id(s): i for i, (s, _) in enumerate(kernel.statements())}
        self.loops_of = {id(s): ls for s, ls in kernel.statements()}
        self.roles = {id(s): matmul_roles(s, kernel) for s, _ in kernel.statements() if isinstance(s, Matmul)}
        self.engine_cache: dict = {}  # (engine, elements, passes, its type, dtype) -> seconds
        self.geom: dict = {}  # (id(access), id(loops)) -> _geometry
        self.dma_cache: dict = {}  # (id(tensor), extents, transpose) -> _dma_time
        self.nbuf: dict[str, int] = {}  # tensor -> its buffers (buffers_of)
        self.prep: dict[int, tuple] = {}  # statement -> what its executions share (per handler)
        self._evac = _UNKNOWN  # the PSUM read-out engine (_evac_engine)
        self.eff: dict[int, float] = {}
        self.dma_q: dict[int, str] = {}  # statement -> its DMA queue's name
        self.dma_bytes = 0
        self.dma_bytes_core: dict[int, int] = {}
        self.latency = 0.0  # every DMA's fixed cost and every PSUM read's fill (the serial sum's share)
        self.notes: set[str] = set()

    def _region(self, acc, loops, t, env):
        """:func:`_region` of ``acc`` under ``loops``, its geometry kept for the run (the run
        holds every object of the key alive, so an id is not reused during it)."""
        key = (id(acc), id(loops))
        geom = self.geom.get(key)
        if geom is None:
            geom = self.geom[key] = _regioner(_geometry(acc, loops, t))
        return geom(env)

    # -- walking the nest ---------------------------------------------------------------------
    def run(self):
        if not (self.compiled and self._run_compiled()):
            self._walk(self._compile(self.k.body), {}, 0)
        if self.sched.shared:
            self.notes.add("more PSUM accumulators open at once than banks (the kernel cannot "
                           "run as written): the timeline lets them share")
        return self

    def _run_compiled(self) -> bool:
        from loopsim.targets.neuron import walk

        return walk.run_compiled(self, _geometry)

    def _compile(self, body) -> list:
        """``body`` as the walk runs it: a loop as (var, (iteration, value) pairs run, spmd, its
        body compiled), a statement as (None, handler, statement, its loops, its label)."""
        out = []
        for node in body:
            if isinstance(node, Loop):
                n = node.trips
                kept = self.keep.get(id(node), n)
                its = range(n) if kept >= n else list(range(kept - 1)) + [n - 1]
                out.append((node.var, tuple((i, i * node.step) for i in its), node.spmd,
                            self._compile(node.body), None))
                continue
            if isinstance(node, Load):
                h = self._load
            elif isinstance(node, Store):
                h = self._store
            elif isinstance(node, Matmul):
                h = self._matmul
            elif isinstance(node, Accumulate):
                h = self._acc
            elif hasattr(node, "inputs"):
                h = self._op
            else:
                continue
            out.append((None, h, node, self.loops_of[id(node)], self.stmt_id[id(node)]))
        return out

    def _walk(self, plan, env, core):
        cs = self.cores.get(core) or self._core(core)
        for var, a, b, c, d in plan:
            if var is None:  # a statement: (None, handler, statement, loops, label)
                a(cs, b, c, env, d)
                continue
            for i, v in a:
                env[var] = v
                self._walk(c, env, i if b else core)
            del env[var]

    def _core(self, core: int) -> _Core:
        if core not in self.cores:
            self.cores[core] = _Core(self.sched, core, self.c)
        return self.cores[core]

    # -- costs ----------------------------------------------------------------------------------
    def _dma_cost(self, shape_ext, t, core: int, transpose: bool = False) -> tuple[float, int, int]:
        """(seconds on the engines, bytes, bytes per partition) of one transfer of that extent; a
        DMA transpose holds the engines the sheet's transpose slowdown longer (the DMA ceiling's
        factor, :meth:`NeuronCore.dma_transpose_slowdown`)."""
        key = (id(t), shape_ext, transpose)
        hit = self.dma_cache.get(key)
        if hit is None:
            hit = self.dma_cache[key] = self._dma_time(shape_ext, t, transpose)
        nbytes = hit[1]
        self.dma_bytes += nbytes
        self.latency += self.c.dma_fixed
        self.dma_bytes_core[core] = self.dma_bytes_core.get(core, 0) + nbytes
        return hit

    def _dma_time(self, shape_ext, t, transpose: bool) -> tuple[float, int, int]:
        return self._dma_rate(math.prod(shape_ext), shape_ext[t.partition_axis], t, transpose)

    def _dma_rate(self, elements: int, rows: int, t, transpose: bool) -> tuple[float, int, int]:
        """:meth:`_dma_time` of a transfer of ``elements`` over ``rows`` of the partition axis."""
        nbytes = elements * t.elem_bytes
        if self.c.partitions:
            ppb = -(-rows // self.c.partitions) * (nbytes // rows)
            e = min(self.c.dma_engines, min(rows, self.c.partitions))
        else:
            ppb, e = nbytes, self.c.dma_engines
        eff = self.eff.get(ppb)
        if eff is None:
            # no [dma] throughput curve (a sheet written before it existed): no derating, as
            # the sheet's own dma_efficiency says
            eff = self.eff[ppb] = (relative_throughput(ppb, self.c.dma_curve)
                                   if self.c.dma_curve else 1.0)
        rate = e * self.c.dma_engine_bw * eff
        if transpose:
            return nbytes / rate * self.hw.dma_transpose_slowdown(), nbytes, ppb
        return nbytes / rate, nbytes, ppb

    def _engine_time(self, engine: str, elements: int, passes: float, dtype: str) -> float:
        """max(MIN_II cycles, the engine ceiling's seconds for these element-ops on one core):
        the ceiling's own formula (:func:`engines.engine_seconds`), so no instruction runs
        faster than the ceiling that contains it."""
        key = (engine, elements, passes, type(passes), dtype)
        hit = self.engine_cache.get(key)
        if hit is None:
            floor = self.c.min_cycles / self.c.clock(engine, self.hw)
            hit = self.engine_cache[key] = max(floor, engine_seconds(self.hw, engine, passes * elements,
                                                                     dtype, per_core=True))
        return hit

    def _evac_engine(self):
        """The engine that reads PSUM out: Vector, else Scalar, whichever the sheet has a roof for
        (None for neither); decided once per run."""
        if self._evac is _UNKNOWN:
            self._evac = self._find_evac_engine()
        return self._evac

    def _find_evac_engine(self):
        for e in ("vector", "scalar"):
            try:
                self.hw.engine_roof(e, "fp32")
                return e
            except HardwareError:
                continue
        return None

    # -- dependencies ---------------------------------------------------------------------------
    def _writers(self, cs: _Core, tensor: str, region):
        """The newest writer of ``region`` when one wrote exactly it, else the newest writer of each
        region that overlaps it (among the last 32 writes of the tensor; remembered until the
        tensor is written again)."""
        ent = cs.exact.get((tensor, region[0], region[1]))
        if ent is not None:
            return [ent]
        key = (tensor, region)
        hit = cs.cover.get(key)
        ver = cs.version.get(tensor, 0)
        if hit is not None and hit[0] == ver:
            return hit[1]
        out, seen = [], set()
        rs, re_ = region
        if len(rs) == 2:  # the common case, unrolled (the scan is the timeline's hot loop)
            (a0, a1), (b0, b1) = rs, re_
            for ent in reversed(cs.writers.get(tensor, [])[-32:]):
                s, e = ent[0], ent[1]
                if s[0] < b0 and a0 < e[0] and s[1] < b1 and a1 < e[1] and (s, e) not in seen:
                    out.append(ent)
                    seen.add((s, e))
        else:
            for ent in reversed(cs.writers.get(tensor, [])[-32:]):
                r = (ent[0], ent[1])
                if r not in seen and _overlap(r, region):
                    out.append(ent)
                    seen.add(r)
        if len(cs.cover) > 1 << 16:
            cs.cover.clear()
        cs.cover[key] = (ver, out)
        return out

    def _write(self, cs: _Core, tensor: str, region, instr: int, slot) -> None:
        lst = cs.writers.get(tensor)
        if lst is None:
            lst = cs.writers[tensor] = []
        s, e = region
        ent = (s, e, instr, slot)
        lst.append(ent)
        cs.exact[(tensor, s, e)] = ent
        cs.version[tensor] = cs.version.get(tensor, 0) + 1
        if len(lst) > 256:
            del lst[:128]

    def _read_done(self, cs: _Core, ents, i: int) -> None:
        free = cs.slot_free
        for ent in ents:
            slot = ent[3]
            if slot is not None:
                lst = free.get(slot)
                if lst is None:
                    free[slot] = [i]
                else:
                    lst.append(i)

    def _slot(self, cs: _Core, stmt, tensor: str, loops, sub: int = 0):
        """The buffer this execution of ``stmt`` fills (execution count mod buffers)."""
        sid = self.stmt_id[id(stmt)]
        j = cs.execs.get(sid, 0)
        if not loops:
            return (sid, 0, sub)  # j % 1
        b = self.nbuf.get(tensor)
        if b is None:
            b = self.nbuf[tensor] = buffers_of(self.k, tensor)
        return (sid, j % b, sub)

    def _groups_in(self, cs: _Core, tensor: str, region):
        return [(k, g) for k, g in cs.groups.items() if k[0] == tensor and _overlap((k[1], g[2]), region)]

    def _drain(self, cs: _Core, tensor, region, engine, elements, extra_waits, label):
        """Read the open PSUM groups of ``tensor`` in ``region`` on ``engine`` (one instruction per
        group), free their banks; returns the instructions (empty when none is open)."""
        out = []
        for key, g in self._groups_in(cs, tensor, region):
            waits = list(extra_waits)
            last = g[1]
            waits.append((last, self.c.te_fill))
            n = math.prod(e - s for s, e in zip(key[1], g[2]))
            dur = self._engine_time(engine, n, 1, "fp32") if engine else 0.0
            i = self.sched.add(cs.q(engine or "vector", engine or "vector"), dur, waits, label=label,
                               pool=cs.core, release=g[0])
            self.latency += self.c.te_fill
            del cs.groups[key]
            out.append(i)
        return out

    # -- statements -----------------------------------------------------------------------------
    def _load(self, cs, stmt, loops, env, label):
        prep = self.prep.get(label)
        if prep is None:
            t = self.tm[stmt.tile.tensor]
            prep = self.prep[label] = (t, _regioner(_geometry(stmt.tile, loops, t)), f"dma:{stmt}",
                                       stmt.chunks(t.partition_axis),
                                       buffers_of(self.k, t.name) if loops else 1)
        t, geom, qname, chunk, nbuf = prep
        reg = geom(env)
        if reg is None:
            return
        q = cs.queues.get(qname)
        if q is None:
            q = cs.q(qname, "dma")
        execs = cs.execs
        done = execs.get(label, 0)
        j = done % nbuf
        add, fixed, free, write = self.sched.add, self.c.dma_fixed, cs.slot_free, self._write
        slot_wait = self.sched.slot_wait
        for n, (s0, e0) in enumerate(_chunks(reg, chunk) if chunk else (reg,)):
            slot = (label, j, n)
            dur = self._dma_cost(tuple(map(_sub, e0, s0)), t, cs.core, stmt.transpose)[0]
            i = add(q, dur, (slot_wait(free.pop(slot, ()), fixed),), cs.pipe, label)
            write(cs, t.name, (s0, e0), i, slot)
            cs.last_load = (i, slot)
        execs[label] = done + 1

    def _store(self, cs, stmt, loops, env, label):
        prep = self.prep.get(label)
        if prep is None:
            t = self.tm[stmt.tile.tensor]
            prep = self.prep[label] = (t, _regioner(_geometry(stmt.tile, loops, t)))
        t, f = prep
        reg = f(env)
        if reg is None:
            return
        waits = []
        if t.name in self.mm_out:  # PSUM -> SBUF staging copy first
            slot = self._slot(cs, stmt, t.name, loops)
            eng = self._evac_engine()
            if eng is None:
                self.notes.add("no Vector/Scalar roof on the sheet: PSUM evacuation costs nothing")
            free = self.sched.slot_wait(cs.slot_free.pop(slot, ()))
            for i in self._drain(cs, t.name, reg, eng, 0, [free], label):
                self._write(cs, t.name, reg, i, slot)
        ents = self._writers(cs, t.name, reg)
        if not ents and cs.last_load is not None:  # the copy idiom: write out the last load's buffer
            i0, slot0 = cs.last_load
            ents = [(None, None, i0, slot0)]
        for ent in ents:
            waits.append((ent[2], self.c.dma_fixed))
        if not waits:
            waits.append((-1, self.c.dma_fixed))
        dur = self._dma_cost(tuple(map(_sub, reg[1], reg[0])), t, cs.core)[0]
        name = self.dma_q.get(id(stmt)) or self.dma_q.setdefault(id(stmt), f"dma:{stmt}")
        i = self.sched.add(cs.q(name, "dma"), dur, waits, pipe=cs.pipe, label=label)
        self._read_done(cs, ents, i)
        cs.execs[label] = cs.execs.get(label, 0) + 1

    def _matmul(self, cs, stmt, loops, env, label):
        prep = self.prep.get(label)
        if prep is None:
            tm = self.tm
            prep = self.prep[label] = (
                tuple((a.tensor, _regioner(_geometry(a, loops, tm[a.tensor])))
                      for a in (stmt.stationary, stmt.moving, stmt.out)), self.roles[id(stmt)])
        (ts, gs), (tmv, gm), (to, go) = prep[0]
        rs = gs(env)
        if rs is None:
            return
        rm = gm(env)
        if rm is None:
            return
        ro = go(env)
        if ro is None:
            return
        ro_key = (to, ro[0])
        waits, ents = [], []
        kind, fill = self.sched.kind, self.c.te_fill
        for tensor, r in ((ts, rs), (tmv, rm)):
            for ent in self._writers(cs, tensor, r):
                ents.append(ent)
                w = ent[2]
                lag = fill if kind[w] == "tensor" else 0.0  # ent_lag
                waits.append((w, lag))
        roles = prep[1]
        n_t = rm[1][roles.n_moving] - rm[0][roles.n_moving]
        batch = math.prod(rs[1][bs] - rs[0][bs] for bs, _, _ in roles.batch) if roles.batch else 1
        g = cs.groups.get(ro_key)
        need = 0
        if g is None:  # a new accumulation group: PSUM banks (the scheduler picks the free ones)
            need = min(self.c.psum_banks, max(1, -(-n_t * 4 // self.c.psum_bank_bytes)) * batch)
        cyc = max(n_t, self.c.mm_init) * self.c.te_slow * batch
        q = cs.queues.get("tensor")
        if q is None:
            q = cs.q("tensor", "tensor")
        i = self.sched.add(q, cyc * self.c.te_cycle, waits, None, label, need, cs.core)
        if g is None:
            g = cs.groups[ro_key] = [i, i, ro[1]]
        g[1] = i
        if ents:
            self._read_done(cs, ents, i)

    def _acc(self, cs, stmt, loops, env, label):
        t_out, t_src = self.tm[stmt.out.tensor], self.tm[stmt.src.tensor]
        ro = self._region(stmt.out, loops, t_out, env)
        rs = self._region(stmt.src, loops, t_src, env)
        if ro is None or rs is None:
            return
        slot = ("acc", stmt.out.tensor, ro[0])
        waits = []
        prev = self._writers(cs, t_out.name, ro)
        for ent in prev:
            waits.append((ent[2], 0.0))
        waits.append(self.sched.slot_wait(cs.slot_free.pop(slot, ())))
        eng = self._evac_engine()
        drained = self._drain(cs, t_src.name, rs, eng, 0, waits, label)
        for i in drained:
            self._write(cs, t_out.name, ro, i, slot)

    def _op(self, cs, stmt, loops, env, label):
        tm = self.tm
        prep = self.prep.get(label)
        if prep is None:
            k = op_kind(stmt.kind)
            prep = self.prep[label] = (
                _regioner(_geometry(stmt.out, loops, tm[stmt.out.tensor])),
                tuple((a, _regioner(_geometry(a, loops, tm[a.tensor]))) for a in stmt.inputs),
                self.work_of(stmt), k is not None and k.per_output, tm[stmt.out.tensor].dtype)
        fo, fins, work, per_output, dtype = prep
        ro = fo(env)
        if ro is None:
            return
        waits, ents, regs = [], [], []
        for a, f in fins:
            r = f(env)
            if r is None:
                return
            regs.append((a, r))
        first_engine = work[0][0]
        for a, r in regs:
            if a.tensor in self.mm_out and self._groups_in(cs, a.tensor, r):
                for i in self._drain(cs, a.tensor, r, first_engine, 0, [], label):
                    waits.append((i, 0.0))
                continue
            for ent in self._writers(cs, a.tensor, r):
                ents.append(ent)
                lag = ent_lag(self, ent)
                waits.append((ent[2], lag))
        slot = self._slot(cs, stmt, stmt.out.tensor, loops)
        waits.append(self.sched.slot_wait(cs.slot_free.get(slot, ())))
        r0 = ro if per_output else regs[0][1]  # the elements a pass covers
        n = math.prod(e - s for s, e in zip(*r0))
        i = -1
        for engine, passes in work:
            if engine == "tensor":
                engine = "tensor"
                dur = self.c.te_cycle * max(self.c.mm_init, 128) * -(-n // (128 * 128))
            else:
                dur = self._engine_time(engine, n, passes, dtype)
            i = self.sched.add(cs.q(engine, engine), dur, waits, label=label)
            waits = [(i, 0.0)]
        self._read_done(cs, ents, i)
        cs.slot_free.pop(slot, None)  # after its own reads (an op may read its output's buffer)
        self._write(cs, stmt.out.tensor, ro, i, slot)
        cs.execs[label] = cs.execs.get(label, 0) + 1


def ent_lag(run: _Run, ent) -> float:
    """The latency after a writer's end before its tile can be read: the TE fill for a matmul."""
    return run.c.te_fill if run.sched.kind[ent[2]] == "tensor" else 0.0


def _chunks(reg, chunk):
    """The sub-regions (starts, ends) of ``reg`` that a chunked load moves, one per transfer."""
    if not chunk:
        return [reg]
    axes = []
    for a, (s, e) in enumerate(zip(*reg)):
        c = chunk[a] if a < len(chunk) else 0
        if not c:
            axes.append([(s, e)])
        else:
            axes.append([(x, min(e, x + c)) for x in range(s, e, c)])
    out = [((), ())]
    for opts in axes:
        out = [(st + (a,), en + (b,)) for st, en in out for a, b in opts]
    return out


# ---------------------------------------------------------------------------------------------
# figures of one run, and the extrapolation


def _figures(run: _Run, W_P: float, Q_BW: float, Q: int, bw_core: float) -> dict[str, float]:
    """Additive figures of one run: makespan, busy per engine (critical core), counts, gap parts."""
    s = run.sched
    if s.arrays is not None:
        return _figures_arrays(run, W_P, Q_BW, bw_core)
    out: dict[str, float] = {"T": s.makespan, "serial": sum(map(_sub, s.end, s.start))
                             + run.latency, "dma_bytes": float(run.dma_bytes)}
    for k, n in s.counts().items():
        out["n." + k] = float(n)
    # the busiest core
    by_core: dict[int, list[int]] = {}
    qcore = _queue_cores(run)
    cores_used = {qcore.get(q, 0) for q in range(len(s.queues))}
    if len(cores_used) == 1 and len(s):  # one core: every instruction is on it
        crit, mine = cores_used.pop(), None
    else:
        for i, q in enumerate(s.queue):
            by_core.setdefault(qcore.get(q, 0), []).append(i)
        crit = max(by_core, key=lambda c: max(s.end[i] for i in by_core[c])) if by_core else 0
        mine = set(by_core.get(crit, []))
    sub = _Sub(s, mine)
    for k, v in sub.busy().items():
        out["busy." + k] = v
    ref = "tensor" if W_P >= Q_BW and out.get("n.tensor") else "dma"
    out["ref_tensor"] = 1.0 if ref == "tensor" else 0.0

    def cause_of(i, gap):
        p, lag = s.pred[i], s.lag[i]
        fixed = min(gap, lag) if s.why[i] == tl.DEP else 0.0
        rest = gap - fixed
        kind = s.kind[p] if p >= 0 else ""
        if kind in ("dma", "tensor") and kind != s.kind[i]:
            c = "no_overlap"
        elif kind in ("vector", "scalar", "gpsimd"):
            c = "slower_engine"
        elif kind == s.kind[i] == "dma":
            c = "fixed_cost"
        else:
            c = "no_overlap"
        return (("fixed_cost", fixed), (c, rest))

    first, busy, post, idle = tl.idle_causes(sub, ref, cause_of)
    return _gap(run, out, ref, crit, first, busy, post, idle, W_P, Q_BW, bw_core)


def _queue_cores(run: _Run) -> dict[int, int]:
    """queue id -> the core it runs on."""
    return {qid: cs.core for cs in run.cores.values() for qid in cs.queues.values()}


def _gap(run, out, ref, crit, first, busy, post, idle, W_P, Q_BW, bw_core) -> dict[str, float]:
    """The gap's parts into ``out`` from the reference engine's idle time (idle_causes)."""
    gap = {c: 0.0 for c in CAUSES}
    gap["fixed_cost"] = first + post
    for c, t in idle.items():
        gap[c] = gap.get(c, 0.0) + t
    if ref == "tensor":
        gap["te_underfill"] = busy - W_P
    else:
        B = run.dma_bytes_core.get(crit, 0)
        dma_peak = run.c.dma_engine_bw * run.c.dma_engines
        gap["small_transfers"] = busy - B / dma_peak
        gap["dma_rate"] = B / dma_peak - B / bw_core
        gap["extra_bytes"] = B / bw_core - Q_BW
    for c, t in gap.items():
        out["gap." + c] = t
    return out


def _figures_arrays(run: _Run, W_P: float, Q_BW: float, bw_core: float) -> dict[str, float]:
    """:func:`_figures` from the Scheduler's numpy arrays (a compiled walk's run): the same
    figures, the same sums in the same order, vectorised."""
    import numpy as np

    s = run.sched
    a = s.arrays
    start, end, queue = a["start"], a["end"], a["queue"]
    n = len(queue)
    kinds = list(dict.fromkeys(s.kinds))
    qk = np.array([kinds.index(k) for k in s.kinds], np.int64)
    code = qk[queue]  # the kind of each instruction
    dur = end - start
    out: dict[str, float] = {"T": float(end.max()) if n else 0.0,
                             "serial": (float(np.cumsum(dur)[-1]) if n else 0) + run.latency,
                             "dma_bytes": float(run.dma_bytes)}
    for k, m in zip(kinds, np.bincount(code, minlength=len(kinds)).tolist()):
        if m:
            out["n." + k] = float(m)
    qc = _queue_cores(run)
    core = np.array([qc.get(q, 0) for q in range(len(s.queues))], np.int64)[queue] if n else queue
    used, first_at = np.unique(core, return_index=True)
    mine = np.ones(n, bool)
    crit = int(used[0]) if len(used) else 0
    if len(used) > 1:  # the first core (by its first instruction) of those ending last
        order = used[np.argsort(first_at, kind="stable")]
        last = [float(end[core == c].max()) for c in order]
        crit = int(order[last.index(max(last))])
        mine = core == crit
    span = float(end[mine].max()) if mine.any() else 0.0
    for j, k in enumerate(kinds):
        sel = mine & (code == j) & (end > start)
        if sel.any():
            out["busy." + k] = tl.union_of(start[sel], end[sel])
    ref = "tensor" if W_P >= Q_BW and out.get("n.tensor") else "dma"
    out["ref_tensor"] = 1.0 if ref == "tensor" else 0.0
    rc = kinds.index(ref) if ref in kinds else -1
    idx = np.flatnonzero(mine & (code == rc) & (end > start))
    first, busy, post, at, gaps = tl.idle_of(start, end, idx, span)
    # the causes of each idle stretch (cause_of of _figures), summed per cause in visiting order
    p = a["pred"][at]
    fixed = np.where(a["why"][at] == tl.DEP, np.minimum(gaps, a["lag"][at]), 0.0)
    rest = gaps - fixed
    kp = np.where(p >= 0, code[np.maximum(p, 0)], -1)  # the kind the stretch waited for
    of = {k: j for j, k in enumerate(kinds)}
    is_ = lambda *ks: np.isin(kp, [of[k] for k in ks if k in of])  # noqa: E731
    # 0 fixed_cost, 1 no_overlap, 2 slower_engine (cause_of's rules, in its order)
    cause = np.where(is_("dma", "tensor") & (kp != rc), 1,
                     np.where(is_("vector", "scalar", "gpsimd"), 2,
                              np.where(is_("dma") & (ref == "dma"), 0, 1)))
    vals = np.empty(2 * len(at))
    vals[0::2], vals[1::2] = fixed, rest
    which = np.zeros(2 * len(at), np.int64)
    which[1::2] = cause
    idle: dict[str, float] = {}
    met, first_at = np.unique(which, return_index=True)
    for c in met[np.argsort(first_at)].tolist():
        idle[("fixed_cost", "no_overlap", "slower_engine")[c]] = float(np.cumsum(vals[which == c])[-1])
    return _gap(run, out, ref, crit, first, busy, post, idle, W_P, Q_BW, bw_core)


class _Sub:
    """A view of a Scheduler's instructions on one core (for the busy time and gap); ``keep``
    None: all of them."""

    def __init__(self, s: tl.Scheduler, keep: set[int] | None):
        if keep is None:
            idx, self.kind = range(len(s.kind)), s.kind
        else:
            idx = sorted(keep)
            self.kind = [s.kind[i] if i in keep else "" for i in range(len(s.kind))]
        self.start, self.end = s.start, s.end
        self.pred, self.lag, self.why = s.pred, s.lag, s.why
        self.makespan = s.makespan if keep is None else max((s.end[i] for i in idx), default=0.0)
        self._idx = idx
        self._all = s if keep is None else None

    def busy(self) -> dict[str, float]:
        if self._all is not None:
            return self._all.busy()
        out: dict[str, list] = {}
        for i in self._idx:
            if self.end[i] > self.start[i]:
                out.setdefault(self.kind[i], []).append((self.start[i], self.end[i]))
        return {k: tl.union_length(v) for k, v in out.items()}


def _size(kernel: Kernel, keep: dict) -> int:
    """Instructions of a run of the nest with loop ``id`` -> iterations ``keep`` (others whole),
    counting every execution (edge tiles past a tensor's end included: an upper bound)."""
    total = 0
    for stmt, ls in kernel.statements():
        n = 1
        for l in ls:
            n *= keep.get(id(l), l.trips)
        ch = 1
        if isinstance(stmt, Load) and stmt.chunk:
            t = kernel.tensor_map[stmt.tile.tensor]
            for a, c in enumerate(stmt.chunks(t.partition_axis)):
                if c:
                    ch *= -(-full_extent(stmt.tile, a, ls, t) // c)
        total += n * (ch + (1 if isinstance(stmt, Store) else 0))
    return total


def _plan(kernel: Kernel, budget: int) -> list[Loop]:
    """The loops to cut (outermost first, in program order) so the corner runs stay within
    ``budget`` instructions."""
    loops = [n for n, _ in _walk_loops(kernel.body)]
    keep = {id(l): l.trips for l in loops}
    cut: list[Loop] = []
    while True:
        j = len(cut)
        if _size(kernel, keep) * (2 ** j) <= budget:
            return cut
        # outermost first: an outer iteration holds the whole inner structure, so cutting it keeps
        # the balance of the stages inside (cutting an inner loop first can move the bottleneck)
        # a cut doubles the corner runs: one that makes the runs' total larger is not taken (a loop
        # of 6 or 7 trips cut to 4 and 5 costs more than it saves; a kernel of many short loops
        # ran 2^j corner runs, each about as long as the whole nest): the runs never cost more
        # than the whole nest once
        total = _size(kernel, keep) * (2 ** j)
        for l in (l for l in loops if not l.spmd and keep[id(l)] > KEEP + 1):
            trips, keep[id(l)] = keep[id(l)], KEEP
            if _size(kernel, keep) * (2 ** (j + 1)) <= total:
                cut.append(l)
                break
            keep[id(l)] = trips
        else:
            return cut


def _walk_loops(body):
    for n in body:
        if isinstance(n, Loop):
            yield n, None
            yield from _walk_loops(n.body)


def timeline(kernel: Kernel, hw, *, dtype: str, W_P: float, Q_BW: float, Q: int, work_of=None,
             budget: int = BUDGET, compiled: bool | None = None) -> Timeline:
    """The predicted run of ``kernel`` on one NeuronCore (each physical core of a split kernel on
    its own engines): see the module docstring. ``W_P``, ``Q_BW``: the roofline's two times (s),
    ``Q``: bytes as written, for the gap's reference; ``work_of(stmt)``: (engine, passes) of an op
    statement (default its kind's); ``compiled``: expand and schedule each run in the compiled
    walk (:mod:`loopsim.targets.neuron.walk`, numba; the same schedule), True always, False
    never, None (default) for a run of :data:`COMPILED_FROM` instructions or more."""
    from loopsim.count import lnc

    if lnc.split_loop(kernel) is not None:
        kernel = lnc.cores_nest(kernel)
    c, used, notes = costs(hw, dtype)
    work_of = work_of or default_work
    bw_core = hw.bw / hw.physical_cores
    cut = _plan(kernel, budget)
    if len(cut) > MAX_CUT:  # 2^len(cut) corner runs: no timeline (the bounds stand)
        raise HardwareError(f"kernel {kernel.name}: the timeline would cut {len(cut)} loops "
                            f"(2^{len(cut)} corner runs; at most {MAX_CUT} are cut)")
    base = tuple(KEEP for _ in cut)
    samples: dict[tuple[int, ...], dict[str, float]] = {}
    biggest = None
    sim = 0
    for mask in range(1 << len(cut)):
        corner = tuple(KEEP + (mask >> i & 1) for i in range(len(cut)))
        keep = {id(l): n for l, n in zip(cut, corner)}
        big = compiled if compiled is not None else _size(kernel, keep) >= COMPILED_FROM
        run = _Run(kernel, hw, dtype, c, keep, work_of, big).run()
        notes += sorted(run.notes - set(notes))
        samples[corner] = _figures(run, W_P, Q_BW, Q, bw_core)
        sim += len(run.sched)
        if biggest is None or len(run.sched) > len(biggest.sched):
            biggest = run
    target = tuple(l.trips for l in cut)
    fig = tl.multilinear(samples, base, target) if cut else samples[()]
    T = fig["T"]
    extra = _work_busy(kernel, hw, notes)
    for k, v in extra.items():
        fig["busy." + k] = fig.get("busy." + k, 0.0) + v
        fig["serial"] += v
    busy = tuple((k, fig["busy." + k]) for k in ENGINE_ORDER if fig.get("busy." + k, 0.0) > 0)
    top = max((v for _, v in busy), default=0.0)
    clamped = (bool(cut) or bool(extra)) and T < top
    if clamped:
        # a cut inner loop can shift the bottleneck (its loads stay whole while its compute
        # shrinks), so the makespan's extrapolation can fall below an engine's busy time, which is
        # exact (a sum of durations): the kernel takes at least that. Engine work outside the
        # statements adds to its engine's busy time the same way.
        top_engine = max(busy, key=lambda b: b[1])[0]
        why = "with the engine work outside the statements" if extra.get(top_engine) else \
            "a cut loop moved the bottleneck"
        notes.append(f"the {'extrapolated ' if cut else ''}makespan {T:.4g} s fell below the "
                     f"{top_engine} engine's busy time ({why}): T is the busy time")
        T = fig["T"] = top
        rate = ("te_underfill",) if fig.get("ref_tensor", 0.0) >= 0.5 else \
            ("small_transfers", "dma_rate", "extra_bytes")
        for c in CAUSES:
            if c not in rate:
                fig["gap." + c] = 0.0
        waited = "slower_engine" if extra.get(top_engine) and top_engine in ("vector", "scalar", "gpsimd") \
            else "no_overlap"
        fig["gap." + waited] = T - max(W_P, Q_BW) - sum(fig.get("gap." + c, 0.0) for c in rate)
    counts = tuple((k, int(round(fig["n." + k]))) for k in ENGINE_ORDER if fig.get("n." + k, 0.0) >= 0.5)
    ref = "tensor" if fig.get("ref_tensor", 0.0) >= 0.5 else "dma"
    T_best = max(W_P, Q_BW)
    gap = tuple((k, fig.get("gap." + k, 0.0)) for k in CAUSES if abs(fig.get("gap." + k, 0.0)) > T * 1e-9) \
        if T >= T_best else ()
    if biggest.sched.arrays is not None:  # a compiled run: its path compiled too
        from loopsim.targets.neuron import walk

        share = walk.path_share(biggest.sched)
    else:
        share: dict[str, float] = {}
        for i in biggest.sched.critical_path():
            share[biggest.sched.kind[i]] = share.get(biggest.sched.kind[i], 0.0) + \
                biggest.sched.end[i] - biggest.sched.start[i]
    critical = max(share, key=share.get) if share else ref
    if clamped:  # the run's critical path is the cut run's; the whole kernel's is the busiest engine
        critical = max(busy, key=lambda b: b[1])[0]
    return Timeline(kernel.name, T, T_best, fig["serial"], busy, counts, gap, ref, critical,
                    not cut, len(samples), sim, tuple((l.var, l.trips, KEEP) for l in cut), used,
                    tuple(dict.fromkeys(notes)), biggest.sched)


def _work_busy(kernel: Kernel, hw, notes: list) -> dict[str, float]:
    """Seconds each engine of one core spends on the kernel's :class:`loopsim.ir.ops.EngineWork`
    (calls outside its statements: no place in the nest, so no instructions; the engine is busy
    that much longer, :func:`engines.work_seconds` as the ceiling counts it, an even share per
    core of a split kernel). The interconnect's bytes are not on a NeuronCore engine: left out."""
    from loopsim.count.lnc import kernel_cores

    out: dict[str, float] = {}
    cores = kernel_cores(kernel)
    for w in getattr(kernel, "work", ()):
        if w.engine == "link":
            notes.append(f"{w.call} at {w.where}: link bytes are not on the timeline")
            continue
        try:
            t = work_seconds(hw, w, per_core=True) / cores
        except (HardwareError, KeyError):
            continue  # not costed: the ceilings' note says so
        out[w.engine] = out.get(w.engine, 0.0) + t
    return out


def transfers_floor(kernel: Kernel, hw) -> tuple[float, str] | None:
    """Seconds the core's DMA engines take at least for the kernel's transfers at the rate their
    sizes reach (bytes / (dma.core_bw x the [S10] figure's efficiency), the busiest core of a split
    kernel), which the timeline's DMA pipe cannot beat; and a line saying so. None without a DMA
    bandwidth (or with measured roofs: the measured BW already is the memory side as achieved)."""
    if not hw.dma_bw or hw.roofs == "measured":
        return None
    from loopsim.targets.neuron import dma

    d = dma.report(kernel, hw)
    if d.estimate_s is None:
        return None
    return d.estimate_s, (f"DMA transfers at the rate their sizes reach ([S10] figure, bytes per "
                          f"partition): {d.transfers:,} transfers, {d.bytes:,} bytes")


def attach(stage, op_map, counts, hw, dtype: str, times: dict, details: dict, *,
           run: bool = True, exact: bool = False) -> Timeline | None:
    """The timeline of one kernel of a program, added to a verdict's ``times``/``details`` as
    ``timeline`` (the pipeline's one call), beside ``dma_transfers``, the floor no timeline beats
    (:func:`transfers_floor`). ``run=False``: the floor only. None, with no ``timeline`` added,
    when the sheet lacks what it needs (an op on an engine without a roof: the op's own step says
    so), and with measured roofs (a calibrated sheet's roofs are the achieved times; the
    timeline's constants are not fitted). ``exact``: every instruction walked (:data:`EXACT`
    budget; compiled past :data:`COMPILED_FROM`), no loop cut and extrapolated."""
    kernel = stage.kernel
    if hw.roofs == "measured":  # measured roofs already are the kernel's time as achieved (the
        return None             # DMA ceiling steps aside too); the timeline's constants are not fitted
    fl = transfers_floor(kernel, hw)
    if fl is not None:
        times["dma_transfers"], details["dma_transfers"] = fl
    if not run:
        return None
    try:
        t = timeline(kernel, hw, dtype=dtype, W_P=counts.flops / hw.P(dtype),
                     Q_BW=counts.Q / hw.bw, Q=counts.Q, work_of=work_of_stage(stage, op_map),
                     budget=EXACT if exact else BUDGET)
    except HardwareError:
        return None
    # to 12 significant digits: the same schedule summed in another order must tie, not rank
    times["timeline"] = float(f"{max(t.T, fl[0] if fl else 0.0):.12g}")
    parts = ", ".join(f"{CAUSE_SHORT[k]} {v / t.T:.0%}" for k, v in t.gap if abs(v) >= 0.005 * t.T) if t.T else ""
    details["timeline"] = t.summary() + (f"; the gap to T_best: {parts}" if parts else "")
    return t


CAUSE_SHORT = {"fixed_cost": "fixed cost", "no_overlap": "no overlap", "slower_engine": "slower engine",
               "te_underfill": "Tensor Engine under-fill", "small_transfers": "small transfers",
               "dma_rate": "DMA peak below BW", "extra_bytes": "extra bytes"}
