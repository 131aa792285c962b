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

from dataclasses import dataclass
from pathlib import Path
from typing import Mapping


from loopsim.frontends import ops as spec_ops
from loopsim.ir import graph as graph_mod
from loopsim.ir import ops as ops_mod
from loopsim.frontends import spec as spec_mod
from loopsim.base.errors import SpecError
from loopsim.ir.kernel import ACC, LOAD, PRODUCE, Kernel, Matmul, Tensor


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
    """A validated op graph and its schedule of kernels. ``graph``: a :class:`loopsim.ir.graph.OpGraph`."""

    name: str
    path: str
    params: tuple[tuple[str, int], ...]
    tensors: tuple[Tensor, ...]
    ops: tuple[graph_mod.OpNode, ...]
    inputs: tuple[str, ...]
    stages: tuple[Stage, ...]
    graph: object  # None for a single nest
    parallel: object = None  # loopsim.targets.neuron.ceilings.Parallel of a single nest's [parallel], else None
    bundled: bool = False  # read from a bundled spec (by name), not from a path the user gave

    @classmethod
    def single(cls, kernel: Kernel, parallel=None) -> "Program":
        """A plain ``[nest]`` kernel as a program of one stage (no ops, no schedule)."""
        return cls(kernel.name, kernel.source, kernel.params, kernel.tensors, (),
                   tuple(t.name for t in kernel.inputs), (Stage(kernel.name, (), kernel),), None,
                   parallel)

    @property
    def is_single(self) -> bool:
        """A single nest (one stage, no ops): what the spec states is one kernel."""
        return not self.ops

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
    """Whether a read spec describes several ops: an ``[ops]`` table, or kernels in
    ``[nest.KERNEL]`` tables whose statements say the ops (:func:`loopsim.frontends.ops.derive_ops`)."""
    return "ops" in sf.data or spec_ops.is_derived(sf.data)


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
    if spec_ops.is_derived(sf.data):  # each op said once, by its nest statement
        op_nodes, inputs, schedule = spec_ops.derive_ops(path, sf.data, params)
        g = graph_mod.build(path, op_nodes, inputs, tmap)
    else:
        op_nodes, inputs = spec_ops.parse_ops(path, sf.data)
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
