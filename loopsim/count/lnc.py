"""LNC scope: a loop split across the physical cores of a logical NeuronCore, counted per core.

With LNC=2 (``kernel[2]`` in NKI) the same program runs on each physical core; each core takes its
share of the split loop's iterations (a contiguous block of ceil(trips / cores) of them, the last
core taking the ragged rest) and runs everything else in full. So a load that the split loop does
not index is made by every core and crosses HBM once per core (curriculum Day 6: "Anything loaded
unconditionally is loaded on both cores, so it crosses HBM twice"), while a load of a tensor
indexed by the split dimension loads the core's slice.

SPMD: the split loop's index names a dimension (by the shape's name: ``x`` [B, D] indexed ``x[b, d]``
makes B the split dimension); each core owns its slice of that dimension, in every tensor that has
it, wherever the access sits. A whole-tensor load ``load x[:, :]`` outside the token loop loads the
core's slice of x only; a tensor without the dimension (the weights) is loaded whole by every core.

The split is modelled as a pure transform (:func:`cores_nest`): the whole nest is wrapped in an
outermost loop over cores, and the split loop ``for v in E by s`` becomes ``for v in S by s`` inside
it with every index ``v`` rewritten ``c + v`` (S = the share, the core loop steps by S), keeping the
identity ``v_original = c + v``; a ``:`` over the split dimension becomes ``c`` (a tile of S). Every core has its own SBUF, so ``lru``/``opt`` replay each core's
slice of the trace with a fresh SBUF of the per-core capacity; ``as-written`` needs no cache.

Scope rule (:func:`check_scope`): the number of physical cores a kernel runs on must equal the
sheet's ``physical_cores``; a whole-chip or LNC=2 sheet for a one-core kernel (or the reverse) is an
error unless explicitly allowed.
"""

from __future__ import annotations

import dataclasses

from loopsim.base.errors import HardwareError, SpecError
from loopsim.ir.kernel import Access, Kernel, Loop, Matmul, Node, walk
from loopsim.ir.tiles import matmul_roles


def split_loops(kernel: Kernel) -> list[Loop]:
    return [n for n, _ in walk(kernel.body) if isinstance(n, Loop) and n.split > 1]


def split_loop(kernel: Kernel) -> Loop | None:
    """The loop divided among physical cores (the first, when sibling loops of the same variable
    walk the split dimension, e.g. a compute loop and a store loop over M), or None. Loops of
    different variables, or siblings that would give the cores different slices, are refused."""
    loops = split_loops(kernel)
    where = kernel.source or kernel.name
    if len({l.var for l in loops}) > 1:
        raise SpecError(f"{where}: loops {', '.join(l.var for l in loops)} are all split across "
                        "cores; LNC splits one loop")
    if len({(share(l)[1], l.split) for l in loops}) > 1:
        raise SpecError(f"{where}: the loops over {loops[0].var} split across cores would give each "
                        f"core different slices ({', '.join(str(share(l)[1]) for l in loops)} "
                        "elements); give them steps whose per-core shares agree")
    return loops[0] if loops else None


def kernel_cores(kernel: Kernel) -> int:
    """Physical cores the kernel runs on (the split loop's ``split``, 1 when none is split)."""
    loop = split_loop(kernel)
    return loop.split if loop else 1


def token_loop(kernel: Kernel) -> str:
    """The default loop to split: the outermost loop of the first matmul's M (token) index."""
    where = kernel.source or kernel.name
    for stmt, loops in kernel.statements():
        if isinstance(stmt, Matmul):
            r = matmul_roles(stmt, kernel)
            mvars = set(stmt.out.index[r.m_out])
            for l in loops:
                if l.var in mvars:
                    return l.var
            raise SpecError(f"{where}: {stmt.where()}: its M index is ':', so there is no token loop "
                            "to split; name one with [lnc] split = \"VAR\" or --split VAR")
    raise SpecError(f"{where}: no matmul, so there is no default token loop to split; name one "
                    "with [lnc] split = \"VAR\" or --split VAR")


def with_split(kernel: Kernel, cores: int, var: str | None = None, *, flag: str = "--split") -> Kernel:
    """The kernel with loop ``var`` (default: the one already split, else the token loop) divided
    among ``cores`` physical cores; ``cores = 1`` removes any split. Pure: returns a new kernel."""
    if isinstance(cores, bool) or not isinstance(cores, int) or cores < 1:
        raise SpecError(f"--lnc {cores!r}: must be a positive integer (physical cores)")
    current = split_loop(kernel)
    if var is None:
        var = current.var if current else (token_loop(kernel) if cores > 1 else None)
    loops = {n.var: n for n, _ in walk(kernel.body) if isinstance(n, Loop)}
    if var is not None and var not in loops:
        raise SpecError(f"{flag} {var}: {kernel.source or kernel.name} has no loop '{var}'; "
                        f"its loops: {', '.join(loops) or '(none)'}")

    def rebuild(body: tuple[Node, ...]) -> tuple[Node, ...]:
        out = []
        for n in body:
            if isinstance(n, Loop):
                split = cores if n.var == var else 1
                n = dataclasses.replace(n, body=rebuild(n.body), split=split)
            out.append(n)
        return tuple(out)

    return dataclasses.replace(kernel, body=rebuild(kernel.body))


