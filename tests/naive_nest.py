"""Slow, obviously correct references for the nest machinery: a plain-Python interpreter of a
kernel's loops (no broadcasting, no mixed radix), and random matmul nests for hypothesis.

The interpreter walks the loops recursively and, for every statement execution, lists the blocks
each tile covers element range by element range. It shares nothing with loopsim.sim.trace except the
block grid (loopsim.ir.tiles.grids), which it uses only to name blocks.
"""

from __future__ import annotations

from hypothesis import strategies as st

from loopsim.ir.kernel import ACC, STORE, Access, Kernel, Load, Loop, Matmul, Store, Tensor
from loopsim.ir.tiles import grids


def interpret(kernel: Kernel, held: list | None = None):
    """(events, flops, instructions): events are (obj, kind) in program order. ``held``, when
    given, receives one bool per event: whether it is a hold request (a repeat, see below)."""
    gs = grids(kernel)
    tm = kernel.tensor_map
    events = []
    flops = 0
    instructions = 0

    def tile_range(acc: Access, axis: int, env: dict, loops: dict):
        # start = offset + sum(coef * var); extent = the explicit one, else the smallest
        # coef * step, else (no variables) the dimension from the offset on
        t = tm[acc.tensor]
        terms = acc.index[axis]
        coefs = acc.coefs[axis] if acc.coefs else (1,) * len(terms)
        off = acc.offsets[axis] if acc.offsets else 0
        ext = acc.extents[axis] if acc.extents else 0
        start = off + sum(env[v] * c for v, c in zip(terms, coefs))
        if not ext:
            ext = min(loops[v].step * c for v, c in zip(terms, coefs)) if terms else t.shape[axis] - off
        return start, min(start + ext, t.shape[axis])

    def blocks(acc, env, loops):
        g = gs[acc.tensor]
        ranges = []
        for axis in range(len(acc.index)):
            lo, hi = tile_range(acc, axis, env, loops)
            b = g.block[axis]
            ranges.append(list(range(lo // b, -(-hi // b))))
        out = [()]
        for r in ranges:
            out = [p + (i,) for p in out for i in r]
        ids = []
        for coords in out:
            lin = 0
            for c, n in zip(coords, g.counts):
                lin = lin * n + c
            ids.append(g.offset + lin)
        return ids

    def past_edge(loop, env):
        # an iteration whose tile (by the first access in the body indexing the loop variable,
        # counting the variables bound so far) starts at or past the tensor's edge does not run
        from loopsim.ir.kernel import walk
        for stmt, _ in walk(loop.body):
            if isinstance(stmt, Loop):
                continue
            for a, _ in stmt.accesses():
                for axis, terms in enumerate(a.index):
                    if loop.var in terms:
                        coefs = a.coefs[axis] if a.coefs else (1,) * len(terms)
                        off = a.offsets[axis] if a.offsets else 0
                        return off + sum(env[v] * c for v, c in zip(terms, coefs) if v in env) >= \
                            tm[a.tensor].shape[axis]
        return False

    def run(body, env, loops):
        nonlocal flops, instructions
        for node in body:
            if isinstance(node, Loop):
                v = 0
                while v < node.extent:
                    inner_env = {**env, node.var: v}
                    if not past_edge(node, inner_env):
                        run(node.body, inner_env, {**loops, node.var: node})
                    v += node.step
                continue
            accs = node.accesses()
            # a statement whose tile starts beyond a tensor's edge does not execute
            if any(tile_range(a, ax, env, loops)[0] >= tm[a.tensor].shape[ax]
                   for a, _ in accs for ax in range(len(a.index))):
                continue
            # an instruction holds all its tiles at once: when it touches two or more outside
            # PSUM accumulation, they are requested again, in the same order, right after the
            # first pass and before any accumulation (which stays the last request)
            hold = [(a, kind) for a, kind in accs if kind != ACC]
            seq = [(a, kind, False) for a, kind in accs]
            if len(hold) > 1:
                seq = [(a, kind, False) for a, kind in hold] + [(a, kind, True) for a, kind in hold] + \
                    [(a, kind, False) for a, kind in accs if kind == ACC]
            for a, kind, again in seq:
                for o in blocks(a, env, loops):
                    events.append((o, kind, again))
            if isinstance(node, Matmul):
                from loopsim.ir.tiles import matmul_roles
                r = matmul_roles(node, kernel)
                k0, k1 = tile_range(node.stationary, r.k_stationary, env, loops)
                m0, m1 = tile_range(node.stationary, r.m_stationary, env, loops)
                n0, n1 = tile_range(node.moving, r.n_moving, env, loops)
                flops += 2 * (k1 - k0) * (m1 - m0) * (n1 - n0)
                instructions += 1

    run(kernel.body, {}, {})
    # keep an accumulation only where it follows a store of the same tile (a partial sum read back)
    last = {}
    kept = []
    for o, k, h in events:
        if k == ACC:
            if last.get(o) == STORE:
                kept.append((o, k, h))
            last[o] = ACC
            continue
        if k == STORE:
            last[o] = STORE
        kept.append((o, k, h))
    if held is not None:
        held.extend(h for _, _, h in kept)
    return [(o, k) for o, k, _ in kept], flops, instructions


def matmul_kernel(M, N, K, TM, TN, TK, order="mnk", a_level=3, b_level=3, dtype="bf16"):
    """C = A.B (A is K x M, lhsT) with loops in ``order`` (outer to inner). A load sits in the body
    at depth ``a_level`` (0 = outside every loop, 3 = innermost); dimensions whose loop variable is
    not bound there are loaded whole (':'), which is hoisting. The store of C sits after the
    contraction when k is inside both m and n, else right after the matmul (partial sums)."""
    steps = {"m": (M, TM), "n": (N, TN), "k": (K, TK)}
    depth = {v: i + 1 for i, v in enumerate(order)}
    a_idx = lambda lvl: ((("k",) if depth["k"] <= lvl else ()), (("m",) if depth["m"] <= lvl else ()))
    b_idx = lambda lvl: ((("k",) if depth["k"] <= lvl else ()), (("n",) if depth["n"] <= lvl else ()))
    store_level = max(depth["m"], depth["n"])
    mm = Matmul(Access("C", (("m",), ("n",))), Access("A", (("k",), ("m",))),
                Access("B", (("k",), ("n",))))

    def body(d):
        items = []
        if a_level == d:
            items.append(Load(Access("A", a_idx(d))))
        if b_level == d:
            items.append(Load(Access("B", b_idx(d))))
        if d < 3:
            v = order[d]
            ext, step = steps[v]
            items.append(Loop(v, ext, step, tuple(body(d + 1))))
        else:
            items.append(mm)
        if store_level == d:
            items.append(Store(Access("C", (("m",), ("n",)))))
        return items

    tensors = (Tensor("A", (K, M), dtype), Tensor("B", (K, N), dtype),
               Tensor("C", (M, N), dtype, output=True))
    return Kernel("mm", tensors, tuple(body(0)))


@st.composite
def matmul_nests(draw, max_dim=300):
    """Random small matmul nests: shapes (ragged tiles included), loop order, load placement."""
    M = draw(st.integers(1, max_dim))
    N = draw(st.integers(1, max_dim))
    K = draw(st.integers(1, max_dim))
    TM = draw(st.sampled_from([16, 32, 64, 128]))
    TK = draw(st.sampled_from([16, 32, 64, 128]))
    TN = draw(st.sampled_from([16, 32, 64, 128, 256, 512]))
    order = draw(st.sampled_from(["mnk", "nmk", "kmn", "mkn", "knm", "nkm"]))
    a_level = draw(st.integers(0, 3))
    b_level = draw(st.integers(0, 3))
    return matmul_kernel(M, N, K, TM, TN, TK, order, a_level, b_level)
