"""A trace record -> loopsim IR: loops as loops, tiles as affine accesses, ops as op statements.

A recorded loop ``for i in nl.affine_range(n)`` whose index appears in tile starts as ``c·i``
becomes ``for i in n·c by c`` (the IR's loop variables run in elements); an index that moves tiles
by different strides gets the gcd g of them as its step and each stride's multiple of it as the
access's coefficient (``A[8*i]`` beside ``B[i]``). A tile at a constant offset (``q[:, 128*t +
128]``, a fixed slice outside any loop, an unrolled statement that does not re-roll) keeps the
offset, and a tile whose size is not the smallest stride (a window with its halo) its extent. A load into a buffer allocated
outside the loops that fill it (``for k: dma_copy(tiles[k], A[k·128 ...])``) becomes one load of
the union, placed at the buffer's level: the same bytes, and the whole buffer live while it is
used, as the allocation states; its transfers stay one per copy (``load A[:, m] by 128``). A kernel whose matmuls or ops make tensors that are never stored
becomes a :class:`loopsim.frontends.program.Program` of one kernel; otherwise an :class:`loopsim.ir.kernel.Kernel`.
"""

from __future__ import annotations

import math
from dataclasses import replace

from loopsim.base import limits
from loopsim.ir import kernel as ir
from loopsim.ir.ops import KINDS, OpStatement
from loopsim.frontends.nki.errors import TraceError
from loopsim.frontends.nki.symbolic import LoopVar, Sym
from loopsim.frontends.nki.events import ARITH, AccumulateEv, LoadEv, LoopRec, MatmulEv, OpEv, StoreEv, TileRef, tile_refs
from loopsim.frontends.nki.record import Recorder


def _where(rec: Recorder, line: int) -> str:
    return f"{rec.shown}:{line}: kernel {rec.func}" if line else f"{rec.shown}: kernel {rec.func}"


