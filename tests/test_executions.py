"""Sums over executions from the loop structure (interior iterations grouped) against the same
sums over every execution enumerated, for every bundled spec at random shapes and for random
blocked nests with ragged edges and split loops (tests/test_readback.py's generator)."""

import numpy as np
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from loopsim.base.errors import LoopsimError
from loopsim.count import lnc
from loopsim.count.executions import executions
from loopsim.frontends import spec
from loopsim.model import pipeline
from loopsim.targets import hardware

from test_readback import nests

SPECS = spec.bundled_names()


def _sums(kernel, grouped: bool):
    """Per statement and access: executions that run, elements moved, sum of each axis's extent
    and executions per core, summed over every execution."""
    split = lnc.split_loop(kernel)
    out = []
    for stmt, loops in kernel.statements():
        accs = tuple(a for a, _ in stmt.accesses())
        if not accs:
            continue
        ext, exists, weight, core, shape = executions(stmt, loops, accs, kernel, split, grouped=grouped)
        w = np.broadcast_to(weight, shape) if grouped else np.full(shape, weight, dtype=np.int64)
        w = np.where(exists, w, 0)
        row = [int(w.sum())]
        for a in accs:
            elems = np.ones(shape, dtype=np.int64)
            for e in ext[id(a)]:
                elems = elems * e
                row.append(int((w * e).sum()))
            row.append(int((w * elems).sum()))
        if core is not None:
            c = np.broadcast_to(core, shape)
            row.append(tuple(np.bincount(c.ravel(), weights=w.ravel().astype(float)).tolist()))
        out.append(tuple(row))
    return out


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(SPECS), st.data())
def test_grouped_sums_equal_enumerated_sums_on_bundled_specs(name, data):
    sf = spec.read(name)
    sets = {p: data.draw(st.sampled_from([v, v // 2, v // 4, 3 * v // 4, 96, 200, 333]).filter(lambda x: x > 0),
                         label=p)
            for p, v in sf.params.items() if isinstance(v, int) and v > 64}
    try:
        prog = pipeline.load(name, sets)
    except LoopsimError:
        assume(False)
    for stage in prog.stages:
        k = stage.kernel
        if lnc.split_loop(k) is not None:
            k = lnc.cores_nest(k)
        assert _sums(k, True) == _sums(k, False)


@settings(max_examples=150, deadline=None)
@given(nests())
def test_grouped_sums_equal_enumerated_sums_on_ragged_nests(kernel):
    assert _sums(kernel, True) == _sums(kernel, False)


def test_grouping_makes_the_grid_grow_with_the_edges_not_the_trips():
    # 16384^3 matmul with 32^3 tiles: 512^3 matmul executions, all interior, so one cell stands
    # for all of them (hand count: weight 512^3 = 134,217,728)
    k = pipeline.load("matmul", {"M": 16384, "N": 16384, "K": 16384, "TM": 32, "TN": 32, "TK": 32}).stages[0].kernel
    from loopsim.ir.kernel import Matmul
    stmt, loops = next((s, l) for s, l in k.statements() if isinstance(s, Matmul))
    _, exists, weight, _, shape = executions(stmt, loops, (stmt.stationary, stmt.moving), k, None, grouped=True)
    assert shape == (1, 1, 1)
    assert int(np.broadcast_to(weight, shape).sum()) == 512 ** 3
    # a ragged M (16384 + 16): the last m tile stands apart, 513 m iterations -> 2 cells
    k = pipeline.load("matmul", {"M": 16400, "N": 16384, "K": 16384, "TM": 32, "TN": 32, "TK": 32}).stages[0].kernel
    stmt, loops = next((s, l) for s, l in k.statements() if isinstance(s, Matmul))
    ext, exists, weight, _, shape = executions(stmt, loops, (stmt.stationary, stmt.moving), k, None, grouped=True)
    assert sorted(shape) == [1, 1, 2]
    assert int(np.where(exists, np.broadcast_to(weight, shape), 0).sum()) == 513 * 512 * 512


def test_as_written_verdict_at_16384_cubed_is_the_closed_form():
    # the Tensor Engine ceiling of a 16384^3 bf16 matmul with 32^3 tiles on trn2-core: every
    # instruction has K=M=N=32, so the issue rate is 32 / max(32, 64) = 0.5 and the fills are
    # 32/128 each; W = 2 * 16384^3
    hw = hardware.load("trn2-core")
    a = pipeline.analyze(pipeline.load("matmul", {"M": 16384, "N": 16384, "K": 16384, "TM": 32, "TN": 32, "TK": 32}), hw)
    assert a.W == 2 * 16384 ** 3
    c = a.stages[0].ceilings
    assert c.instructions == 512 ** 3
    assert abs(c.get("partition_fill").factor - 0.25) < 1e-12
    assert abs(c.get("column_fill").factor - 0.25) < 1e-12