def _fresh(kernel: Kernel, base: str) -> str:
    taken = {n.var for n, _ in walk(kernel.body) if isinstance(n, Loop)}
    taken |= {t.name for t in kernel.tensors} | {p for p, _ in kernel.params}
    name, i = f"{base}_core", 2
    while name in taken:
        name, i = f"{base}_core{i}", i + 1
    return name


def _plain(acc: Access) -> Access:
    if not acc.plain:
        raise SpecError(f"{acc}: a tile at a constant offset, with a coefficient or an explicit "
                        "extent is not split across cores (LNC); write it with plain loop indices "
                        "or drop the [lnc] split")
    return acc


def _subst_access(acc: Access, var: str, terms: tuple[str, ...]) -> Access:
    _plain(acc)
    idx = tuple(tuple(t for v in ix for t in (terms if v == var else (v,))) for ix in acc.index)
    return dataclasses.replace(acc, index=idx)


def _subst_stmt(stmt, var: str, terms: tuple[str, ...]):
    """Rewrite every Access field (or tuple of Accesses) of a statement: var -> terms."""
    changes = {}
    for f in dataclasses.fields(stmt):
        v = getattr(stmt, f.name)
        if isinstance(v, Access):
            changes[f.name] = _subst_access(v, var, terms)
        elif isinstance(v, tuple) and v and all(isinstance(a, Access) for a in v):
            changes[f.name] = tuple(_subst_access(a, var, terms) for a in v)
    return dataclasses.replace(stmt, **changes) if changes else stmt


def split_dimensions(kernel: Kernel, loop: Loop) -> frozenset[tuple[str, int]]:
    """(tensor, axis) of every dimension the cores slice: those the split loop's variable indexes,
    and every dimension of another tensor with the same shape name (the same dimension)."""
    tm = kernel.tensor_map
    hit = {(a.tensor, axis) for stmt, _ in kernel.statements() for a, _ in stmt.accesses()
           for axis, ix in enumerate(a.index) if loop.var in ix}
    names = {tm[t].shape_names[ax] for t, ax in hit if tm[t].shape_names}
    same = {(t.name, ax) for t in kernel.tensors if t.shape_names
            for ax, name in enumerate(t.shape_names) if name in names}
    return frozenset(hit | same)


def _slice_stmt(stmt, kernel: Kernel, dims, cvar: str, loop: Loop):
    """Make every access over a split dimension that the split loop does not index touch the
    core's slice: ``:`` becomes ``c``. An index by another loop over that dimension is refused
    (its loop would have to shrink to the core's share)."""
    changes = {}
    for f in dataclasses.fields(stmt):
        acc = getattr(stmt, f.name)
        if not isinstance(acc, Access) or not any((acc.tensor, ax) in dims for ax in range(len(acc.index))):
            continue
        idx = list(_plain(acc).index)
        for ax, ix in enumerate(idx):
            if (acc.tensor, ax) not in dims or cvar in ix:
                continue
            if ix:
                name = kernel.tensor_map[acc.tensor].dim_label(ax)
                raise SpecError(
                    f"{kernel.source or kernel.name}: {stmt.where()}: '{stmt}' indexes {acc.tensor}'s "
                    f"dimension {name}, which loop {loop.var} splits across cores, with "
                    f"{' + '.join(ix)}; each core holds only its slice of {name}: index it with "
                    f"{loop.var} (inside that loop) or ':' (the core's whole slice)")
            idx[ax] = (cvar,)
        changes[f.name] = dataclasses.replace(acc, index=tuple(idx))
    return dataclasses.replace(stmt, **changes) if changes else stmt


