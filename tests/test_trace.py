"""Trace expansion: the vectorised trace equals a plain-Python interpretation of the nest."""

import numpy as np
from hypothesis import given

from loopsim.frontends import spec
from loopsim.sim import trace
from loopsim.count.counts import shape_flops
from loopsim.ir.kernel import ACC, LOAD, STORE, USE
from loopsim.ir.tiles import grids

from naive_nest import interpret, matmul_kernel, matmul_nests


@given(matmul_nests())
def test_trace_matches_interpreter_access_for_access(kernel):
    tr = trace.build(kernel)
    events, flops, instructions = interpret(kernel)
    assert list(zip(tr.obj.tolist(), tr.kind.tolist())) == events
    assert tr.flops == flops == shape_flops(kernel)  # and W from the shapes: 2*M*N*K
    assert tr.instructions == instructions


@given(matmul_nests())
def test_block_bytes_tile_each_tensor_exactly(kernel):
    tr = trace.build(kernel)
    for t in kernel.tensors:
        g = grids(kernel)[t.name]
        assert int(tr.obj_bytes[g.offset:g.offset + g.n_blocks].sum()) == t.bytes


def test_common_refinement_of_two_tile_shapes():
    # A producer-sized 128x512 load and a consumer-sized 128x128 use of the same tensor:
    # the grid is 128x128 blocks, and one 128x512 load covers four of them.
    k = spec.load_kernel("matmul_hoisted", {"M": 256, "N": 1024, "K": 256})
    g = grids(k)
    assert g["B"].block == (128, 512) and g["A"].block == (128, 128)
    tr = trace.build(k)
    # A[:, m] (K x TM = 256 x 128) covers K/128 = 2 blocks; B[:, n] covers 2 blocks of 128 x 512
    loads = tr.kind == LOAD
    per_tensor = np.bincount(tr.obj_tensor[tr.obj[loads]], minlength=3)
    # loads of A: M/TM = 2 executions x 2 blocks; of B: (M/TM)(N/TN) = 4 executions x 2 blocks
    assert per_tensor.tolist() == [4, 8, 0]


def test_ragged_last_tile_has_its_real_size():
    # M = 200 with TM = 128: tiles of 128 and 72 rows; bytes are never rounded up
    k = matmul_kernel(200, 512, 128, 128, 512, 128)
    tr = trace.build(k)
    c = grids(k)["C"]
    sizes = tr.obj_bytes[c.offset:c.offset + c.n_blocks].tolist()
    assert sizes == [128 * 512 * 2, 72 * 512 * 2]


def test_partial_sums_read_back_only_after_a_store():
    # k outermost, store inside: every C tile is stored K/TK = 4 times and re-read 3 times
    k = matmul_kernel(128, 512, 512, 128, 512, 128, order="kmn", a_level=3, b_level=3)
    tr = trace.build(k)
    assert int((tr.kind == STORE).sum()) == 4
    assert int((tr.kind == ACC).sum()) == 3
    # operand uses: two per matmul instruction (4 instructions), each requested again after the
    # first pass (the instruction holds both operands at once)
    assert int((tr.kind == USE).sum()) == 2 * 2 * 4


def test_bytes_per_tensor_is_exact_beyond_int64():
    # 2**50 transfers of every block: the products pass 2**63, so the sum is done in Python ints
    k = spec.load_kernel("matmul")
    tr = trace.build(k)
    got = tr.bytes_per_tensor(np.full(tr.obj_bytes.size, 2**50, dtype=np.int64))
    assert got == {t.name: 2**50 * t.bytes for t in k.tensors}
    assert got["A"] > 2**63


def test_iterations_past_the_edge_of_a_blocked_loop_do_not_run():
    # M = 300 in blocks of BM = 256 split into TM = 128 tiles: the second block has one real
    # tile (256..299) and one phantom (384 >= 300). B[k, n] is loaded inside the mi loop without
    # indexing mi, so it is loaded once per real (mb, mi): 3 times, never 4.
    from loopsim.ir.kernel import Access, Kernel, Load, Loop, Matmul, Store, Tensor
    M, N, K, BM, TM = 300, 512, 128, 256, 128
    mm = Matmul(Access("C", (("mb", "mi"), ("n",))), Access("A", (("k",), ("mb", "mi"))),
                Access("B", (("k",), ("n",))))
    k_loop = Loop("k", K, 128, (Load(Access("A", (("k",), ("mb", "mi")))),
                                Load(Access("B", (("k",), ("n",)))), mm))
    n_loop = Loop("n", N, 512, (k_loop, Store(Access("C", (("mb", "mi"), ("n",))))))
    body = (Loop("mb", M, BM, (Loop("mi", BM, TM, (n_loop,)),)),)
    k = Kernel("blocked", (Tensor("A", (K, M)), Tensor("B", (K, N)), Tensor("C", (M, N), output=True)), body)
    tr = trace.build(k)
    loads_b = int(((tr.kind == LOAD) & (tr.obj_tensor[tr.obj] == 1)).sum())
    assert loads_b == 3  # ceil(300/128) real tiles of M, one B tile each
    events, _, _ = interpret(k)
    assert list(zip(tr.obj.tolist(), tr.kind.tolist())) == events


def test_lnc_split_of_a_ragged_loop_loads_no_phantom_tiles():
    # matmul M = 300 split across 2 cores: core 0 runs m-tiles 0 and 1, core 1 runs tile 2 only;
    # B[k, n] is loaded once per real m tile: r_B = ceil(300/128) = 3, as on one core
    from loopsim.targets import hardware
    from loopsim.count.lnc import with_split
    from loopsim.model.pipeline import analyze_kernel as analyze
    k = with_split(spec.load_kernel("matmul", {"M": 300}), 2)
    rep = analyze(k, hardware.load("trn2-lnc2"))
    assert rep.counts.tensor_map["B"].r == 3
