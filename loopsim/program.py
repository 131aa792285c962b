"""Programs: several ops, a schedule of kernels, and what each intermediate costs in HBM traffic.

A spec with an ``[ops]`` table is a program. Its ``[schedule]`` names the kernels in the order they
run and the ops each one fuses; each kernel has its own loop nest in ``[nest.<kernel>]``::

    [schedule]                 # unfused: three kernels     |  fused: one kernel
    up   = ["up"]              #                            |  mlp = ["up", "act", "down"]
    act  = ["act"]
    down = ["down"]

A kernel boundary writes every output of the kernel to HBM and the next kernel reads its inputs
from HBM: each kernel is counted on its own, starting with an EMPTY SBUF, and the counts are
summed. Within a kernel, a tensor an op produces and nothing stores lives only on chip; it crosses
HBM only if the replay evicts it before its last use (a spill). Per intermediate, the bytes
written and read across HBM and ``k = (written + read) / size`` therefore come from the replay
(or, as written, from the nest's loads and stores), never from the schedule.

W is the Tensor Engine's matmul FLOPs, as in the curriculum; the work of every other op is
entitled per step against its own engine (Vector / Scalar / GpSimd roofs from the sheet, elements
per second). Times are seconds, bytes are bytes, FLOPs are FLOPs.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Mapping

import numpy as np

from . import graph as graph_mod
from . import ops as ops_mod
from . import spec as spec_mod
from .counts import Counts, Residency, TensorCounts, check_tiles, count, live_peak
from .entitle import Entitlement, Overlap
from .errors import HardwareError, SpecError
from .ir import ACC, LOAD, PRODUCE, Kernel, Matmul, Tensor
from .report import Report, capacity_units, fmt_time, format_text, kernel_dtype


# ---------------------------------------------------------------------------------------------
# Loading


@dataclass(frozen=True, slots=True)
class Stage:
    """One kernel of the schedule: its name, the ops it fuses (in schedule order), its IR."""

    name: str
    ops: tuple[str, ...]
    kernel: Kernel


@dataclass(frozen=True, slots=True)
class Program:
    """A validated op graph and its schedule of kernels. ``graph``: networkx DiGraph (graph.py)."""

    name: str
    path: str
    params: tuple[tuple[str, int], ...]
    tensors: tuple[Tensor, ...]
    ops: tuple[graph_mod.OpNode, ...]
    inputs: tuple[str, ...]
    stages: tuple[Stage, ...]
    graph: object

    @property
    def op_map(self) -> dict[str, graph_mod.OpNode]:
        return {o.name: o for o in self.ops}

    @property
    def tensor_map(self) -> dict[str, Tensor]:
        return {t.name: t for t in self.tensors}

    @property
    def intermediates(self) -> tuple[str, ...]:
        """Tensors an op produces and another op reads (not program inputs or outputs)."""
        read = {t for o in self.ops for t in o.inputs}
        tm = self.tensor_map
        return tuple(o.out for o in self.ops if o.out in read and not tm[o.out].output)

    def stage_of(self, op: str) -> Stage:
        return next(s for s in self.stages if op in s.ops)


def is_program(sf: spec_mod.SpecFile) -> bool:
    """Whether a read spec describes several ops (has an ``[ops]`` table)."""
    return "ops" in sf.data


def load(name_or_path: str, sets: Mapping[str, int] | None = None) -> Program:
    """Read a program spec, bind its parameters and validate graph, schedule and nests."""
    sf = spec_mod.read(name_or_path)
    return program_from(sf, spec_mod.bind_params(sf, sets or {}))


def program_from(sf: spec_mod.SpecFile, params: Mapping[str, int]) -> Program:
    path = sf.path
    if "lnc" in sf.data:  # count_stage counts each kernel on one core
        raise SpecError(f"{path}: [lnc]: not supported for a spec with several ops; each of its "
                        "kernels runs on one physical core")
    tensors = spec_mod.parse_tensors(sf, params)
    tmap = {t.name: t for t in tensors}
    op_nodes, inputs = graph_mod.parse_ops(path, sf.data)
    g = graph_mod.build(path, op_nodes, inputs, tmap)
    schedule = _schedule(path, sf.data, op_nodes)
    producer = {o.out: o.name for o in op_nodes}
    stage_of = {op: k for k, names in schedule for op in names}
    position = {k: i for i, (k, _) in enumerate(schedule)}
    nests = sf.data.get("nest")
    stages = []
    for i, (kname, names) in enumerate(schedule):
        for op in names:  # a kernel may only read what earlier kernels (or itself) produced
            for t in op_nodes[_index(op_nodes, op)].inputs:
                if t in producer and position[stage_of[producer[t]]] > i:
                    raise SpecError(f"{path}: schedule.{kname} runs ops.{op}, which reads {t}, before "
                                    f"schedule.{stage_of[producer[t]]} produces it (ops.{producer[t]})")
        if not isinstance(nests, dict) or not isinstance(nests.get(kname), dict):
            raise SpecError(f"{path}: nest.{kname}.body: missing; each kernel of [schedule] needs "
                            f"its loop nest in [nest.{kname}] body = '''...'''")
        kernel = _stage_kernel(sf, params, kname, names, op_nodes, tensors, schedule[i + 1:])
        _check_nest(path, kname, kernel, [op_nodes[_index(op_nodes, o)] for o in names])
        stages.append(Stage(kname, tuple(names), kernel))
    name = sf.data["kernel"].get("name", Path(path).stem)
    return Program(str(name), path, tuple(params.items()), tensors, op_nodes, inputs, tuple(stages), g)


def _index(op_nodes, name: str) -> int:
    return next(i for i, o in enumerate(op_nodes) if o.name == name)


def _schedule(path: str, data: Mapping, op_nodes) -> list[tuple[str, list[str]]]:
    raw = data.get("schedule")
    if not isinstance(raw, dict) or not raw:
        raise SpecError(f"{path}: [schedule] must list the kernels in order, each with the ops it "
                        "fuses, like mlp = [\"up\", \"act\", \"down\"]")
    known = [o.name for o in op_nodes]
    seen: dict[str, str] = {}
    out = []
    for kname, names in raw.items():
        where = f"{path}: schedule.{kname}"
        if not kname.isidentifier():
            raise SpecError(f"{where}: kernel name must be a name (letters, digits, _)")
        if not isinstance(names, list) or not names or not all(isinstance(n, str) for n in names):
            raise SpecError(f"{where}={names!r} must be a non-empty list of op names")
        for n in names:
            if n not in known:
                raise SpecError(f"{where} names op {n!r}, which [ops] does not define; ops: {', '.join(known)}")
            if n in seen:
                again = "twice" if seen[n] == kname else f"again (also in schedule.{seen[n]})"
                raise SpecError(f"{where} names op {n} {again}; each op runs in exactly one kernel")
            seen[n] = kname
        out.append((kname, list(names)))
    missing = [n for n in known if n not in seen]
    if missing:
        raise SpecError(f"{path}: [schedule] leaves out op{'s' * (len(missing) > 1)} "
                        f"{', '.join(missing)}; every op must run in exactly one kernel")
    return out


def _stage_kernel(sf, params, kname: str, names, op_nodes, tensors, later) -> Kernel:
    """The IR of one kernel: the tensors its ops touch; outputs are what it produces that is a
    program output or read by a later kernel (a kernel boundary writes them to HBM)."""
    mine = [op_nodes[_index(op_nodes, n)] for n in names]
    touched = {t for o in mine for t in o.inputs} | {o.out for o in mine}
    read_later = {t for _, ns in later for n in ns for t in op_nodes[_index(op_nodes, n)].inputs}
    made = {o.out for o in mine}
    data = dict(sf.data)
    data["tensors"] = {}
    for t in tensors:
        if t.name in touched:
            entry = dict(sf.data["tensors"][t.name])
            entry["output"] = t.name in made and (t.output or t.name in read_later)
            data["tensors"][t.name] = entry
    data["nest"] = sf.data["nest"][kname]
    return spec_mod.kernel_from(spec_mod.SpecFile(sf.path, data, sf.text), params, name=kname)


def _check_nest(path: str, kname: str, kernel: Kernel, ops: list[graph_mod.OpNode]) -> None:
    """The nest computes exactly the kernel's ops: each op has statements of its kind writing its
    output from its inputs, each op input is on chip (loaded or made) before an op reads it."""
    where = f"{path}: nest.{kname}"
    by_out = {o.out: o for o in ops}
    ready: set[str] = set()
    seen_out: set[str] = set()
    for stmt, _ in kernel.statements():
        acc = stmt.accesses()
        if isinstance(stmt, Matmul) or isinstance(stmt, ops_mod.OpStatement):
            out = stmt.out.tensor
            ins = (stmt.stationary.tensor, stmt.moving.tensor) if isinstance(stmt, Matmul) else \
                tuple(a.tensor for a in stmt.inputs)
            skind = "matmul" if isinstance(stmt, Matmul) else stmt.kind
            op = by_out.get(out)
            if op is None:
                raise SpecError(f"{where}: {stmt.where()}: '{stmt}' writes {out}, which no op of "
                                f"schedule.{kname} ({', '.join(o.name for o in ops)}) produces")
            if op.kind != skind or sorted(ins) != sorted(op.inputs):
                raise SpecError(f"{where}: {stmt.where()}: '{stmt}' does not match ops.{op.name} "
                                f"({op.kind} of {', '.join(op.inputs)} into {op.out})")
            for t in ins:
                if t not in ready:
                    raise SpecError(f"{where}: {stmt.where()}: '{stmt}' reads {t} before any load "
                                    f"of {t} or op making it in this kernel")
            seen_out.add(out)
        for a, k in acc:
            if k in (LOAD, PRODUCE, ACC):
                ready.add(a.tensor)
    for o in ops:
        if o.out not in seen_out:
            raise SpecError(f"{where}: no statement computes ops.{o.name} ({o.kind} into {o.out})")


# ---------------------------------------------------------------------------------------------
# Counting


@dataclass(frozen=True, slots=True)
class StageCounts:
    stage: Stage
    counts: Counts


def produced_peak(trace, partitions: int | None) -> int:
    """Peak SBUF cost of blocks an op produced, each live from its first event to its last
    (cost units as in :func:`loopsim.counts.count`)."""
    if trace.n == 0:
        return 0
    cost = trace.object_cost(partitions)
    made = np.unique(trace.obj[trace.kind == PRODUCE])
    if made.size == 0:
        return 0
    obj = trace.obj
    n = obj.size
    _, first = np.unique(obj, return_index=True)
    uniq_rev, last_rev = np.unique(obj[::-1], return_index=True)
    first_of = dict(zip(np.unique(obj).tolist(), first.tolist()))
    last_of = dict(zip(uniq_rev.tolist(), (n - 1 - last_rev).tolist()))
    delta = np.zeros(n + 1, dtype=np.int64)
    for o in made.tolist():
        delta[first_of[o]] += cost[o]
        delta[last_of[o] + 1] -= cost[o]
    return int(np.cumsum(delta).max())


def check_scope(hw, *, allow: bool = False) -> None:
    """Every kernel of a program runs on one physical core: refuse a sheet of several, unless
    ``allow`` (a program takes no --lnc, so the advice is the sheet or the flag)."""
    h = hw.physical_cores
    if h != 1 and not allow:
        raise HardwareError(
            f"--hardware {hw.name}: the sheet covers {h} physical cores ({hw.scope}) but each kernel "
            f"of a spec with several ops runs on one, so its roofs would be {h}x too high: use a "
            "1-core sheet, or pass --allow-scope-mismatch")


def count_stage(stage: Stage, hw, *, policy: str, capacity: int,
                allow_scope_mismatch: bool = False) -> Counts:
    """One kernel, on its own, from an empty SBUF. As written, the residency adds the produced
    intermediates' live ranges to the nest's buffers (an upper bound)."""
    from . import trace as trace_mod

    k = stage.kernel
    check_tiles(k, hw.k_tile_max, hw.pe_cols, hw.moving_max, hw.name)
    check_scope(hw, allow=allow_scope_mismatch)
    tr = trace_mod.build(k)
    c = count(k, policy=policy, capacity=capacity, partitions=hw.partitions, trace=tr)
    if policy == "as-written":
        extra = produced_peak(tr, hw.partitions)
        if extra:
            r = c.residency
            # the nest's loaded and staged buffers, plus every op output over its live range:
            # each peak at its own time, so their sum bounds the true peak from above
            c = replace(c, residency=replace(r, peak_cost=live_peak(k, hw.partitions, op_outputs=False)
                                             + extra,
                                             what="live buffers as written + op outputs from "
                                                  "produce to last use"))
    return c


@dataclass(frozen=True, slots=True)
class Step(Overlap):
    """One op entitled against its own engine. ``W``: FLOPs (matmul: 2MNK; other ops: nominal);
    ``elements``: element-operations on its engines; ``roof``: FLOP/s (tensor) or elements/s;
    ``Q``: the HBM bytes of its kernel attributed to it (reads to the first op of the kernel that
    reads the tensor, writes to the op that makes it)."""

    op: str
    kind: str
    kernel: str
    engine: str
    W: int
    elements: int
    engine_seconds: tuple[tuple[str, float], ...]
    Q: int
    BW: float

    @property
    def t_compute(self) -> float:
        return max(s for _, s in self.engine_seconds)

    @property
    def t_memory(self) -> float:
        return self.Q / self.BW

    @property
    def bound(self) -> str:
        return "compute" if self.t_compute >= self.t_memory else "memory"

    @property
    def binding(self) -> str:
        """The engine (or ``hbm``) that sets the step's T_best."""
        return self.engine if self.bound == "compute" else "hbm"

    def as_dict(self) -> dict:
        return {"op": self.op, "kind": self.kind, "kernel": self.kernel, "engine": self.engine,
                "W": self.W, "elements": self.elements,
                "engine_seconds": dict(self.engine_seconds), "Q": self.Q,
                "T_compute": self.t_compute, "T_memory": self.t_memory, "T_best": self.T_best,
                "T_worst": self.T_worst, "bound": self.bound, "binding": self.binding}