def share(loop: Loop) -> tuple[int, int]:
    """(trips per core, elements per core) of a split loop: contiguous blocks, last core ragged."""
    trips = -(-loop.trips // loop.split)
    return trips, trips * loop.step


def cores_nest(kernel: Kernel, first_cores: int | None = None) -> Kernel:
    """The per-core programs of a split kernel as one plain nest (no split left).

    ``for c in CORES*S by S:`` wraps the whole body (each core runs every statement outside the
    split loop); the split loop ``for v in E by s`` becomes ``for v in S by s`` with ``v`` indexed as
    ``c + v`` (when a core gets one trip, as ``c`` alone). Tiles past the tensor's edge do not exist,
    so the last core's share is ragged exactly as the original loop was. ``first_cores`` keeps only
    the first cores (used to find where each core's slice of the trace starts).
    """
    loop = split_loop(kernel)
    if loop is None:
        return kernel
    s = share(loop)[1]
    cvar = _fresh(kernel, loop.var)
    dims = split_dimensions(kernel, loop)

    def rebuild(body: tuple[Node, ...], terms: tuple[str, ...] | None) -> tuple[Node, ...]:
        out = []
        for n in body:
            if isinstance(n, Loop):
                ext, inner = n.extent, terms
                if n.split > 1:  # every sibling loop over the split dimension shrinks to the share
                    ext, inner = s, (cvar, n.var) if share(n)[0] > 1 else (cvar,)
                n = dataclasses.replace(n, body=rebuild(n.body, inner), extent=ext, split=1)
            else:
                if terms is not None:
                    n = _subst_stmt(n, loop.var, terms)
                n = _slice_stmt(n, kernel, dims, cvar, loop)
            out.append(n)
        return tuple(out)

    n_cores = loop.split if first_cores is None else first_cores
    core = Loop(cvar, n_cores * s, s, rebuild(kernel.body, None), loop.line, spmd=True)
    return dataclasses.replace(kernel, body=(core,))


def count_split(kernel: Kernel, *, policy: str, capacity: int, target):
    """Counts of a split kernel: the sum over its physical cores, each with its own SBUF of
    ``capacity`` (per-core units, as :func:`loopsim.count.counts.count`). Residency is the largest core's."""
    from loopsim.sim import trace as trace_mod
    from loopsim.count.counts import Counts, TensorCounts, count, with_work_flops

    loop = split_loop(kernel)
    whole = cores_nest(kernel)
    if loop is None or policy == "as-written":
        # every executed load crosses; the core loop's body is one core's program, so the live
        # peak is one core's peak against one core's SBUF
        c = count(whole, policy=policy, capacity=capacity, target=target)
        return dataclasses.replace(c, kernel=kernel.name, compulsory_bytes=kernel.compulsory_bytes)
    tr = trace_mod.build(whole)
    bounds = [0] + [trace_mod.build(cores_nest(kernel, k)).n for k in range(1, loop.split)] + [tr.n]
    import numpy as np

    # blocks that live only on chip (an op makes them, nothing stores them): each core frees its
    # own at its own last use of them
    temp = None if tr.dead is None else np.unique(tr.obj[tr.dead])
    per_core = []
    for lo, hi in zip(bounds, bounds[1:]):
        # one core's requests, replayed with a fresh SBUF; W and the instruction count stay the
        # whole kernel's (count() checks them against the shapes once)
        obj = tr.obj[lo:hi]
        dead = None
        if temp is not None:
            _, last_rev = np.unique(obj[::-1], return_index=True)
            dead = np.zeros(obj.size, dtype=bool)
            dead[obj.size - 1 - last_rev] = True
            dead &= np.isin(obj, temp)
        part = dataclasses.replace(tr, obj=obj, kind=tr.kind[lo:hi], dead=dead)
        per_core.append(count(whole, policy=policy, capacity=capacity, target=target, trace=part))
    first = per_core[0]
    tensors = tuple(TensorCounts(t.name, t.bytes, sum(c.tensor_map[t.name].read_bytes for c in per_core),
                                 sum(c.tensor_map[t.name].write_bytes for c in per_core), t.output)
                    for t in first.tensors)
    res = max((c.residency for c in per_core), key=lambda r: r.peak_cost)
    return with_work_flops(Counts(kernel.name, policy, tr.flops, tr.instructions, tensors,
                                  kernel.compulsory_bytes, res), kernel)


def check_scope(kernel: Kernel, hw, *, allow: bool = False) -> None:
    """Refuse a sheet whose scope (physical cores) differs from the kernel's, unless ``allow``."""
    k, h = kernel_cores(kernel), hw.physical_cores
    if k == h or allow:
        return
    loop = split_loop(kernel)
    if k < h:
        try:
            hint = f"pass --lnc {h} to split its token loop {token_loop(kernel)} across them"
        except SpecError:
            hint = f"pass --lnc {h} --split VAR to split a loop across them"
        raise HardwareError(
            f"--hardware {hw.name}: the sheet covers {h} physical cores ({hw.scope}) but kernel "
            f"{kernel.name} runs on {k}, so its roofs would be {h // k}x too high: {hint}, use a "
            f"{k}-core sheet, or pass --allow-scope-mismatch")
    raise HardwareError(
        f"--hardware {hw.name}: kernel {kernel.name} splits loop {loop.var} across {k} physical cores "
        f"but the sheet covers {h} ({hw.scope}): use a sheet of {k}-core scope (`loopsim "
        f"hardware` lists each sheet's scope), --lnc {h}, or pass --allow-scope-mismatch")
