"""Partial-sum read-backs counted from the statements (loopsim.count.readback) against the trace's
ACC requests (the walker keeps an accumulation exactly when it reads a stored partial sum back),
on random matmul nests: loop orders, blocked loops whose blocks run past the edge, ragged tiles,
stores at any depth, twice, and loops that index nothing."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from loopsim.count import lnc
from loopsim.frontends import spec
from loopsim.sim import trace
from loopsim.ir.kernel import ACC, Access, Kernel, Load, Loop, Matmul, Store, Tensor
from loopsim.count.readback import read_backs
from loopsim.targets import hardware as _hw_sheets
TRN = _hw_sheets.load("trn2-core")  # 128 SBUF partitions: costs per partition
FLAT = _hw_sheets.load("toy")  # a flat target: costs are bytes


def from_trace(kernel):
    tr = trace.build(kernel)
    return dict(zip(*(x.tolist() for x in np.unique(tr.obj[tr.kind == ACC], return_counts=True))))


def counted(kernel):
    objs, w = read_backs(kernel)
    out = {}
    for o, n in zip(objs.tolist(), w.tolist()):
        out[o] = out.get(o, 0) + n
    return out


@st.composite
def nests(draw):
    dims = {d: draw(st.integers(1, 200)) for d in "mnk"}
    tiles = {d: draw(st.sampled_from([16, 32, 64])) for d in "mnk"}
    loops = []  # (var, extent, step) outer -> inner; a blocked dimension has two loops
    index = {}
    for d in "mnk":
        if draw(st.booleans()):  # blocked: d_b over the dimension by a block, d_t over the block
            block = tiles[d] * draw(st.integers(1, 3))
            loops.append([(d + "b", dims[d], block), (d + "t", block, tiles[d])])
            index[d] = (d + "b", d + "t")
        else:
            loops.append([(d, dims[d], tiles[d])])
            index[d] = (d,)
    order = draw(st.permutations(loops))
    flat = [l for group in order for l in group]
    split = draw(st.sampled_from([None] + [v for v, _, _ in flat if v in ("m", "n")]))
    if draw(st.booleans()):  # a loop that indexes nothing: the same work again
        flat.insert(draw(st.integers(0, len(flat))), ("r", draw(st.integers(1, 3)), 1))
    mm = Matmul(Access("C", (index["m"], index["n"])), Access("A", (index["k"], index["m"])),
                Access("B", (index["k"], index["n"])))
    bound_at = [set(v for v, _, _ in flat[:i]) for i in range(len(flat) + 1)]
    need = set(index["m"]) | set(index["n"])
    ok = [i for i in range(len(flat) + 1) if need <= bound_at[i]]
    stores = draw(st.lists(st.sampled_from(ok), min_size=1, max_size=2))
    after = draw(st.lists(st.booleans(), min_size=len(stores), max_size=len(stores)))

    def body(i):
        items = []
        for s, late in zip(stores, after):
            if s == i and not late:
                items.append(Store(Access("C", (index["m"], index["n"]))))
        if i < len(flat):
            v, e, step = flat[i]
            items.append(Loop(v, e, step, tuple(body(i + 1)), split=2 if v == split else 1))
        else:
            items.append(Load(Access("A", (index["k"], index["m"]))))
            items.append(Load(Access("B", (index["k"], index["n"]))))
            items.append(mm)
        for s, late in zip(stores, after):
            if s == i and late:
                items.append(Store(Access("C", (index["m"], index["n"]))))
        return items

    tensors = (Tensor("A", (dims["k"], dims["m"])), Tensor("B", (dims["k"], dims["n"])),
               Tensor("C", (dims["m"], dims["n"]), output=True))
    return lnc.cores_nest(Kernel("mm", tensors, tuple(body(0))))  # the per-core nests, when split


@settings(max_examples=150, deadline=None)
@given(nests())
def test_read_backs_match_the_trace(kernel):
    assert counted(kernel) == from_trace(kernel)


def test_kouter_reads_each_tile_back_once_per_later_k():
    # k outermost, C[m, n] stored in every k iteration: from the second k on, each C tile is read
    # back once before it accumulates again
    k = spec.load_kernel("matmul_kouter")
    p = dict(k.params)
    got = counted(k)
    assert sum(got.values()) == (p["K"] // p["TK"] - 1) * (p["M"] // p["TM"]) * (p["N"] // p["TN"])
    assert got == from_trace(k)


def test_a_split_kernel_matches_the_trace(split_projection):
    k = lnc.cores_nest(spec.load_kernel(split_projection))
    assert counted(k) == from_trace(k)


def test_dma_report_is_the_same_from_the_trace_fallback(monkeypatch):
    # past MAX_EVENTS the DMA report counts read-backs from the trace's ACC requests instead
    from loopsim.targets.neuron import dma
    from loopsim.targets import hardware
    from loopsim.count import readback

    k, hw = spec.load_kernel("matmul_kouter", {"M": 384, "K": 640}), hardware.load("trn2-core")
    want = dma.report(k, hw)
    monkeypatch.setattr(readback, "MAX_EVENTS", 0)
    assert readback.read_backs(k) is None
    assert dma.report(k, hw) == want


PROGRAMS = ["mlp_fused", "swiglu_mlp", "attention_fused", "mlp_unfused", "attention_unfused",
            "layernorm", "gqa_decode"]


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(PROGRAMS), st.data())
def test_produced_peak_matches_the_trace(name, data):
    # op outputs live from their first request to their last: counted from the statements
    # against stages.produced_peak on the trace, bundled schedules at random smaller shapes
    from hypothesis import assume

    from loopsim.model import pipeline
    from loopsim.count import stages
    from loopsim.frontends import program
    from loopsim.count import readback
    from loopsim.base.errors import LoopsimError

    sf = spec.read(name)
    sets = {p: data.draw(st.sampled_from([v, v // 2, v // 4, 3 * v // 4, 96, 200]).filter(lambda x: x > 0),
                         label=p)
            for p, v in sf.params.items() if isinstance(v, int) and v > 64}
    try:
        prog = pipeline.load(name, sets)
    except LoopsimError:
        assume(False)
    for stage in prog.stages:
        tr = trace.build(stage.kernel)
        for parts in (TRN, FLAT):
            assert readback.produced_peak(stage.kernel, parts) == stages.produced_peak(tr, parts)