def _steps(prog: Program, per_stage: list[StageCounts], hw, dtype: str) -> list[Step]:
    tm = prog.tensor_map
    out = []
    for sc in per_stage:
        ops = [prog.op_map[n] for n in sc.stage.ops]
        reader = {}
        for o in ops:
            for t in o.inputs:
                reader.setdefault(t, o.name)
        q = {o.name: 0 for o in ops}
        maker = {o.out: o.name for o in ops}
        for t in sc.counts.tensors:
            if t.read_bytes:
                q[reader.get(t.name, maker.get(t.name, ops[0].name))] += t.read_bytes
            if t.write_bytes:
                q[maker.get(t.name, reader.get(t.name, ops[0].name))] += t.write_bytes
        for o in ops:
            where = f"{prog.path}: ops.{o.name} ({o.kind})"
            if o.kind == "matmul":
                a, b = (tm[t].shape[::-1] if tr else tm[t].shape for t, tr in zip(o.inputs, o.transposed))
                w = 2 * a[0] * a[1] * b[1]
                secs = (("tensor", w / hw.P(dtype)),)
                out.append(Step(o.name, o.kind, sc.stage.name, "tensor", w, 0, secs, q[o.name], hw.bw))
                continue
            n = tm[o.inputs[0]].elements
            secs = []
            for engine, passes in o.work():
                try:
                    roof = hw.engine_roof(engine, tm[o.out].dtype)
                except HardwareError as e:
                    raise HardwareError(f"{where} runs on the {engine} engine, which has no roof "
                                        f"on {hw.name}: {e}") from None
                secs.append((engine, passes * n / roof))
            engine = max(secs, key=lambda s: s[1])[0]
            elems = sum(p for _, p in o.work()) * n
            out.append(Step(o.name, o.kind, sc.stage.name, engine,
                            o.op_kind.flops_per_element * n, elems, tuple(secs), q[o.name], hw.bw))
    return out


