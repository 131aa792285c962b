"""Layouts of the production library's MoE kernels (tests/nki_kernels/moe_layouts.py, kernels
written for loopsim): a block's token ids loaded column by column from the one row an index tile
names (the hybrid shard-on-I kernels), a bias row broadcast onto the partitions by
``nc_stream_shuffle`` (the MX kernels), an engine op's tile stored at another index than its
input's (the backward kernel). Each traced against a hand count of its bytes."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loopsim.base.errors import SpecError
from loopsim.frontends.nki.load import trace_kernel
from loopsim.ir import ops
from tests.nki_counts import bytes_of

KERNELS = Path(__file__).parent / "nki_kernels" / "moe_layouts.py"


# -- an index tile unchanged by the loop that reads through it ----------------------------------


@settings(max_examples=6, deadline=None)
@given(st.integers(2, 4), st.sampled_from([256, 512, 1024]))
def test_block_ids_loaded_column_by_column_read_one_row_per_block(nb: int, b: int):
    """block_token_affinity, NB >= 2 blocks of B ids (one block: a reshape to one row, another
    path), NT = B / 128 columns. The block index tile is
    written before the column loop and after it: its NT DMAs read NT pieces of one row, so the
    rows are fresh per block, not per column (before, per column: the [128, NT] tile read whole
    held the pieces of NT different rows, a permuted layout: refused, later read as data not
    followed, ASSUMED). Per block: the row,
    B int32 = 4 B bytes; the gathered affinities, NT x 128 fp32 = 4 B; out [128, NT] fp32 = 4 B
    written. Q = 12 NB B, W = 0."""
    k, rec = trace_kernel(str(KERNELS), "block_token_affinity",
                          args={"tpid": ((nb * b,), "int32"), "aff": ((4096, 1), "fp32")},
                          kwargs={"B": b})
    got = bytes_of(k)
    assert got["tpid_gathered"] == (4 * nb * b, 0)
    assert got["aff_gathered"] == (4 * nb * b, 0) and got["out"] == (0, 4 * nb * b)
    assert (got["W"], got["Q"]) == (0, 12 * nb * b)
    assert k.tensor_map["tpid_gathered"].shape == (nb, b)  # one row per block
    assert any(f"fresh rows per execution ({nb})" in n for n in rec.notes)
    assert not any("permuted layout" in n for n in rec.notes)


def test_index_bumped_inside_the_loop_that_reads_it_is_refused():
    with pytest.raises(SpecError, match=r"moe_layouts.py:\d+: .*the index tile blk\[1, 1\] of an "
                                        r"indirect DMA of tpid is written inside loop t"):
        trace_kernel(str(KERNELS), "index_bumped_per_tile", args={"tpid": ((2048,), "int32")})


# -- nc_stream_shuffle ---------------------------------------------------------------------------


@settings(max_examples=4, deadline=None)
@given(st.sampled_from([128, 256, 384]), st.sampled_from([512, 1024]))
def test_bias_row_broadcast_by_stream_shuffle(t: int, h: int):
    """bias_broadcast, x [T, H] bf16: x read once, T H 2 bytes; out written, T H 2; the expert's
    bias row, H x 2 bytes; its id, 4 bytes. Q = 4 T H + 2 H + 4. The four shuffles (mask of
    partition 0) make every partition of ``wide`` the one row: a read of ``wide[:, 512 h ...]``
    is bias row [0:1, 512 h ...] (before, the pieces bound the partitions along the row's
    columns, a diagonal: the read refused, then data not followed, ASSUMED). Each shuffle: 32 x H elements, 1 pass, on
    the Vector Engine, the ISA reference's engine for it."""
    k, rec = trace_kernel(str(KERNELS), "bias_broadcast",
                          args={"x": ((t, h), "bf16"), "bias": ((8, h), "bf16"),
                                "expert": ((1, 1), "int32")})
    got = bytes_of(k)
    assert got["x"] == (2 * t * h, 0) and got["out"] == (0, 2 * t * h)
    assert got["bias_gathered"] == (2 * h, 0) and got["expert"] == (4, 0)
    assert (got["W"], got["Q"]) == (0, 4 * t * h + 2 * h + 4)
    shuffles = [w for w in k.work if w.call == "nki.isa.nc_stream_shuffle"]
    assert {(w.engine, w.elements, w.passes, w.executions) for w in shuffles} == {("vector", 32 * h, 1, 1)}
    assert len(shuffles) == 4
    assert not any("permuted layout" in n for n in rec.notes)
    for s, _ in k.statements():
        if isinstance(s, ops.OpStatement):
            bias = [a for a in s.inputs if a.tensor == "bias_gathered"]
            assert bias, "the add reads the broadcast bias row"


