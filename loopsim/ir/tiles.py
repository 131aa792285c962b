"""Tile geometry: the extent of every access, each tensor's block grid, and matmul tile roles.

A tensor touched with tiles of different shapes is divided into blocks at the common refinement of
its tile grids: per dimension the block size is the gcd of the steps (times their coefficients)
that index it and of every tile's constant offset and explicit extent, so every tile is a whole
number of blocks (a ragged last tile covers the ragged last blocks).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from loopsim.base.errors import SpecError
from loopsim.ir.kernel import Access, Accumulate, Kernel, Loop, Matmul, Store, Tensor, tile_extent, walk


def full_extent(acc: Access, axis: int, loops: tuple[Loop, ...], tensor: Tensor) -> int:
    """Extent (elements) of the tile in ``axis`` before clipping at the tensor's edge."""
    return tile_extent(acc, axis, {l.var: l.step for l in loops}, tensor)


def span(acc: Access, axis: int, loops: tuple[Loop, ...], t: Tensor) -> int:
    """The elements of ``t``'s dimension ``axis`` the tiles of ``acc`` cover (the whole dimension
    for today's accesses; for a tile at an offset or of an explicit extent, the union of its
    tiles over every iteration: ``x[128:256]`` spans 128)."""
    if acc.plain:
        return t.shape[axis]
    d = t.shape[axis]
    starts = {acc.offset_of(axis)}
    bound = {l.var: l for l in loops}
    for v, c in acc.terms_of(axis):
        st = bound[v].step * c
        starts = {s0 + i * st for s0 in starts for i in range(min(bound[v].trips, -(-d // st)))
                  if s0 + i * st < d}
    ext = tile_extent(acc, axis, {l.var: l.step for l in loops}, t)
    covered, end = 0, 0
    for s0 in sorted(starts):
        lo, hi = max(s0, end), min(d, s0 + ext)
        if hi > lo:
            covered += hi - lo
            end = hi
    return covered


def full_tile(acc: Access, loops: tuple[Loop, ...], tensor: Tensor) -> tuple[int, ...]:
    """Shape of a full (not ragged) tile of the access, elements per dimension."""
    return tuple(full_extent(acc, a, loops, tensor) for a in range(len(tensor.shape)))


@dataclass(frozen=True, slots=True)
class Grid:
    """A tensor's block grid: block size and count per dimension, and its first object id."""

    tensor: Tensor
    block: tuple[int, ...]
    counts: tuple[int, ...]
    offset: int

    @property
    def n_blocks(self) -> int:
        return math.prod(self.counts)


def grids(kernel: Kernel) -> dict[str, Grid]:
    """Block grid of every tensor (common refinement of all its tile grids); dense object ids."""
    tmap = kernel.tensor_map
    gcds: dict[str, list[int]] = {t.name: [0] * len(t.shape) for t in kernel.tensors}
    for stmt, loops in kernel.statements():
        steps = {l.var: l.step for l in loops}
        for acc, _ in stmt.accesses():
            g = gcds[acc.tensor]
            t = tmap[acc.tensor]
            for axis, terms in enumerate(acc.index):
                for v, c in acc.terms_of(axis):
                    g[axis] = math.gcd(g[axis], steps[v] * c)
                if not acc.plain:  # every tile's start and end fall on block boundaries
                    off = acc.offset_of(axis)
                    end = off + tile_extent(acc, axis, steps, t)
                    g[axis] = math.gcd(math.gcd(g[axis], off), end if end < t.shape[axis] else 0)
    out: dict[str, Grid] = {}
    offset = 0
    for t in kernel.tensors:
        block = tuple(min(d, g) if g else d for d, g in zip(t.shape, gcds[t.name]))
        counts = tuple(-(-d // b) for d, b in zip(t.shape, block))
        out[t.name] = Grid(t, block, counts, offset)
        offset += math.prod(counts)
    return out


@dataclass(frozen=True, slots=True)
class MatmulRoles:
    """Which operand axis is K, M and N, and the batch axes. Axes index the tensors' shapes;
    ``batch`` holds (stationary axis, moving axis, output axis) per batch dimension; ``unit``
    (operand: 0 stationary, 1 moving, 2 output; axis) per index of one element per instruction
    that has no role (``x[m, k, h] @ w[k, h, n]`` walking h by a loop): each value of it is
    instructions of their own."""

    k_stationary: int
    m_stationary: int
    k_moving: int
    n_moving: int
    m_out: int
    n_out: int
    batch: tuple[tuple[int, int, int], ...] = ()
    unit: tuple[tuple[int, int], ...] = ()


def _axis_names(acc: Access, t: Tensor) -> list[tuple]:
    """The name of each axis of an access: its index variables, or for ':' the shape's name of
    the dimension it spans (a tensor built without names: a name no other axis shares)."""
    return [("var", frozenset(ix)) if ix else
            ("dim", t.shape_names[a]) if t.shape_names else ("anon", t.name, a)
            for a, ix in enumerate(acc.index)]


def _shown(name: tuple) -> str:
    return " + ".join(sorted(name[1])) if name[0] == "var" else f"':' over {name[1]}" \
        if name[0] == "dim" else f"':' over dimension {name[2]} of {name[1]}"


def _reused_axes(names: list, accs: tuple, ts: tuple, loops) -> set[int]:
    """Output axes that are one reused tile (``ps[:, n] += a[k, m] @ b[k, n]``, the accumulator
    allocated inside the loop over m): where M (N) has no name in the output, an index of the
    stationary (moving) input only and a ':' of the output only, of the operand's tile extent,
    are the same dimension. Renames the output's axis in ``names`` to the operand's name and
    returns the output axes so paired."""
    if loops is None:
        return set()
    sa, sb, sc = (set(ns) for ns in names)
    out: set[int] = set()
    for i, (si, so) in ((0, (sa, sb)), (1, (sb, sa))):
        if (si & sc) - so:
            continue  # the role has its name
        mine = [n for n in si - so - sc if n[0] == "var"]
        whole = [o for o, n in enumerate(names[2]) if n[0] != "var" and n not in sa | sb]
        if len(mine) != 1 or len(whole) != 1:
            continue
        axis = names[i].index(mine[0])
        if full_extent(accs[i], axis, loops, ts[i]) == ts[2].shape[whole[0]]:
            names[2][whole[0]] = mine[0]
            out.add(whole[0])
    return out


def _loops_of(kernel: Kernel) -> dict[int, tuple[Loop, ...]]:
    """id(statement) -> its enclosing loops, kept with the kernel."""
    got = kernel._derived.get("loops_of")
    if got is None:
        got = kernel._derived["loops_of"] = {id(s): l for s, l in kernel.statements()}
    return got


def matmul_roles(mm: Matmul, kernel: Kernel) -> MatmulRoles:
    """Resolve K, M, N (and batch axes) of a matmul by the einsum rule on axis names.

    An axis's name is its index (``k`` in ``A[k, m]``; ``kb + kt`` for a blocked index) or, for
    ``:``, the shape's name of the dimension it spans. A name in both inputs and the output is a
    batch index (one instruction per value), in both inputs only is K, in the stationary input and
    the output is M, in the moving input and the output is N. Raise SpecError if the names do not
    give exactly one K, one M and one N.
    """
    tm = kernel.tensor_map
    where = f"{kernel.source or kernel.name}: {mm.where()}"
    a, b, c = mm.stationary, mm.moving, mm.out
    ta, tb, tc = tm[a.tensor], tm[b.tensor], tm[c.tensor]
    names = [_axis_names(x, t) for x, t in ((a, ta), (b, tb), (c, tc))]
    hint = ("index each dimension with the loop variable that walks it, or give the tensors' "
            "shapes distinct names (shape = [\"K\", \"M\"]) so that ':' names the dimension it spans")
    for x, ns in zip((a, b, c), names):
        dup = {n for n in ns if ns.count(n) > 1}
        if dup:
            raise SpecError(f"{where}: cannot tell the dimensions of {x} apart in '{mm}': "
                            f"{_shown(sorted(dup, key=str)[0])} names two of them; {hint}")
    loops = _loops_of(kernel).get(id(mm))
    reused = _reused_axes(names, (a, b, c), (ta, tb, tc), loops)
    sa, sb, sc = (set(ns) for ns in names)
    roles = {"K": (sa & sb) - sc, "M": (sa & sc) - sb, "N": (sb & sc) - sa}
    stray = (sa | sb | sc) - (sa & sb) - (sa & sc) - (sb & sc)
    unit: dict = {}  # name -> (operand 0/1/2, axis) of a dropped one-element index
    if (stray or any(len(v) != 1 for v in roles.values())) and loops is not None:
        # an index of one element per instruction, not in all three, selects a slice (a batch
        # entry, one tap of a second contraction dimension walked by a loop): no role
        steps = {l.var: l.step for l in loops}
        for j, (ns, x, t, st) in enumerate(zip(names, (a, b, c), (ta, tb, tc), (sa, sb, sc))):
            one = {n: i for i, n in enumerate(ns) if n[0] == "var" and n in
                   (sa | sb | sc) - (sa & sb & sc) and tile_extent(x, i, steps, t) == 1}
            st -= set(one)
            unit.update({n: (j, i) for n, i in one.items() if n not in unit})
        roles = {"K": (sa & sb) - sc, "M": (sa & sc) - sb, "N": (sb & sc) - sa}
        stray = (sa | sb | sc) - (sa & sb) - (sa & sc) - (sb & sc)
    if stray or any(len(v) != 1 for v in roles.values()):
        found = "; ".join(f"{r} = {', '.join(_shown(n) for n in sorted(v, key=str)) or 'none'}"
                          for r, v in roles.items())
        extra = f"; {', '.join(_shown(n) for n in sorted(stray, key=str))} appear(s) in one tensor only" \
            if stray else ""
        raise SpecError(f"{where}: cannot tell M and N apart in '{mm}' (einsum rule: K in both "
                        f"inputs only, M in the stationary input and the output, N in the moving "
                        f"input and the output, batch in all three): {found}{extra}; {hint}")
    (k,), (m,), (n,) = roles.values()
    ax = lambda i, name: names[i].index(name)  # noqa: E731
    k_s, m_s, k_m, n_m, m_out, n_out = ax(0, k), ax(0, m), ax(1, k), ax(1, n), ax(2, m), ax(2, n)
    batch = tuple((ax(0, x), ax(1, x), ax(2, x)) for x in names[2] if x in sa & sb & sc)
    for x, xa, y, ya, what in [(a, k_s, b, k_m, "K"), (a, m_s, c, m_out, "M"),
                               (b, n_m, c, n_out, "N")] + \
            [(t1, p1, t2, p2, f"batch dimension {tc.dim_label(o)}") for bs, bm, o in batch
             for t1, p1, t2, p2 in ((a, bs, c, o), (b, bm, c, o))]:
        sx, sy = tm[x.tensor].shape[xa], tm[y.tensor].shape[ya]
        if y is c and ya in reused:  # one output tile, rewritten for each operand tile
            sx = full_extent(x, xa, loops, tm[x.tensor])
        elif sx != sy:
            # a tile at an offset, of its own extent, or under a loop that walks part of the
            # dimension (a fixed slice of M, K at an offset): the elements the tiles cover,
            # over the nest's loops, are what must agree
            if loops is not None:
                sx, sy = span(x, xa, loops, tm[x.tensor]), span(y, ya, loops, tm[y.tensor])
        if sx != sy:
            raise SpecError(f"{where}: {what} differs: {x.tensor} has {sx} "
                            f"but {y.tensor} has {sy}")
    for t, axis, role in ((ta, k_s, "stationary"), (tb, k_m, "moving")):
        if t.partition_axis != axis:
            raise SpecError(
                f"{where}: the {role} operand {t.name} must hold the contraction dimension "
                f"(axis {axis}) on SBUF's partitions, but its partition_axis is {t.partition_axis}; "
                f"set tensors.{t.name}.partition_axis = {axis} (a transposing load costs no extra HBM bytes)")
    return MatmulRoles(k_s, m_s, k_m, n_m, m_out, n_out, batch, tuple(unit.values()))


def batch_size(mm: Matmul, kernel: Kernel) -> int:
    """Values of the batch indices of a matmul (1 without batch axes): instructions per (m, n, k)."""
    r = matmul_roles(mm, kernel)
    t = kernel.tensor_map[mm.out.tensor]
    return math.prod(t.shape[o] for _, _, o in r.batch)


def matmul_tile(mm: Matmul, loops: tuple[Loop, ...], kernel: Kernel) -> tuple[int, int, int]:
    """(K_t, M_t, N_t) of a full instruction of this matmul, elements."""
    r = matmul_roles(mm, kernel)
    tm = kernel.tensor_map
    a, b = tm[mm.stationary.tensor], tm[mm.moving.tensor]
    kt = full_extent(mm.stationary, r.k_stationary, loops, a)
    mt = full_extent(mm.stationary, r.m_stationary, loops, a)
    nt = full_extent(mm.moving, r.n_moving, loops, b)
    return kt, mt, nt


def loop_edges(kernel: Kernel) -> dict[int, tuple[tuple[str, ...], int]]:
    """Where each loop's iterations run past a tensor's edge: id(loop) -> (terms, extent), the
    iteration not running where ``sum(coef * var) >= extent`` over ``terms`` ((var, coef) pairs).

    An iteration of ``for mi in BM by TM`` under ``for mb in M by BM`` whose tile would start at
    mb + mi >= M does not exist, for every statement in its body (a statement that does not index
    mi does not run there either). The rule comes from the first access in the loop's body that
    indexes its variable: ``terms`` are that index's variables bound at the loop (the loop's and
    its enclosing loops') with their coefficients, ``extent`` the size of that dimension less the
    access's constant offset. Loops whose variable no access
    in their body uses are absent, and so is the loop over the cores of an LNC split
    (``spmd``): each core runs the whole program, its accesses clipped to its slice one by one.
    """
    out: dict[int, tuple[tuple[str, ...], int]] = {}
    tm = kernel.tensor_map

    def visit(body, bound: tuple[str, ...]):
        for node in body:
            if isinstance(node, Loop):
                here = bound + (node.var,)
                for stmt, _ in (() if node.spmd else walk(node.body)):
                    if isinstance(stmt, Loop):
                        continue
                    hit = next(((acc, axis) for acc, _ in stmt.accesses()
                                for axis, terms in enumerate(acc.index) if node.var in terms), None)
                    if hit:
                        acc, axis = hit
                        out[id(node)] = (tuple((v, c) for v, c in acc.terms_of(axis) if v in here),
                                         tm[acc.tensor].shape[axis] - acc.offset_of(axis))
                        break
                visit(node.body, here)

    visit(kernel.body, ())
    return out


def accumulator_holds(kernel: Kernel, target) -> dict[int, int]:
    """SBUF held by the accumulators of ``acc`` statements, as written: id(node) -> cost.

    An SBUF accumulator tile lives from its first ``acc`` until the store that writes it out, so
    within one iteration of the innermost loop enclosing both the acc and that store, every tile
    the acc touches is held at once. The cost (tiles x ``target.tile_cost`` of one) is charged
    from the node of that loop's body which contains the acc, to the end of the body.
    """
    stmts = list(kernel.statements())
    tm = kernel.tensor_map
    out: dict[int, int] = {}
    for i, (stmt, loops) in enumerate(stmts):
        if not isinstance(stmt, Accumulate):
            continue
        t = tm[stmt.out.tensor]
        drain = next((ls for s, ls in stmts[i + 1:]
                      if isinstance(s, Store) and s.tile.tensor == t.name), ())
        c = 0
        while c < min(len(loops), len(drain)) and loops[c] is drain[c]:
            c += 1
        tiles = math.prod(l.trips for l in loops[c:] if l.var in stmt.out.variables)
        node = loops[c] if c < len(loops) else stmt
        out[id(node)] = out.get(id(node), 0) + tiles * target.tile_cost(
            full_tile(stmt.out, loops, t), t)
    return out