@dataclass(frozen=True, slots=True)
class Intermediate:
    """HBM traffic of one intermediate over the whole program; k = (written + read) / size."""

    name: str
    bytes: int
    write_bytes: int
    read_bytes: int
    producer: str
    consumers: tuple[str, ...]
    fused: bool  # producer and every consumer run in one kernel

    @property
    def k(self) -> float:
        return (self.write_bytes + self.read_bytes) / self.bytes

    @property
    def spilled(self) -> bool:
        """Fused, yet it crossed HBM: evicted from SBUF before its last use."""
        return self.fused and (self.write_bytes + self.read_bytes) > 0

    def as_dict(self) -> dict:
        return {"bytes": self.bytes, "write_bytes": self.write_bytes, "read_bytes": self.read_bytes,
                "k": self.k, "producer": self.producer, "consumers": list(self.consumers),
                "fused": self.fused, "spilled": self.spilled}


@dataclass(frozen=True, slots=True)
class ProgramReport:
    """The whole program (W, Q, entitlement as one kernel report), its kernels, steps and
    intermediates. ``base`` is a :class:`loopsim.report.Report` of the summed counts."""

    program: Program
    base: Report
    stages: tuple[StageCounts, ...]
    steps: tuple[Step, ...]
    intermediates: tuple[Intermediate, ...]

    @property
    def binding_step(self) -> Step:
        return max(self.steps, key=lambda s: s.T_best)

    def resource_seconds(self) -> dict[str, float]:
        """Total busy time per engine and for HBM over the program, seconds."""
        out: dict[str, float] = {}
        for s in self.steps:
            for e, t in s.engine_seconds:
                out[e] = out.get(e, 0.0) + t
        out["hbm"] = self.base.entitlement.t_memory
        return out

    @property
    def binding_engine(self) -> str:
        r = self.resource_seconds()
        return max(r, key=r.get)

    def T_best_engines(self) -> float:
        """Per kernel the slowest of its engines and HBM (all overlapping), summed over kernels:
        T_best with every engine's roof, not only the Tensor Engine's (seconds)."""
        total = 0.0
        for sc in self.stages:
            busy: dict[str, float] = {"hbm": sc.counts.hbm_bytes / self.base.hardware.bw}
            for s in self.steps:
                if s.kernel == sc.stage.name:
                    for e, t in s.engine_seconds:
                        busy[e] = busy.get(e, 0.0) + t
            total += max(busy.values())
        return total

    def notes(self) -> list[str]:
        out = []
        pol = self.base.counts.policy
        for im in self.intermediates:
            if im.spilled:
                out.append(f"{im.name} SPILLED: fused in kernel {self.program.stage_of(im.producer).name} "
                           f"but evicted from SBUF before its last use (k = {im.k:.4g})")
        for sc in self.stages:
            r = sc.counts.residency
            if not r.fits:
                out.append(f"kernel {sc.stage.name}: SBUF {r.verdict()}" + (
                    "; as written its intermediates never cross HBM, but the nest cannot run in "
                    "this SBUF: replay with --policy lru or opt to see the spill"
                    if pol == "as-written" else ""))
        return out

    def as_dict(self) -> dict:
        d = self.base.as_dict()
        for sc in self.stages:
            if not sc.counts.residency.fits:
                d["sbuf"]["fits"] = False
        d["sbuf"]["kernels"] = {sc.stage.name: {"peak_bytes": sc.counts.residency.peak_bytes,
                                                "fits": sc.counts.residency.fits,
                                                "what": sc.counts.residency.what}
                                for sc in self.stages}
        b = self.binding_step
        d.update({
            "schedule": {sc.stage.name: list(sc.stage.ops) for sc in self.stages},
            "kernels": [{"kernel": sc.stage.name, "ops": list(sc.stage.ops), "W": sc.counts.flops,
                         "Q": sc.counts.hbm_bytes} for sc in self.stages],
            "intermediates": {im.name: im.as_dict() for im in self.intermediates},
            "steps": [s.as_dict() for s in self.steps],
            "binding": {"engine": self.binding_engine, "step": b.op, "step_binding": b.binding,
                        "resource_seconds": self.resource_seconds()},
            "T_best_engines": self.T_best_engines(),
            "notes": self.notes(),
        })
        return d

    def format_text(self) -> str:
        lines = [format_text(self.base), "",
                 "  schedule: " + " | ".join(f"{sc.stage.name} [{', '.join(sc.stage.ops)}]"
                                             for sc in self.stages)]
        for sc in self.stages:
            lines.append(f"    kernel {sc.stage.name:<10} Q {sc.counts.hbm_bytes:>16,} bytes   "
                         f"SBUF {sc.counts.residency.verdict()}")
        if self.intermediates:
            lines.append("  intermediates (k = crossings of HBM / size, from the replay):")
            lines.append(f"    {'name':<10}{'bytes':>16}{'written':>16}{'read':>16}{'k':>8}  where")
            for im in self.intermediates:
                where = "fused" if im.fused else "across kernels"
                lines.append(f"    {im.name:<10}{im.bytes:>16,}{im.write_bytes:>16,}{im.read_bytes:>16,}"
                             f"{im.k:>8.4g}  {where}{' SPILLED' if im.spilled else ''}")
        lines.append("  steps (each against its own engine):")
        lines.append(f"    {'op':<10}{'kind':<15}{'engine':<8}{'W (FLOPs)':>16}{'Q (bytes)':>14}"
                     f"{'T_compute':>12}{'T_memory':>12}{'T_best':>12}  bound")
        for s in self.steps:
            lines.append(f"    {s.op:<10}{s.kind:<15}{s.engine:<8}{s.W:>16,}{s.Q:>14,}"
                         f"{fmt_time(s.t_compute):>12}{fmt_time(s.t_memory):>12}"
                         f"{fmt_time(s.T_best):>12}  {s.bound}")
        b = self.binding_step
        lines.append(f"  binding: {self.binding_engine} over the program; step {b.op} "
                     f"({b.binding}, T_best {fmt_time(b.T_best)})")
        lines.append(f"  T_best with every engine's roof: {fmt_time(self.T_best_engines())}")
        lines += [f"  note: {n}" for n in self.notes()]
        return "\n".join(lines)