def test_identity_shuffle_copies_its_tile():
    # x [32, 256] bf16 = 16,384 bytes read; the shuffled tile is x's, stored: 16,384 written
    k, _ = trace_kernel(str(KERNELS), "shuffle_identity", args={"x": ((32, 256), "bf16")})
    got = bytes_of(k)
    assert got["x"] == (16_384, 0) and got["out"] == (0, 16_384) and got["Q"] == 32_768


# -- an op's tile stored at another index than its input's ---------------------------------------


@settings(max_examples=4, deadline=None)
@given(st.integers(1, 4), st.sampled_from([128, 256]))
def test_scaled_tile_stored_elsewhere_is_the_stored_tensor(nt: int, h: int):
    """scaled_rows_to_scratch, NT tiles of 128 tokens, g [T, 2 H] bf16: ids and aff, 128 NT x 4
    bytes each; the gathered halves, 128 NT H x 2 bytes; scratch written, the same. Q = 1,024 NT
    + 512 NT H. The product is computed at the gathered tile's index (columns H ... 2 H) and
    stored at the scratch's (columns 0 ... H): the op now writes scratch's tile. Before, it made
    an on-chip tensor no statement read (the op graph of the backward kernel refused it)."""
    k, _ = trace_kernel(str(KERNELS), "scaled_rows_to_scratch",
                        args={"g": ((1024, 2 * h), "bf16"), "ids": ((128 * nt, 1), "int32"),
                              "aff": ((128 * nt, 1), "fp32")})
    got = bytes_of(k)
    assert got["ids"] == (512 * nt, 0) and got["aff"] == (512 * nt, 0)
    assert got["g_gathered"] == (256 * nt * h, 0) and got["scratch"] == (0, 256 * nt * h)
    assert (got["W"], got["Q"]) == (0, 1_024 * nt + 512 * nt * h)
    outs = {s.out.tensor for s, _ in k.statements() if isinstance(s, ops.OpStatement)}
    assert outs == {"scratch"}
    assert {t.name for t in k.tensors} == {"ids", "aff", "scratch", "g_gathered"}  # no orphan


# -- an HBM tensor allocated in each iteration of a loop -----------------------------------------


@settings(max_examples=3, deadline=None)
@given(st.integers(1, 3), st.sampled_from([256, 512]))
def test_scratch_allocated_per_block_is_one_tensor_per_block(nb: int, n: int):
    """block_scratch_matmul, NB blocks, w [128, N]: per block one matmul of K = M = 128, N:
    W = NB x 2 x 128 x 128 x N. Q: x read, NB x 128 x 128 x 2; w read per block, NB x 128 N x 2;
    out written, NB x 128 N x 2; each block's scratch written and read, 32,768 bytes each way.
    Before, the loop ran once symbolically and its one scratch tensor stood for every block's:
    the matmuls did NB x the FLOPs its shapes imply, refused by the count's cover check."""
    k, _ = trace_kernel(str(KERNELS), "block_scratch_matmul",
                        args={"x": ((128 * nb, 128), "bf16"), "w": ((128, n), "bf16")})
    got = bytes_of(k)
    assert got["W"] == nb * 2 * 128 * 128 * n
    for b in range(nb):
        assert got[f"scratch_{b}"] == (32_768, 32_768)
    assert got["x"] == (32_768 * nb, 0) and got["w"] == (256 * n * nb, 0)
    assert got["out"] == (0, 256 * n * nb)
    assert got["Q"] == 32_768 * nb + 2 * 256 * n * nb + 2 * 32_768 * nb


def test_shuffle_of_a_one_element_pattern_is_generic_work():
    """shuffle_scalar_ap: the id, 4 bytes, read; [128, 1] int32, 512 bytes, written. The source
    is an access pattern of no partition axis the shim follows: costed as generic work (before
    this test, an IndexError from the shim)."""
    k, _ = trace_kernel(str(KERNELS), "shuffle_scalar_ap", args={"expert": ((1, 1), "int32")})
    got = bytes_of(k)
    assert got["expert"] == (4, 0) and got["out"] == (0, 512) and got["Q"] == 516
    shuffles = [w for w in k.work if w.call == "nki.isa.nc_stream_shuffle"]
    assert shuffles and all(w.assumed and w.engine == "vector" for w in shuffles)
