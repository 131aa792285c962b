"""The one pipeline: a spec -> a program -> one :class:`Analysis` that every command renders.

A plain ``[nest]`` spec is a program of one stage; a spec with ``[ops]`` is a schedule of kernels.
Both go down the same path: each stage is counted on its own from an empty SBUF (as written, or
replayed under LRU/OPT), its lower ceilings computed, its engine work counted per execution, and
its verdict taken as the slowest of every roof and ceiling (:mod:`loopsim.model.verdict`). The LNC core
split, ``[parallel]`` and the scope check are applied here and nowhere else.

Units: FLOPs, bytes (Python ints), seconds, FLOP/s, bytes/s.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Mapping

from loopsim.targets import ceilings as ceil_mod
from loopsim.count import lnc
from loopsim.frontends import spec as spec_mod
from loopsim.model import verdict as verdict_mod
from loopsim.count.counts import Counts, Residency, TensorCounts, capacity_units, count, kernel_dtype, \
    live_buffers
from loopsim.model.entitle import Entitlement
from loopsim.base.errors import InputError
from loopsim.ir.kernel import Matmul
from loopsim.frontends.program import Intermediate, Program, Stage, is_program, program_from
from loopsim.count.stages import count_stage
from loopsim.count.stages import check_scope as program_check_scope


# ---------------------------------------------------------------------------------------------
# parse


def load(ref: str, sets: Mapping[str, int] | None = None, *, lnc_cores: int | None = None,
         split: str | None = None, buffers: tuple[tuple[str, int], ...] | None = None,
         kernel_args: Mapping | None = None) -> Program:
    """Read a spec (a bundled name or a path) and bind its parameters: a :class:`Program`.

    ``lnc_cores``/``split``: run a single nest on that many physical cores, splitting loop
    ``split`` (default the spec's ``[lnc]`` loop, else the token loop); ``buffers`` replaces the
    nest's load buffer counts (``(("*", 2),)`` double-buffers every load inside a loop).
    ``ref`` may be a kernel reference ``PATH.py::FUNCTION`` (see :func:`read`; it EXECUTES the
    file), its inputs in ``kernel_args`` (``args``/``kwargs``/``grid``, :mod:`loopsim.frontends.nki.load`).
    """
    sf = read(ref, kernel_args, sets)
    prog = build(sf, spec_mod.bind_params(sf, sets or {}), lnc_cores=lnc_cores, split=split,
                 buffers=buffers)
    return replace(prog, bundled="::" not in ref and spec_mod.is_bundled(ref))


def read(ref: str, kernel_args: Mapping | None = None, known: Mapping[str, int] | None = None):
    """A spec as read (:func:`loopsim.frontends.spec.read`), or for ``PATH.py::FUNCTION`` a spec file
    standing for that kernel (:func:`loopsim.frontends.nki.ref.spec_file`: parsed, not run; ``known`` gives
    values to dimension names of its ``--arg`` shapes). :func:`build` traces it, EXECUTING it."""
    if isinstance(ref, str) and "::" in ref:  # only then is the NKI front end imported
        from loopsim.frontends.nki import ref as nki_ref

        if nki_ref.is_reference(ref):
            return nki_ref.spec_file(ref, kernel_args, known)
    return spec_mod.read(ref)


def build(sf, params: Mapping[str, int], *, lnc_cores: int | None = None, split: str | None = None,
          buffers: tuple[tuple[str, int], ...] | None = None) -> Program:
    """A read spec bound to ``params`` (see :func:`load`)."""
    if sf.tracer is not None:  # a source that is code (PATH.py::FUNCTION): traced, EXECUTING it
        traced = sf.tracer(sf, params)
        if isinstance(traced, Program):
            if lnc_cores is not None or split is not None:
                raise InputError(f"--lnc/--split: not supported for {sf.path}, whose kernel keeps "
                                 "tensors on chip between ops (a program)")
            return traced if buffers is None else replace(traced, stages=tuple(
                replace(s, kernel=replace(s.kernel, buffers=buffers)) for s in traced.stages))
        return _single(traced, lnc_cores, split, buffers, None)
    if is_program(sf):
        for flag, v in (("--lnc", lnc_cores), ("--split", split)):
            if v is not None:
                raise InputError(f"{flag}: not supported for a spec with several ops ({sf.path}); "
                                 "each of its kernels runs on one physical core")
        if "parallel" in sf.data:
            raise InputError(f"{sf.where('parallel')}: not supported for a spec with several ops; "
                             "split a single-nest spec across chips")
        prog = program_from(sf, params)
        if buffers is not None:
            prog = replace(prog, stages=tuple(replace(s, kernel=replace(s.kernel, buffers=buffers))
                                              for s in prog.stages))
        return prog
    return _single(spec_mod.kernel_from(sf, params), lnc_cores, split, buffers,
                   parallel_from(sf))


def parallel_from(spec_file) -> ceil_mod.Parallel | None:
    """``[parallel] chips = 2, over = "K"`` of a spec file (None when absent), checked by the one
    spec validator (:func:`loopsim.frontends.spec.parallel`)."""
    from loopsim.frontends.spec import parallel

    p = parallel(spec_file.path, spec_file.data)
    return None if p is None else ceil_mod.Parallel(*p)


def _single(kernel, lnc_cores, split, buffers, parallel) -> Program:
    """One nest as a program of one stage, with the buffer counts and core split asked for."""
    if buffers is not None:
        kernel = replace(kernel, buffers=buffers)
    if split is not None and lnc_cores is None:
        kernel = lnc.with_split(kernel, 2, split)
    elif lnc_cores is not None:
        kernel = lnc.with_split(kernel, lnc_cores, split)
    return Program.single(kernel, parallel)


# ---------------------------------------------------------------------------------------------
# analyze


@dataclass(frozen=True, slots=True)
class StageResult:
    """One kernel of the program: its counts, ceilings, engine steps and verdict."""

    stage: Stage
    counts: Counts
    ceilings: ceil_mod.Ceilings
    steps: tuple  # engine steps of the stage's ops (the target's timeline)
    verdict: verdict_mod.Verdict
    sbuf_buffers: tuple[tuple[str, int], ...]  # (tensor, cost) live at the as-written peak
    timeline: object = None  # loopsim.targets.neuron.timeline.Timeline (None: roofline model)

    @property
    def name(self) -> str:
        return self.stage.name


@dataclass(frozen=True, slots=True)
class Analysis:
    """Everything loopsim says of one tiling on one sheet.

    ``counts``: W, per-tensor HBM bytes and r over the whole program; ``entitlement``: the flat
    roofline (T_best, T_worst); ``verdict``: the attainable time T (max over every roof and
    ceiling), its ``limit``, and whether the kernel can run; ``stages``: per kernel of the
    schedule (one for a single nest); ``steps``: ops against their engines; ``intermediates``:
    HBM crossings of tensors passed between ops; ``lower_bound``: the I/O lower bound
    (:mod:`loopsim.count.bound`) for a matmul-shaped single nest, else None.
    """

    program: Program
    hardware: object
    policy: str
    dtype: str
    counts: Counts
    entitlement: Entitlement
    stages: tuple[StageResult, ...]
    intermediates: tuple[Intermediate, ...]
    lower_bound: object
    verdict: verdict_mod.Verdict

    # the verdict, spelled out
    @property
    def T(self) -> float:
        """Attainable time, seconds."""
        return self.verdict.T

    @property
    def limit(self) -> str:
        return self.verdict.limit

    @property
    def times(self) -> dict[str, float]:
        return self.verdict.time_map

    @property
    def feasible(self) -> bool:
        return self.verdict.feasible

    @property
    def infeasible_reasons(self) -> tuple[str, ...]:
        return self.verdict.reasons

    # the counts, spelled out
    @property
    def W(self) -> int:
        return self.counts.flops

    @property
    def Q(self) -> int:
        return self.counts.Q

    @property
    def params(self) -> tuple[tuple[str, int], ...]:
        return self.program.params

    @property
    def name(self) -> str:
        return self.program.name

    @property
    def steps(self) -> tuple:
        return tuple(s for st in self.stages for s in st.steps)

    @property
    def ceilings(self) -> ceil_mod.Ceilings | None:
        """The lower ceilings of a single nest (None for a schedule: see ``stages``)."""
        return self.stages[0].ceilings if len(self.stages) == 1 else None

    @property
    def residency(self) -> Residency:
        """The SBUF use of the kernel that needs the most (per partition on Trainium)."""
        return self.counts.residency

    @property
    def sbuf_peak_bytes(self) -> int:
        return self.counts.residency.peak_bytes

    @property
    def rate(self) -> float:
        """Attainable rate W / T, FLOP/s (0 when W = 0)."""
        return self.W / self.T if self.T else math.inf

    def rank_key(self) -> tuple:
        return rank_key(self)


def rank_key(a: Analysis) -> tuple:
    """:func:`loopsim.model.verdict.rank_key` of the analysis."""
    return verdict_mod.rank_key(a.T, a.feasible, a.Q, a.sbuf_peak_bytes,
                                transfers=verdict_mod.transfers_s(a.verdict),
                                instructions=a.counts.instructions)


def program_dtype(prog: Program) -> str:
    """The dtype whose Tensor Engine roof applies to the program (fp32 wins, else the first
    matmul kernel's, else bf16)."""
    dts = [kernel_dtype(s.kernel) for s in prog.stages
           if any(isinstance(st, Matmul) for st, _ in s.kernel.statements())]
    return "fp32" if "fp32" in dts else (dts[0] if dts else "bf16")


def analyze(prog: Program, hw, *, policy: str = "as-written", sbuf_bytes: int | None = None,
            dtype: str | None = None, allow_scope_mismatch: bool = False,
            link_bw: int | None = None, trace=None, replay: bool = False,
            strict: bool = False, model: str = "timeline") -> Analysis:
    """Count, entitle and judge every kernel of ``prog`` on sheet ``hw``.

    ``policy``: as-written, lru or opt; ``sbuf_bytes``: the SBUF capacity in bytes (default the
    sheet's); ``dtype``: the Tensor Engine roof (default the kernel's); ``link_bw``: bytes/s of the
    interconnect for a ``[parallel]`` spec (default the sheet's); ``trace``: a prebuilt trace of a
    single unsplit nest; ``replay``: count as written by replaying the trace even where the
    closed form claims the nest (the two agree; the replay is the check); ``strict``: a sheet
    lacking what a ceiling needs (an evacuation engine) is an error, not a note; ``model``:
    ``timeline`` (default) adds the engine timeline's predicted time to the verdict (as written
    only), ``roofline`` keeps the bounds alone, ``floor`` adds only the timeline's cheap floor
    (the DMA transfers at the rate their sizes reach: what the search ranks by before it runs
    timelines).
    """
    cap = capacity_units(hw, sbuf_bytes)
    dt = dtype or program_dtype(prog)
    where = prog.path or prog.name
    results = []
    for st in prog.stages:
        results.append(_stage(prog, st, hw, policy=policy, capacity=cap, dtype=dt,
                              allow=allow_scope_mismatch, link_bw=link_bw, trace=trace, where=where,
                              replay=replay, strict=strict, model=model))
    total = results[0].counts if prog.is_single else _sum_counts(prog, results, policy)
    e = Entitlement(total.flops, total.Q, hw.P(dt), hw.bw)
    lb = None
    if prog.is_single:
        from loopsim.count.bound import lower_bound

        lb = lower_bound(prog.stages[0].kernel, hw, sbuf_bytes)
    v = results[0].verdict if len(results) == 1 else verdict_mod.in_sequence([r.verdict for r in results])
    return Analysis(prog, hw, policy, dt, total, e, tuple(results), _intermediates(prog, total), lb, v)


def _stage(prog: Program, st: Stage, hw, *, policy, capacity, dtype, allow, link_bw, trace,
           where, replay, strict, model="timeline") -> StageResult:
    k = st.kernel
    reasons = [f"tile: {r}" for r in hw.cannot_run(k)]
    if prog.is_single:
        lnc.check_scope(k, hw, allow=allow)
        if lnc.split_loop(k) is not None:
            c = lnc.count_split(k, policy=policy, capacity=capacity, target=hw)
        else:
            c = count(k, policy=policy, capacity=capacity, target=hw, trace=trace,
                      replay=replay)
    else:
        program_check_scope(hw, allow=allow)
        c = count_stage(st, hw, policy=policy, capacity=capacity)
    ceil = hw.ceilings(k, dtype=dtype, parallel=prog.parallel if prog.is_single else None,
                       link_bw=link_bw, strict=strict)
    steps = hw.steps(st, prog.op_map, prog.tensor_map, c, dtype, where) if st.ops else ()
    # as written, the buffers live at the peak (one core's program for a split kernel, the
    # program whose peak the residency reports)
    per_core = lnc.cores_nest(k) if prog.is_single and lnc.split_loop(k) is not None else k
    buffers = live_buffers(per_core, hw)[1] if policy == "as-written" else ()
    dma = hw.dma_time(k, c, exact=prog.is_single and policy == "as-written")
    added: tuple[dict, dict] = ({}, {})
    tline = None
    if model in ("timeline", "exact", "floor") and policy == "as-written":  # the predicted time
        tline = hw.predict(st, prog.op_map, c, dtype, *added, run=model != "floor",
                           exact=model == "exact")
    res = c.residency
    if not res.fits:
        unit = " per partition" if res.lanes else ""
        top = ", ".join(f"{n} {b:,}" for n, b in buffers[:3])
        reasons.append(f"SBUF: needs {res.peak_cost:,} bytes{unit}, has {res.capacity_cost:,}"
                       + (f"; largest buffers: {top} bytes{unit}" if top else ""))
    if not ceil.psum.fits:
        reasons.append(f"PSUM: {ceil.psum.verdict()}")
    label = "" if prog.is_single else f"kernel {st.name}: "
    reasons = [label + r for r in reasons]
    v = verdict_mod.kernel_verdict(c.flops, c.Q, ceil, steps, hw, dtype, reasons, dma=dma,
                                   added=added)
    return StageResult(st, c, ceil, steps, v, buffers, tline)


def _sum_counts(prog: Program, results, policy: str) -> Counts:
    """A schedule's totals: W and per-tensor bytes summed over its kernels; compulsory Q is each
    program input read once and each program output written once."""
    tensors = []
    for t in prog.tensors:
        per = [r.counts.tensor_map[t.name] for r in results if t.name in r.counts.tensor_map]
        tensors.append(TensorCounts(t.name, t.bytes, sum(x.read_bytes for x in per),
                                    sum(x.write_bytes for x in per), t.output))
    worst = max((r.counts.residency for r in results), key=lambda x: x.peak_cost)
    if any(not r.counts.residency.fits for r in results):
        worst = max((r.counts.residency for r in results if not r.counts.residency.fits),
                    key=lambda x: x.peak_cost - x.capacity_cost)
    tm = prog.tensor_map
    compulsory = sum(tm[t].bytes for t in prog.inputs) + sum(t.bytes for t in prog.tensors if t.output)
    return Counts(prog.name, policy, sum(r.counts.flops for r in results),
                  sum(r.counts.instructions for r in results), tuple(tensors), compulsory,
                  replace(worst, needed_cost=max(r.counts.residency.needed_cost for r in results)))


def _intermediates(prog: Program, total: Counts) -> tuple[Intermediate, ...]:
    tc = total.tensor_map
    out = []
    for name in prog.intermediates:
        producer = next(o.name for o in prog.ops if o.out == name)
        consumers = tuple(o.name for o in prog.ops if name in o.inputs)
        k = prog.stage_of(producer).name
        out.append(Intermediate(name, tc[name].bytes, tc[name].write_bytes, tc[name].read_bytes,
                                producer, consumers,
                                all(prog.stage_of(c).name == k for c in consumers)))
    return tuple(out)


def analyze_kernel(kernel, hw, **kw) -> Analysis:
    """:func:`analyze` of one :class:`loopsim.ir.kernel.Kernel` (a program of one stage)."""
    parallel = kw.pop("parallel", None)
    return analyze(Program.single(kernel, parallel), hw, **kw)
