"""Engine work of the ops a kernel runs, counted per execution of their nest statements.

An op statement runs once per iteration of every loop around it, whether or not its indices use
that loop: an RMSNorm placed inside the f loop of a fused norm + projection runs F/TF times. Its
elements are the first input's tile summed over every execution (ragged tiles as they are); on
each engine it does ``passes x elements`` element-operations at the sheet's roof (elements/s).

A layout change between an op's input and its output (the output's partition axis is indexed by
other loop variables than the input's) is a transpose: the tile goes through the Tensor Engine
against an identity, charged to that engine per execution (:func:`transpose_seconds`), never free.
A nest that stores a tensor and loads it back in another layout pays the DMA round trip in Q.
"""

from __future__ import annotations

from dataclasses import dataclass

from loopsim.base.overlap import Overlap
from loopsim.base.errors import HardwareError, SpecError
from loopsim.count.executions import executions, tile_elements
from loopsim.ir.kernel import Kernel, Matmul


@dataclass(frozen=True, slots=True)
class Step(Overlap):
    """One op entitled against its own engine. ``W``: FLOPs (matmul: 2MNK; other ops: nominal);
    ``elements``: element-operations on its engines; ``engine_seconds``: busy seconds per engine;
    ``Q``: the HBM bytes of its kernel attributed to it (reads to the first op of the kernel that
    reads the tensor, writes to the op that makes it); ``BW`` bytes/s."""

    op: str
    kind: str
    kernel: str
    engine: str
    W: int
    elements: int
    engine_seconds: tuple[tuple[str, float], ...]
    Q: int
    BW: float
    executions: int = 1

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


def engine_seconds(hw, engine: str, element_ops: float, dtype: str = "fp32", *,
                   per_core: bool = False) -> float:
    """Seconds the ``engine`` (Vector, Scalar, GpSimd) takes for ``element_ops`` element-operations
    on ``dtype``: element_ops / the sheet's roof (elements/s of the scope, or of one physical core
    with ``per_core``). The one formula of every engine ceiling (op steps, PSUM evacuation, the
    traced kernels' engine work) and of the timeline's instructions on these engines, so the
    timeline can never run an engine faster than its ceiling; HardwareError without a roof."""
    roof = hw.engine_roof(engine, dtype)
    return element_ops / (roof / hw.physical_cores if per_core else roof)


#: the free size below which a Tensor Engine transpose of a [P, F] tile costs no fewer cycles:
#: "max(P, min(64, F)) Tensor Engine cycles, where P is partition axis size of data and F is the
#: number of elements per partition in data" (assuming back-to-back transposes of one shape; NKI
#: ISA reference, nki.isa.nc_transpose, "Estimated instruction cost",
#: https://awsdocs-neuron.readthedocs-hosted.com/en/v2.25.0/general/nki/api/generated/nki.isa.nc_transpose.html)
TRANSPOSE_MIN_F = 64


def transpose_cycles(hw, p: int, f: int) -> int:
    """Tensor Engine cycles to transpose one [p, f] tile: max(p, min(64, f)) per instruction
    (:data:`TRANSPOSE_MIN_F`), one instruction per ``pe_cols`` of f (an instruction's tile is at
    most 128 x 128)."""
    full, rest = divmod(f, hw.pe_cols)
    return full * max(p, min(TRANSPOSE_MIN_F, hw.pe_cols)) + (max(p, min(TRANSPOSE_MIN_F, rest)) if rest else 0)