def classify(lg, where: str, notes: list | None = None, elements: int = 0) -> str:
    """The loopsim op kind of a derived value from the engine ops that made it. A chain of no
    named kind is ``chainN``: N its instructions' element-operations (one per element each
    writes) per element of the tile it makes (``elements``), rounded up (a note says so)."""
    ops = set(lg.data_ops) | set(lg.stat_ops)
    n = len(lg.sources)
    named = [o for o in lg.data_ops if o not in ARITH]
    if "exp" in ops and ("max" in ops or "maximum" in ops) and n == 1:
        return "online_softmax" if lg.running else "softmax"
    if len(set(named)) == 1 and named[0] in KINDS and KINDS[named[0]].arity == n:
        return named[0]
    chain = ", ".join(dict.fromkeys(lg.stat_ops + lg.data_ops))
    # its instructions' element-operations per element of the tile it makes; a value read twice
    # counts twice (the chain as written)
    passes = -(-lg.elem_ops // elements) if elements else len(lg.data_ops) + len(lg.stat_ops)
    passes = max(1, passes)
    if not named and not lg.stat_ops:  # arithmetic a named kind says exactly: that kind
        if n == 2 and passes == 1 and set(lg.data_ops) <= {"add"}:
            return "add"
        if n == 2 and passes == 1 and set(lg.data_ops) <= {"multiply"}:
            return "mul"
        if n == 3 and set(lg.data_ops) == {"multiply", "add"}:
            return "fma"  # as written: a * b + c (one scalar_tensor_tensor or two instructions)
    # any other chain: chainN, N those passes
    why = []
    if elements and lg.elem_ops % elements:
        why.append(f"{lg.elem_ops:,} element-ops per {elements:,}-element tile, rounded up")
    if named or lg.stat_ops:
        why.append("the engine of each, Scalar or Vector, not modelled")
    if why and notes is not None:
        notes.append(f"{where}: the engine ops making {lg.name} ({chain}; {n} input tile"
                     f"{'s' * (n != 1)}) are costed as {passes} Vector Engine pass"
                     f"{'es' * (passes != 1)} over its tile (chain{passes}): ASSUMED "
                     f"({'; '.join(why)})")
    return f"chain{passes}"


def lower(rec: Recorder, params: tuple[tuple[str, int], ...] = ()):
    """The IR of a finished record: an ir.Kernel, or a Program when tensors stay on chip."""
    items = []  # (event, ref, tensor-dims) gathered for the step map

    def refs(ev):
        if isinstance(ev, LoadEv):
            return [_absorb(ev)]
        if isinstance(ev, StoreEv):
            return [ev.ref]
        if isinstance(ev, MatmulEv):
            return [ev.out, ev.stationary, ev.moving]
        if isinstance(ev, OpEv) and _emitted(ev):
            return [ev.out, *ev.value.sources]
        if isinstance(ev, AccumulateEv):
            return [ev.out, ev.src]
        return []

    def walk(body):
        for n in body:
            if isinstance(n, LoopRec):
                yield from walk(n.body)
            else:
                yield n

    from loopsim.frontends.nki.reroll import reroll_runs

    rec.root = reroll_runs(rec.root, rec.notes)
    events = list(walk(rec.root))
    for ev in events:
        if isinstance(ev, LoadEv) and ev.hoist and not ev.absorbed:
            ev.absorbed = _hoisted(ev)
    _drop_unit_dims(events)
    _fold_unit_dims(events, rec.notes)
    whole = _whole_dims(events)
    _fold_unit_dims(events, rec.notes)
    _shift_on_chip(events)
    step: dict = {}  # a loop's step: the gcd of the strides it moves tiles by (each a coefficient x step)
    for ev in events:
        for r in refs(ev):
            for s in r.starts:
                for v, c in s.terms.items():
                    if c <= 0:
                        raise TraceError(f"{_where(rec, ev.line)}: tile start {s} must grow with loop {v.name}")
                    step[v] = math.gcd(step.get(v, 0), c)
    # tensors
    used: dict = {}
    for ev in events:
        for r in refs(ev):
            lg = r.logical.find()
            used.setdefault(id(lg), (lg, []))[1].append(r)
    tensors: dict[str, ir.Tensor] = {}
    order = {id(lg): i for i, lg in enumerate(rec.logicals)}  # arguments first, as declared
    for lg, rs in sorted(used.values(), key=lambda u: order.get(id(u[0]), len(order))):
        if lg.kind == "const":
            raise TraceError(f"{_where(rec, lg.line)}: a constant tile is used as a tensor")
        if lg.kind == "hbm":
            shape = lg.shape
        else:
            shape = tuple(max(sum(c * (v.trips - 1) for v, c in r.starts[d].terms.items()) +
                              r.starts[d].const + r.sizes[d] for r in rs)
                          for d in range(len(rs[0].starts)))
        pa = lg.pa_strong if lg.pa_strong is not None else (lg.pa_weak or 0)
        dt = lg.dtype if lg.dtype in ir.DTYPES else "bf16"
        tensors[lg.name] = ir.Tensor(lg.name, shape, dt, output=lg.kind == "hbm" and lg.output,
                                     partition_axis=pa if pa < len(shape) else 0)
    # loop variable names: unique, not a tensor or parameter name
    taken = set(tensors) | {p for p, _ in params}
    names: dict = {}

    def name_of(v) -> str:
        if v not in names:
            base, n, i = v.name, v.name, 1
            while n in taken:
                n = f"{base}_{i}"
                i += 1
            taken.add(n)
            names[v] = n
        return names[v]

    def access(r: TileRef, line: int) -> ir.Access:
        """The IR access of a recorded tile: per dimension ``const + sum(c * v)``, the loop's step
        the gcd of its strides (a coefficient where a stride is a multiple of it), and an explicit
        extent where the tile's size is not the default (the smallest stride; ':' the whole)."""
        lg = r.logical.find()
        t = tensors[lg.name]
        idx, coefs, offs, exts = [], [], [], []
        for d, (s, n) in enumerate(zip(r.starts, r.sizes)):
            if s.const < 0:
                raise TraceError(f"{_where(rec, line)}: tile of {lg.name} starts at {s} in dimension "
                                 f"{d}, below 0 at its first iteration: a negative offset is not modelled")
            pairs = sorted(((v, c // step[v]) for v, c in s.terms.items()),
                           key=lambda vc: -vc[1] * step[vc[0]])
            idx.append(tuple(name_of(v) for v, _ in pairs))
            coefs.append(tuple(c for _, c in pairs))
            offs.append(s.const)
            room = t.shape[d] - s.const
            default = min(room, min(c * step[v] for v, c in pairs)) if pairs else room
            # tiles that stop short of the dimension's end (a loop a trace left with one trip
            # over a slice of a longer tensor) say their extent: the access covers a part
            short = pairs and sum(c * (v.trips - 1) for v, c in s.terms.items()) + s.const + n < t.shape[d]
            exts.append(0 if min(n, room) == default and not short else n)
        return ir.Access(lg.name, tuple(idx), tuple(coefs), tuple(offs), tuple(exts))

    matmul_ev: dict = {}  # id(ir.Matmul) -> its MatmulEv

    def stmt(ev):
        if isinstance(ev, LoadEv):
            chunk = ev.chunk or _chunk(ev)  # a gather: one row of the partition axis per transfer
            pa = tensors[ev.ref.logical.find().name].partition_axis
            if len(chunk) > 1 and not any(c for a, c in enumerate(chunk) if a != pa):
                chunk = (chunk[pa],)  # rows of the partition axis only: ``by 128``, as a spec says it
            return ir.Load(access(_absorb(ev), ev.line), chunk=chunk, line=ev.line,
                           transpose=ev.transpose)
        if isinstance(ev, StoreEv):
            return ir.Store(access(ev.ref, ev.line), line=ev.line)
        if isinstance(ev, MatmulEv):
            mm = ir.Matmul(access(ev.out, ev.line), access(ev.stationary, ev.line),
                           access(ev.moving, ev.line), line=ev.line)
            matmul_ev[id(mm)] = ev
            return mm
        if isinstance(ev, AccumulateEv):
            return ir.Accumulate(access(ev.out, ev.line), access(ev.src, ev.line), line=ev.line)
        if isinstance(ev, OpEv) and _emitted(ev):
            kind = classify(ev.value, _where(rec, ev.line), rec.notes, math.prod(ev.out.sizes))
            srcs = ev.value.sources
            if kind in ("mul", "add"):  # commutative, costed per its first input: the largest
                srcs = sorted(srcs, key=lambda s: -math.prod(s.sizes))  # tile first ([T, 1] * [T, H])
            return OpStatement(kind, access(ev.out, ev.line),
                               tuple(access(s, ev.line) for s in srcs), line=ev.line)
        return None

    def build(body, depth):
        out, up = [], []
        for n in body:
            if isinstance(n, LoopRec):
                inner, lifted = build(n.body, depth + 1)
                here = [s for s, d in lifted if d == depth]
                up += [(s, d) for s, d in lifted if d < depth]
                out += here
                if inner:
                    v = n.var
                    st = step.get(v, 1)
                    out.append(ir.Loop(name_of(v), v.trips * st, st, tuple(inner), line=v.line))
                continue
            s = stmt(n)
            if s is None:
                continue
            target = depth - len(n.absorbed) if isinstance(n, LoadEv) else depth
            (out.append(s) if target == depth else up.append((s, target)))
        return out, up

    body, lifted = build(rec.root, 0)
    body = [s for s, _ in lifted] + body
    for g in reversed((rec.grid if rec.pids is None else []) + whole):
        st = step.get(g, 1)
        body = [ir.Loop(name_of(g), g.trips * st, st, tuple(body))] if body else body
    if not body:
        raise TraceError(f"{_where(rec, 0)}: the kernel moves no data (no loads, stores or matmuls)")
    depth = _depth(body)
    rank = max((len(t.shape) for t in tensors.values()), default=0)
    if depth + rank > limits.NUMPY_AXES:
        # the counts broadcast one array axis per loop and one per tensor dimension
        raise TraceError(f"{_where(rec, 0)}: its nest is {depth} loops deep ({len(whole)} of them "
                         "whole-tile loops, one per M or N dimension of its matmuls) over tensors "
                         f"of up to {rank} dimensions; loopsim's counts hold {limits.NUMPY_AXES} "
                         "loops and dimensions together: trace a part of the kernel at a time")
    tlist = tuple(tensors.values())
    kernel = ir.Kernel(rec.func, tlist, tuple(body), params, f"traced from {rec.shown}::{rec.func}",
                       rec.shown, work=tuple(getattr(rec, "work", ())),
                       notes=tuple(getattr(rec, "notes", ())),
                       buffers=tuple((n, k) for n, k in getattr(rec, "stream_slots", {}).items()
                                     if n in tensors))
    kernel = _outside_the_nest(rec, kernel, matmul_ev)
    # an op graph is needed when a tensor made on chip is read by a matmul or an op (an SBUF
    # accumulation of a PSUM tile is part of the one kernel's nest)
    made = {a.tensor for s, _ in kernel.statements() for a, k in s.accesses()
            if k in (ir.PRODUCE, ir.ACC) and not kernel.tensor_map[a.tensor].output}
    read = {a.tensor for s, _ in kernel.statements() if isinstance(s, (ir.Matmul, OpStatement))
            for a, k in s.accesses() if k == ir.USE}
    if not made & read:
        return kernel
    prog = _program(rec, kernel, params)
    if isinstance(prog, str):  # no op graph: why
        rec.notes.append(prog)
        return replace(kernel, notes=kernel.notes + (prog,))
    return prog


def _outside_the_nest(rec: Recorder, kernel: ir.Kernel, matmul_ev: dict) -> ir.Kernel:
    """The kernel without the matmuls whose operands the IR cannot index (no einsum reading of
    K, M and N: a sliding window, dimensions a view merged): each is kept as Tensor Engine work
    (:class:`loopsim.ir.ops.EngineWork` with ``matmul``) of the recorded instruction's shapes,
    M x N outputs of K multiply-adds per execution, its FLOPs in W, listed as assumed. Its
    operands' loads and its output's store stay in the nest, so Q is the kernel's."""
    from loopsim.base.errors import SpecError
    from loopsim.frontends.nki.work import charge_matmul
    from loopsim.ir.tiles import matmul_roles

    out, why = [], {}
    for s, loops in kernel.statements():
        if isinstance(s, ir.Matmul):
            try:
                matmul_roles(s, kernel)
                used = {v for a in (s.out, s.stationary, s.moving) for terms in a.index for v in terms}
                idle = [lp.var for lp in loops if lp.trips > 1 and lp.var not in used]
                carried = any(kernel._produced(a.tensor) for a in (s.stationary, s.moving))
                if idle and carried:
                    # the same (m, n, k) every iteration of a loop that indexes none of its
                    # tiles, an operand made on chip: a recurrence (x = x @ y, a loop-carried
                    # value), not a reduction (loaded operands: the FLOP check still refuses)
                    raise SpecError(f"x: the matmul repeats the same tiles every iteration of "
                                    f"loop {', '.join(idle)} (a recurrence through on-chip values)")
            except SpecError as e:
                ev = matmul_ev[id(s)]
                m, n = ev.stationary.sizes[ev.free_dims[0]], ev.moving.sizes[ev.free_dims[1]]
                k = math.prod(ev.stationary.sizes) // m
                out.append(charge_matmul(ev.site or f"{rec.shown}:{s.line}", m, n, k,
                                         math.prod(l.trips for l in loops)))
                why[id(s)] = str(e).split(": ", 2)[-1]
                rec.read_outside = getattr(rec, "read_outside", set()) | {s.stationary.tensor, s.moving.tensor}
    if not out:
        return kernel
    body = _without(kernel.body, set(why))
    used = {a.tensor for s, _ in ir.walk(body) if not isinstance(s, ir.Loop) for a, _ in s.accesses()}
    notes = tuple(f"{w.where}: {why[i]}: kept as Tensor Engine work outside the nest"
                  for w, i in zip(out, why))
    rec.work = list(getattr(rec, "work", ())) + out  # the record says what was assumed
    rec.notes.extend(notes)
    return replace(kernel, tensors=tuple(t for t in kernel.tensors if t.name in used),
                   body=body, work=kernel.work + tuple(out), notes=kernel.notes + notes)


def _depth(body) -> int:
    """The deepest loop nesting of ``body``."""
    return max((1 + _depth(n.body) for n in body if isinstance(n, ir.Loop)), default=0)


def _without(body: tuple, drop: set) -> tuple:
    """``body`` without the statements whose id is in ``drop``, and without loops left empty."""
    out = []
    for n in body:
        if isinstance(n, ir.Loop):
            inner = _without(n.body, drop)
            if inner:
                out.append(replace(n, body=inner))
        elif id(n) not in drop:
            out.append(n)
    return tuple(out)


def _whole_dims(events) -> list:
    """A matmul whose output spans a whole dimension (``res[m, :] += a @ b``) or a fixed slice of
    one (``x[0:128]``, outside any loop) gets a loop of one trip over it (``for res_n in N by N``;
    a slice keeps its offset), so that the IR can tell M from N (and K) by index."""
    made: dict = {}

    def spanning(ref: TileRef, d: int, v) -> TileRef:  # a fixed slice keeps its offset
        starts = tuple(Sym({v: ref.sizes[d]}, x.const) if i == d else x for i, x in enumerate(ref.starts))
        return TileRef(ref.logical, starts, ref.sizes)

    for ev in events:
        if not isinstance(ev, MatmulEv):
            continue
        for d, operand in enumerate(("stationary", "moving")):
            s, n = ev.out.starts[d], ev.out.sizes[d]
            op, f = getattr(ev, operand), ev.free_dims[d]
            if s.terms or op.starts[f].terms or op.sizes[f] != n:
                continue
            lg = ev.out.logical.find()
            v = made.setdefault((id(lg), d, n), LoopVar(f"{lg.name}_{'mn'[d]}", 1, "whole", ev.line))
            ev.out = spanning(ev.out, d, v)
            setattr(ev, operand, spanning(op, f, v))
        # a contraction over the whole of K in one instruction (no K loop): a loop of one trip
        # (also a whole dimension of K beside a K loop: attention[h, :, s] @ weight[h, :, n])
        st, mv = ev.stationary, ev.moving
        def fixed(r, d):  # a whole dimension, or a fixed slice of more than one element
            return not r.starts[d].terms and (not r.starts[d].const or r.sizes[d] > 1)

        whole_s = [d for d in range(len(st.starts)) if d != ev.free_dims[0] and fixed(st, d)]
        whole_m = [d for d in range(len(mv.starts)) if d != ev.free_dims[1] and fixed(mv, d)]
        if whole_s and len(whole_s) == len(whole_m) and all(
                st.sizes[a] == mv.sizes[b] for a, b in zip(whole_s, whole_m)):
            lg = ev.out.logical.find()
            for j, (ks, km) in enumerate(zip(whole_s, whole_m)):
                v = made.setdefault((id(lg), "k", j, st.sizes[ks]),
                                    LoopVar(f"{lg.name}_k{j or ''}", 1, "whole", ev.line))
                st, mv = spanning(st, ks, v), spanning(mv, km, v)
            ev.stationary, ev.moving = st, mv
    return list(made.values())


def _merge_dims(lg, rs, mms, d: int, e: int, ext: int) -> None:
    """Read dimension ``e`` (extent ``ext``) of the logical tensor ``lg`` as part of ``d``: every
    region's start and size along ``d`` scaled by ``ext`` and ``e`` dropped, an HBM tensor's shape
    merged, partition-axis marks and the matmuls' free-axis numbers renumbered."""
    for r in rs:
        r.starts = tuple(x * ext if i == d else x for i, x in enumerate(r.starts) if i != e)
        r.sizes = tuple(n * ext if i == d else n for i, n in enumerate(r.sizes) if i != e)
    if lg.kind == "hbm":
        shape = list(lg.shape)
        shape[d] *= ext
        del shape[e]
        lg.shape = tuple(shape)
    for attr in ("pa_strong", "pa_weak"):
        pa = getattr(lg, attr)
        if pa is not None:
            setattr(lg, attr, d - (d > e) if pa == e else pa - (pa > e))
    _renumber_free(mms, lg, d, e)


def _extent(lg, rs, d: int) -> int:
    if lg.kind == "hbm":
        return lg.shape[d]
    return max(sum(c * (v.trips - 1) for v, c in r.starts[d].terms.items()) + r.starts[d].const +
               r.sizes[d] for r in rs)


def _shift_on_chip(events) -> None:
    """An on-chip tensor (an accumulator or op value) every access of which starts at least c
    elements into a dimension (the accumulators of a pipelined loop's later stages) has its
    origin moved by c: where a tensor made on chip sits is the trace's choice, not the kernel's."""
    raw, seen = [], set()
    for ev in events:
        for r in tile_refs(ev):
            if id(r) not in seen:
                seen.add(id(r))
                raw.append(r)
    groups: dict = {}
    for r in raw:
        lg = r.logical.find()
        if lg.kind != "hbm":
            groups.setdefault(id(lg), []).append(r)
    for rs in groups.values():
        nd = len(rs[0].starts)
        if any(len(r.starts) != nd for r in rs):
            continue
        for d in range(nd):
            m = min(r.starts[d].const for r in rs)
            if m:  # also below 0: a rolled loop's stage that starts past iteration 0
                for r in rs:
                    r.starts = tuple(x - m if i == d else x for i, x in enumerate(r.starts))


def _drop_unit_dims(events) -> None:
    """Dimensions of one element (a batch of 1, ``x[0, :, :]``) dropped from a tensor and every
    access to it: the same elements and bytes, and no ``:`` the matmul roles cannot place."""
    raw, seen = [], set()
    for ev in events:
        for r in tile_refs(ev):
            if id(r) not in seen:
                seen.add(id(r))
                raw.append(r)
    groups: dict = {}
    for r in raw:
        lg = r.logical.find()
        groups.setdefault(id(lg), (lg, []))[1].append(r)
    kept: dict = {}
    mms = [(ev, ev.stationary.logical.find(), ev.moving.logical.find()) for ev in events
           if isinstance(ev, MatmulEv)]
    for lg, rs in groups.values():
        nd = len(rs[0].starts)
        if nd < 2 or any(len(r.starts) != nd for r in rs):
            continue
        drop = [d for d in range(nd) if _extent(lg, rs, d) == 1 and all(
            not r.starts[d].terms and r.starts[d].const == 0 and r.sizes[d] == 1 for r in rs)]
        if not drop or len(drop) == nd:
            continue
        keep = [d for d in range(nd) if d not in drop]
        kept[id(lg)] = keep
        for r in rs:
            r.starts = tuple(r.starts[d] for d in keep)
            r.sizes = tuple(r.sizes[d] for d in keep)
        if lg.kind == "hbm":
            lg.shape = tuple(lg.shape[d] for d in keep)
        for attr in ("pa_strong", "pa_weak"):
            pa = getattr(lg, attr)
            if pa is not None:
                setattr(lg, attr, keep.index(pa) if pa in keep else None)
    for ev, st, mv in mms:  # the matmuls' M and N dimensions, renumbered
        md, nd_ = ev.free_dims
        ks, km = kept.get(id(st)), kept.get(id(mv))
        ev.free_dims = (ks.index(md) if ks and md in ks else md, km.index(nd_) if km and nd_ in km else nd_)


def _fold_unit_dims(events, notes: list) -> None:
    """A loop that moves tiles by S elements in one tensor and by c < S in another, where the
    second tensor's dimension is walked in tiles of c and another of its dimensions, of S / c
    elements, is always read whole (``scores_t[i, j, :, :]`` next to ``scores[j, :, i*128 ...]``):
    that tensor's two dimensions are read as one (the same tiles, the same bytes), so the loop has
    one step. The tensor's shape in the report shows the merge, and a note says so."""
    raw, seen = [], set()
    for ev in events:
        for r in tile_refs(ev):
            if id(r) not in seen:
                seen.add(id(r))
                raw.append(r)
    groups: dict = {}
    for r in raw:
        lg = r.logical.find()
        groups.setdefault(id(lg), (lg, []))[1].append(r)
    mms = [ev for ev in events if isinstance(ev, MatmulEv)]
    for _ in range(4 * len(groups) + 1):  # each pass folds one pair of dimensions
        if not _fold_one(raw, groups, notes, mms):
            return


def _renumber_free(mms, lg, d: int, e: int) -> None:
    """The matmuls' M and N dimensions of ``lg`` after its dimension ``e`` merged into ``d``."""
    def re(x: int) -> int:
        return d - (d > e) if x == e else x - (x > e)
    for ev in mms:
        md, nn = ev.free_dims
        if ev.stationary.logical.find() is lg:
            md = re(md)
        if ev.moving.logical.find() is lg:
            nn = re(nn)
        ev.free_dims = (md, nn)


def _multi_k(mms) -> dict:
    """id(logical) -> its dimensions that are a matmul's free (M or N) dimension, for the
    operands of matmuls contracting over more than one dimension of an operand."""
    out: dict = {}
    free: dict = {}
    for ev in mms:
        for r, f in ((ev.stationary, ev.free_dims[0]), (ev.moving, ev.free_dims[1])):
            free.setdefault(id(r.logical.find()), set()).add(f)
    for ev in mms:
        for r in (ev.stationary, ev.moving):
            if len(r.starts) > 2:
                out[id(r.logical.find())] = free.get(id(r.logical.find()), set())
    return out


def _fold_one(raw, groups, notes, mms=()) -> bool:
    coefs: dict = {}
    for r in raw:
        for st in r.starts:
            for v, c in st.terms.items():
                coefs.setdefault(v, set()).add(c)
    top = {v: max(cs) for v, cs in coefs.items() if len(cs) > 1}
    multi = _multi_k(mms)
    if not top and not multi:
        return False
    for lg, rs in groups.values():
        nd = len(rs[0].starts)
        if any(len(r.starts) != nd for r in rs):
            continue
        if top and _fold_by_stride(lg, rs, top, notes, mms):
            return True
        if id(lg) in multi:  # a leading dimension walked in unit tiles, merged with the next
            free = multi[id(lg)]
            for d in range(nd - 1):
                e = d + 1
                ext = _extent(lg, rs, e)
                if d in free or e in free or not all(
                        r.sizes[d] == 1 and len(r.starts[d].terms) <= 1 and not r.starts[e].terms
                        and r.starts[e].const == 0 and r.sizes[e] == ext for r in rs):
                    continue
                _merge_dims(lg, rs, mms, d, e, ext)
                notes.append(f"{lg.name}: dimensions {d} and {e} read as one (a matmul contracts "
                             "over both); the same tiles and bytes")
                return True
    return False


def _fold_by_stride(lg, rs, top, notes, mms) -> bool:
    """One fold of :func:`_fold_unit_dims` in ``lg``: a dimension walked by c-element tiles where
    its loop moves other tiles by ``top[v]`` merged with a whole dimension of ``top[v] / c``."""
    nd = len(rs[0].starts)
    for d in range(nd):
        vs = {(v, c) for r in rs for v, c in r.starts[d].terms.items()}
        if not vs or len({c for _, c in vs}) != 1 or any(len(r.starts[d].terms) > 1 for r in rs):
            continue
        c = next(iter(vs))[1]
        bigs = {top[v] for v, _ in vs if v in top}
        if len(bigs) != 1:
            continue
        big = bigs.pop()
        v = next(v for v, _ in vs if v in top)
        if c >= big or big % c or any(r.sizes[d] != c or r.starts[d].const % c for r in rs):
            continue
        cands = [e for e in range(nd) if e != d and _extent(lg, rs, e) * c == big and all(
            not r.starts[e].terms and r.starts[e].const == 0 and r.sizes[e] == _extent(lg, rs, e)
            for r in rs)]
        # several whole dimensions fit (a [kv, q, 128, 128] tensor of tiles): the tile
        # indices pair with the in-tile dimensions in order (kv with the first, q the second)
        walked = [x for x in range(nd) if any(r.starts[x].terms for r in rs)]
        for e in cands[min(walked.index(d), len(cands) - 1):][:1]:
            ext = _extent(lg, rs, e)
            _merge_dims(lg, rs, mms, d, e, ext)
            notes.append(f"{lg.name}: dimensions {d} and {e} read as one of "
                         f"{_extent(lg, rs, d - (d > e)):,} elements (loop {v.name} moves its "
                         f"tiles by {c} and others' by {big}); the same tiles and bytes")
            return True
    return False


def _hoisted(ev: LoadEv) -> tuple:
    """The re-rolled loops a load hoists out of (outermost first): from the innermost, each
    whose iterations' buffers were read after their iteration (a list of tiles used later)."""
    out = []
    for v, bufs, cvar in ev.hoist:
        if not any(id(f) in b.escaped for b in bufs for f in b.homes if f.var is cvar):
            break
        out.append(v)
    return tuple(reversed(out))


def _emitted(ev: OpEv) -> bool:
    """Whether an op event makes a statement: its value is a tensor of its own (materialised),
    itself or merged by a re-roll into the same op's tensor of another stage or iteration (a
    software pipeline's stage reads what the stage before, or the prologue, made), or stored."""
    lg = ev.value
    return lg.materialised and lg.find().kind in ("op", "hbm")


def _absorb(ev: LoadEv) -> TileRef:
    if not ev.absorbed:
        return ev.ref
    starts, sizes = [], []
    for s, n in zip(ev.ref.starts, ev.ref.sizes):
        for v in ev.absorbed:
            c = s.terms.get(v, 0)
            n += c * (v.trips - 1)
        starts.append(s.without(set(ev.absorbed)))
        sizes.append(n)
    return TileRef(ev.ref.logical, tuple(starts), tuple(sizes))


def _chunk(ev: LoadEv) -> tuple[int, ...]:
    """The extent per tensor axis of each transfer of an absorbed load (0: the whole union's),
    () for one transfer: the kernel issues one dma_copy per iteration of the loops the load was
    hoisted out of, so a union along an axis is cut at the smallest stride those loops move it by
    (``for k: dma_copy(tiles[k], A[k*128:(k+1)*128, m])`` is ``load A[:, m] by 128``)."""
    if not ev.absorbed:
        return ()
    out = []
    for s in ev.ref.starts:
        cs = [s.terms[v] for v in ev.absorbed if s.terms.get(v, 0) and v.trips > 1]
        out.append(min(cs) if cs else 0)
    return tuple(out) if any(out) else ()


def _program(rec: Recorder, kernel: ir.Kernel, params):
    """One kernel whose matmuls/ops make on-chip tensors: a Program of one stage, or a line
    saying why it has no op graph (an output made by the stages of a software pipeline)."""
    from loopsim.ir import graph as graph_mod
    from loopsim.frontends.program import Program, Stage

    ops, made = [], {}
    for s, _ in kernel.statements():
        if isinstance(s, ir.Matmul):
            kind, ins, tr = "matmul", (s.stationary.tensor, s.moving.tensor), None
        elif isinstance(s, OpStatement):
            kind, ins, tr = s.kind, tuple(a.tensor for a in s.inputs), None
        else:
            continue
        out = s.out.tensor
        if out in made:
            if made[out][:2] != (kind, ins):
                if kind == made[out][0]:
                    # the stages of a software pipeline: one output made from each stage's own
                    # on-chip values; no op graph, the nest as it was traced
                    return (f"{_where(rec, s.line)}: {out} is made by {kind} ops of different "
                                f"inputs ({', '.join(made[out][1])} and {', '.join(ins)}: the stages "
                                "of a software pipeline): read as one nest without an op graph; W "
                                "and Q are the nest's, the engines' time is the timeline's "
                                "(per-op engine ceilings not drawn: ASSUMED)")
                raise TraceError(f"{_where(rec, s.line)}: {out} is made by two different ops")
            continue
        if kind == "matmul":
            from loopsim.ir.tiles import matmul_roles
            r = matmul_roles(s, kernel)
            tr = (r.k_stationary == 0, r.k_moving == 1)
        else:
            tr = (False,) * len(ins)
        made[out] = (kind, ins, tr)
        ops.append(graph_mod.OpNode(f"make_{out}", kind, ins, tr, out, ""))
    tm = kernel.tensor_map
    produced = set(made)
    read = {i for o in ops for i in o.inputs}
    # produced tensors no op reads and no output: read only where the op graph cannot hold the
    # reader, the kernel is one nest without an op graph
    dead = [t for t in sorted(produced - read) if not tm[t].output]
    drained = {s.src.tensor for s, _ in kernel.statements() if isinstance(s, ir.Accumulate)}
    for readers, by, tail in (
            (getattr(rec, "read_outside", ()), "matmuls kept as Tensor Engine work outside the nest",
             "the nest's and that work's"),
            (drained, "an SBUF accumulation of a PSUM tile, which the op graph does not hold",
             "the nest's")):
        names = [t for t in dead if t in readers]
        if names:
            return (f"{rec.shown}: kernel {rec.func}: {', '.join(names)} "
                    f"{'is' if len(names) == 1 else 'are'} read only by {by}: read as one nest "
                    f"without an op graph; W and Q are {tail} (per-op engine ceilings not drawn: "
                    "ASSUMED)")
    if dead:  # read by nothing the op graph holds (an instruction costed as engine work, a copy
        # whose elements are not followed): the nest is exact, the graph would not be
        return (f"{rec.shown}: kernel {rec.func}: {', '.join(dead)} "
                f"{'is' if len(dead) == 1 else 'are'} read by no op the op graph holds (an "
                "instruction costed as engine work, a copy or store whose elements are not "
                "followed): read as one nest without an op graph; W and Q are the nest's (per-op "
                "engine ceilings not drawn: ASSUMED)")
    inputs = tuple(t.name for t in kernel.tensors if t.name not in produced and t.name in
                   {i for o in ops for i in o.inputs})
    g = graph_mod.build(rec.shown, tuple(ops), inputs, tm)
    stage = Stage(rec.func, tuple(o.name for o in ops), kernel)
    return Program(rec.func, rec.shown, tuple(params), kernel.tensors, tuple(ops), inputs, (stage,), g)