def analyze(prog: Program, hw, *, policy: str = "as-written", sbuf_bytes: int | None = None,
            dtype: str | None = None, allow_scope_mismatch: bool = False) -> ProgramReport:
    """Count every kernel of the schedule (each from an empty SBUF), sum, and entitle. Each
    kernel runs on one physical core: the sheet's scope must be one core unless
    ``allow_scope_mismatch``."""
    cap = capacity_units(hw, sbuf_bytes)
    per = [StageCounts(s, count_stage(s, hw, policy=policy, capacity=cap,
                                      allow_scope_mismatch=allow_scope_mismatch))
           for s in prog.stages]
    dt = dtype or _program_dtype(prog)
    tensors = []
    for t in prog.tensors:
        rd = sum(sc.counts.tensor_map[t.name].read_bytes for sc in per if t.name in sc.counts.tensor_map)
        wr = sum(sc.counts.tensor_map[t.name].write_bytes for sc in per if t.name in sc.counts.tensor_map)
        tensors.append(TensorCounts(t.name, t.bytes, rd, wr, t.output))
    worst = max((sc.counts.residency for sc in per), key=lambda r: r.peak_cost)
    compulsory = sum(prog.tensor_map[t].bytes for t in prog.inputs) + \
        sum(t.bytes for t in prog.tensors if t.output)
    total = Counts(prog.name, policy, sum(sc.counts.flops for sc in per),
                   sum(sc.counts.instructions for sc in per), tuple(tensors), compulsory,
                   replace(worst, needed_cost=max(sc.counts.residency.needed_cost for sc in per)))
    e = Entitlement(total.flops, total.hbm_bytes, hw.P(dt), hw.bw)
    base = Report(total, e, hw, dt, prog.params)
    steps = _steps(prog, per, hw, dt)
    tc = total.tensor_map
    inter = []
    for name in prog.intermediates:
        producer = next(o.name for o in prog.ops if o.out == name)
        consumers = tuple(o.name for o in prog.ops if name in o.inputs)
        k = prog.stage_of(producer).name
        inter.append(Intermediate(name, tc[name].bytes, tc[name].write_bytes, tc[name].read_bytes,
                                  producer, consumers,
                                  all(prog.stage_of(c).name == k for c in consumers)))
    return ProgramReport(prog, base, tuple(per), tuple(steps), tuple(inter))


def _program_dtype(prog: Program) -> str:
    dts = [kernel_dtype(s.kernel) for s in prog.stages
           if any(isinstance(st, Matmul) for st, _ in s.kernel.statements())]
    return "fp32" if "fp32" in dts else (dts[0] if dts else "bf16")


def build(sf: spec_mod.SpecFile, params: Mapping[str, int]) -> Kernel | Program:
    """The spec bound to ``params``: a single kernel, or a program when it has ``[ops]``."""
    return program_from(sf, params) if is_program(sf) else spec_mod.kernel_from(sf, params)


def report_of(k: Kernel | Program, hw, *, policy: str = "as-written", sbuf_bytes: int | None = None,
              dtype: str | None = None) -> Report:
    """The whole-kernel report of either: a program's totals over its schedule, or one kernel's."""
    if isinstance(k, Program):
        return analyze(k, hw, policy=policy, sbuf_bytes=sbuf_bytes, dtype=dtype).base
    from .report import analyze as analyze_kernel

    return analyze_kernel(k, hw, policy=policy, sbuf_bytes=sbuf_bytes, dtype=dtype)