def work_seconds(hw, w, *, per_core: bool = False) -> float:
    """Seconds of one :class:`loopsim.ir.ops.EngineWork` on its engine (not ``link``): a Tensor
    Engine transpose its documented cycles (:func:`transpose_cycles`) at the Tensor Engine clock;
    other Tensor Engine work its element-ops as multiply-adds at the peak (2 FLOPs each, fp8 rate);
    elsewhere :func:`engine_seconds` on fp32. The engine ceiling's term and the timeline's time
    for it."""
    if w.engine == "tensor" and w.transpose:
        t = transpose_cycles(hw, w.passes, w.elements // max(1, w.passes)) * w.executions / hw.clock_hz
        return t if per_core else t / hw.physical_cores
    if w.engine == "tensor":
        return 2 * w.element_ops / (hw.P("fp8") / (hw.physical_cores if per_core else 1))
    return engine_seconds(hw, w.engine, w.element_ops, "fp32", per_core=per_core)


def _partition_vars(acc, tensor) -> tuple[str, ...]:
    return tuple(sorted(acc.index[tensor.partition_axis])) if acc.index else ()


def _layout_changes(stmt, kernel: Kernel):
    """The inputs of an op statement laid out with other loop variables on the partitions than
    its output (same rank; a broadcast vector such as gamma has no layout of its own)."""
    tm = kernel.tensor_map
    out_t = tm[stmt.out.tensor]
    pv = _partition_vars(stmt.out, out_t)
    return [a for a in stmt.inputs
            if len(tm[a.tensor].shape) == len(out_t.shape) and _partition_vars(a, tm[a.tensor]) != pv]


def transpose_seconds(stmt, loops, acc, kernel: Kernel, hw) -> float:
    """Tensor Engine time to transpose ``acc``'s tile at every execution of ``stmt``: the tile,
    a rows on the partitions by b free elements, goes through the PE array against an identity
    (nc_transpose): ceil(b / PE columns) instructions, each holding the array max(a, N_min)
    cycles. No FLOPs are counted in W (the profiler reports them as transpose_flops)."""
    import numpy as np

    t = kernel.tensor_map[acc.tensor]
    ext, exists, weight, _, shape = executions(stmt, loops, (acc,), kernel, None, grouped=True)
    axes = ext[id(acc)]
    a = np.broadcast_to(axes[t.partition_axis], shape)
    b = np.ones(shape, dtype=np.int64)
    for i, e in enumerate(axes):
        if i != t.partition_axis:
            b = b * e
    cycles = -(-b // hw.pe_cols) * np.maximum(a, hw.mm_init_cycles) * weight  # weight: executions per cell
    spec_hw = hw.with_roofs("spec")
    cycle_s = 2 * hw.pe_rows * hw.pe_cols * hw.physical_cores / spec_hw.P("bf16")
    return float(np.where(exists, cycles, 0).sum(dtype=np.int64)) * cycle_s


def stage_steps(stage, op_map, tensor_map, counts, hw, dtype: str, where: str) -> list[Step]:
    """The steps of one kernel of a schedule: each op's engine seconds from the executions of its
    statements, and its share of the kernel's HBM bytes."""
    kernel = stage.kernel
    ops = [op_map[n] for n in stage.ops]
    reader: dict[str, str] = {}
    for o in ops:
        for t in o.inputs:
            reader.setdefault(t, o.name)
    maker = {o.out: o.name for o in ops}
    q = {o.name: 0 for o in ops}
    for t in counts.tensors:
        if t.read_bytes:
            q[reader.get(t.name, maker.get(t.name, ops[0].name))] += t.read_bytes
        if t.write_bytes:
            q[maker.get(t.name, reader.get(t.name, ops[0].name))] += t.write_bytes
    # elements per op: its statements' first-input tiles (a broadcast kind's output tiles) over
    # every execution
    elems: dict[str, int] = {}
    runs: dict[str, int] = {}
    trans: dict[str, float] = {}  # Tensor Engine seconds of layout changes (transposes)
    for stmt, loops in kernel.statements():
        if isinstance(stmt, Matmul) or not hasattr(stmt, "inputs"):
            continue
        op = maker.get(stmt.out.tensor)
        if op is None:
            continue
        per = stmt.out if op_map[op].op_kind.per_output else stmt.inputs[0]
        elems[op] = elems.get(op, 0) + tile_elements(stmt, loops, per, kernel)
        runs[op] = runs.get(op, 0) + _runs(loops)
        for acc in _layout_changes(stmt, kernel):
            trans[op] = trans.get(op, 0.0) + transpose_seconds(stmt, loops, acc, kernel, hw)
    out = []
    for o in ops:
        if o.kind == "matmul":
            a, b = (tensor_map[t].shape[::-1] if tr else tensor_map[t].shape
                    for t, tr in zip(o.inputs, o.transposed))
            w = 2 * a[0] * a[1] * b[1]
            secs = (("tensor", w / hw.P(dtype)),)
            out.append(Step(o.name, o.kind, stage.name, "tensor", w, 0, secs, q[o.name], hw.bw))
            continue
        n = elems.get(o.name, 0)
        secs = []
        for engine, passes in o.work():
            try:
                secs.append((engine, engine_seconds(hw, engine, passes * n, tensor_map[o.out].dtype)))
            except HardwareError as e:
                raise HardwareError(f"{where}: ops.{o.name} ({o.kind}) runs on the {engine} engine, "
                                    f"which has no roof on {hw.name}: {e}") from None
        if o.name in trans:
            secs.append(("tensor", trans[o.name]))
        engine = max(secs, key=lambda s: s[1])[0]
        out.append(Step(o.name, o.kind, stage.name, engine, o.op_kind.flops_per_element * n,
                        sum(p for _, p in o.work()) * n, tuple(secs), q[o.name], hw.bw,
                        runs.get(o.name, 1)))
    return out


def _runs(loops) -> int:
    n = 1
    for l in loops:
        n *= l.trips
    return n


def op_lines(kernel: Kernel, hw, work_of) -> tuple[tuple[int, str, float, str], ...]:
    """(source line, statement, seconds, engine) of each op statement with a source line, once
    per engine it runs on (``work_of(stmt)``: its (engine, passes) pairs): the busy time the
    engine timeline charges that engine for it (:mod:`.timeline`), per execution
    max(MIN_II cycles, passes x elements / the core's roof) on Vector/Scalar/GpSimd (elements: the
    first input's tile, or the output's for a kind that works per output element (a broadcast
    such as ``chainN``), as the timeline counts them; ragged tiles as they are; MIN_II ``timeline.engine_min_cycles``, 0 when
    the sheet has none), max(MM_INIT, 128) cycles per 128 x 128 block on the Tensor Engine,
    summed over every execution and shared evenly by the kernel's cores. Reading PSUM (the copy
    a matmul's result needs) is not an op statement's and is not included. An engine the sheet
    gives no roof for: HardwareError."""
    import numpy as np

    from loopsim.count.executions import row_blocks
    from loopsim.count.lnc import kernel_cores, split_loop
    from loopsim.ir.ops import get as op_kind

    min_c = hw.timeline_value("engine_min_cycles") or 0
    cores = kernel_cores(kernel)
    split = split_loop(kernel)
    out: list = []
    for stmt, loops in kernel.statements():
        if isinstance(stmt, Matmul) or not hasattr(stmt, "inputs") or not stmt.line:
            continue
        k = op_kind(stmt.kind)
        acc = stmt.out if k is not None and k.per_output else stmt.inputs[0]
        ext, exists, weight, _, shape = executions(stmt, loops, (acc,), kernel, split, grouped=True)
        dtype = kernel.tensor_map[stmt.out.tensor].dtype
        for engine, passes in work_of(stmt):
            if engine == "tensor":  # one max(MM_INIT, 128)-cycle instruction per 128 x 128 block
                def cost(n, per=max(hw.mm_init_cycles, 128) / hw.clock_hz):
                    return -(-n // (128 * 128)) * per
            else:
                engine_seconds(hw, engine, 1, dtype)  # HardwareError without a roof
                clock = next(c for e, c, _ in hw.engines if e == engine)

                def cost(n, engine=engine, floor=min_c / clock, passes=passes):
                    return np.maximum(floor, engine_seconds(hw, engine, passes * n, dtype, per_core=True))
            secs = 0.0
            for sub, (ex, w, *axes) in row_blocks(shape, (exists, weight, *ext[id(acc)])):
                n = np.ones(sub, dtype=np.int64)
                for e in axes:
                    n = n * e
                secs += float(np.where(ex, cost(n) * np.broadcast_to(w, sub), 0.0).sum())
            out.append((stmt.line, str(stmt), secs / cores, engine))
    return tuple(out)
