"""Idioms of the older neuronxcc.nki samples (tests/nki_kernels/samples_2025.py and nspkg/,
kernels written for loopsim): each traced against a hand count of its bytes and work."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from loopsim.frontends.nki.load import package_of, trace_kernel
from loopsim.model import pipeline
from loopsim.targets import hardware

KERNELS = Path(__file__).parent / "nki_kernels"
SAMPLES = KERNELS / "samples_2025.py"
TRN2 = hardware.load("trn2-core")


def counted(path, func, args):
    k, rec = trace_kernel(str(path), func, args=args)
    c = pipeline.analyze_kernel(k, TRN2).counts
    return {"W": c.flops, "Q": c.Q, **{t.name: (t.read_bytes, t.write_bytes) for t in c.tensors}}, rec


def test_load_transpose2d_moves_the_block_once_transposed():
    b, _ = counted(SAMPLES, "load_t2d", {"x": ((256, 256), "bf16")})
    # the [64, 128] block of x: 64 x 128 x 2 B = 16,384 read; out [128, 64] the same written
    assert b["x"] == (16_384, 0) and b["out"] == (0, 16_384) and b["Q"] == 32_768 and b["W"] == 0


def test_load_transpose2d_of_an_on_chip_tile_is_refused_naming_the_call():
    from loopsim.frontends.nki import shim
    from loopsim.frontends.nki.errors import TraceError

    with pytest.raises(TraceError, match="nl.load_transpose2d of .*expected an HBM tensor"):
        shim.load_transpose2d(object())


@pytest.mark.parametrize("B", [1, 3])
def test_reshape_by_keyword_and_multi_buffer_directive(B):
    b, _ = counted(SAMPLES, "reshape_kw", {"x": ((B, 128, 64), "fp32")})
    # x read once as [B * 128, 64] fp32: B x 128 x 64 x 4 B = B x 32,768; out the same written
    assert b["x"] == (B * 32_768, 0) and b["out"] == (0, B * 32_768) and b["Q"] == B * 65_536


@pytest.mark.parametrize("dt, size, cols", [("fp32", 4, 256), ("bf16", 2, 512), ("fp8", 1, 1024)])
def test_sizeinbytes_is_the_bytes_of_one_element(dt, size, cols):
    b, _ = counted(SAMPLES, "head_kib", {"x": ((128, 2048), dt)})
    # 1024 // size columns of 128 rows: 1 KiB a row, 128 KiB read and 128 KiB written
    assert 1024 // size == cols
    assert b["x"] == (131_072, 0) and b["out"] == (0, 131_072) and b["Q"] == 262_144


@pytest.mark.parametrize("F", [512, 1536])
def test_bn_stats_and_bn_aggr_are_vector_work_over_their_inputs(F):
    b, rec = counted(SAMPLES, "row_mean_var", {"x": ((128, F), "fp32")})
    # x read once: 128 x F x 4 B; out [128, 2] fp32 = 1,024 B written
    assert b["x"] == (128 * F * 4, 0) and b["out"] == (0, 1_024) and b["Q"] == 512 * F + 1_024
    work = {w.call.rsplit(".", 1)[-1]: w for w in rec.work}
    # bn_stats: one element-op per input element, F / 512 calls of 128 x 512; bn_aggr: its
    # [128, 6 F / 512] statistics tile once
    st, ag = work["bn_stats"], work["bn_aggr"]
    assert (st.engine, st.element_ops) == ("vector", 128 * F)
    assert (ag.engine, ag.element_ops) == ("vector", 128 * 6 * (F // 512))
    assert st.assumed and ag.assumed


def test_namespace_package_root_follows_the_relative_import_depth():
    src = KERNELS / "nspkg" / "kern" / "copy_cols.py"
    # kern/ has no __init__.py; `from ..util` climbs 2 levels: the package is nspkg.kern (nspkg has
    # an __init__.py, nki_kernels/ has none), so the root is nki_kernels/
    assert package_of(str(src)) == (str(KERNELS), "nspkg.kern.copy_cols")
    # a file with no relative import in a folder without __init__.py is no package's module
    assert package_of(str(SAMPLES)) == (str(KERNELS), "")


def test_kernel_in_a_namespace_package_imports_its_sibling_folder():
    before = set(sys.modules)
    b, _ = counted(KERNELS / "nspkg" / "kern" / "copy_cols.py", "copy_cols", {"x": ((128, 512), "bf16")})
    # COLS = 256 (util/widths.py) columns of 128 rows: 65,536 B read, the same written
    assert b["x"] == (65_536, 0) and b["out"] == (0, 65_536) and b["Q"] == 131_072
    # the package and its namespace folders are dropped after the trace
    assert not {m for m in set(sys.modules) - before if m.startswith("nspkg")}


@pytest.mark.parametrize("R", [128, 384])
def test_numpy_integer_bounds_and_offsets_are_integers(R):
    b, _ = counted(SAMPLES, "numpy_bounds", {"x": ((R, 64), "fp32")})
    # R / 128 tiles of 128 x 64 fp32 (32,768 B) read and written: R x 256 B each way
    assert b["x"] == (R * 256, 0) and b["out"] == (0, R * 256) and b["Q"] == R * 512


def test_integer_indexed_column_keeps_its_size_1_dimension():
    b, _ = counted(SAMPLES, "kept_column", {"x": ((128, 8), "fp32")})
    # 8 columns of 128 fp32 loaded (8 x 512 B = 4,096), the [128, 8] tile stored (4,096 B)
    assert b["x"] == (4_096, 0) and b["out"] == (0, 4_096) and b["Q"] == 8_192


def test_finfo_and_a_4d_mgrid():
    import numpy as np

    from loopsim.frontends.nki import shim

    b, _ = counted(SAMPLES, "floor_max", {"x": ((128, 2, 3, 16), "bf16")})
    # x read once and out written once: 128 x 2 x 3 x 16 = 12,288 elements x 2 B = 24,576 each way
    assert b["x"] == (24_576, 0) and b["out"] == (0, 24_576) and b["Q"] == 49_152
    # the ranges against numpy's for the IEEE formats, and bfloat16's from its bits: 8 exponent
    # bits as fp32's, 7 mantissa bits: 0x7F7F = (1 + 127/128) x 2^127
    assert shim.finfo(np.float32).max == float(np.finfo(np.float32).max)
    assert shim.finfo("float16").max == float(np.finfo(np.float16).max) == 65_504.0
    assert shim.finfo("bfloat16").min == -(1 + 127 / 128) * 2.0 ** 127
    assert shim.finfo("float8_e4m3").max == 448.0
    with pytest.raises(Exception, match="not a float dtype"):
        shim.finfo("int32")


@pytest.mark.parametrize("T", [128, 256])
def test_hbm_indexed_by_an_id_tile_is_an_indirect_gather(T):
    b, rec = counted(SAMPLES, "gather_rows", {"table": ((1000, 64), "bf16"), "ids": ((T, 1), "int32")})
    # ids: T x 4 B; per block 128 rows of 64 bf16 gathered (128 x 128 B = 16,384, a tensor of
    # their own, which rows is data); out T x 64 x 2 B written
    assert b["ids"] == (T * 4, 0) and b["table_gathered"] == (T * 128, 0)
    assert b["out"] == (0, T * 128) and b["Q"] == T * 4 + 2 * T * 128
    assert any("indexed by tile" in n and "ASSUMED" in n for n in rec.notes)


def test_a_loaded_scalar_indexes_a_slab():
    b, _ = counted(SAMPLES, "pick_slab", {"w": ((8, 128, 256), "bf16"), "which": ((4,), "int32")})
    # which[0]: 4 B; one slab 128 x 256 x 2 B = 65,536 read (which slab is data) and written
    assert b["which"] == (4, 0) and b["out"] == (0, 65_536)
    assert b["Q"] == 4 + 2 * 65_536


def test_masked_tile_operand_is_the_tile():
    b, _ = counted(SAMPLES, "masked_operand", {"a": ((128, 128), "bf16"), "b": ((128, 512), "bf16")})
    # W = 2 x 128 x 128 x 512 = 16,777,216; a 32,768 B, b 131,072 B read, out 128 x 512 x 4 B
    assert b["W"] == 16_777_216
    assert b["a"] == (32_768, 0) and b["b"] == (131_072, 0) and b["out"] == (0, 262_144)


@pytest.mark.parametrize("G", [1, 3])
def test_view_as_fp8_then_indexed_stores_the_scale_bytes(G):
    b, _ = counted(SAMPLES, "scale_bytes", {"x": ((G, 128, 1), "fp32")})
    # each group: 128 fp32 scales read (512 B), their 128 x 4 fp8 bytes written (512 B)
    assert b["x"] == (G * 512, 0) and b["out"] == (0, G * 512) and b["Q"] == G * 1_024


def test_load_transpose2d_of_an_index_expression_over_a_vector():
    b, rec = counted(SAMPLES, "tokens_t2d", {"ids": ((1024,), "int32")})
    # ids[0:512] read (512 x 4 B = 2,048, as 4 DMAs of 128), out [128, 4] int32 written (2,048 B)
    assert b["ids"] == (2_048, 0) and b["out"] == (0, 2_048) and b["Q"] == 4_096
    assert any("load_transpose2d" in n and "ASSUMED" in n for n in rec.notes)


@pytest.mark.parametrize("S, d", [(256, 64), (512, 128)])
def test_transposed_loads_feed_the_matmul(S, d):
    b, _ = counted(SAMPLES, "qk_transposed", {"q": ((S, d), "bf16"), "k": ((256, d), "bf16")})
    # S / 128 matmuls of 128 x 128 outputs over d: W = 2 x S x 128 x d (the transposed tiles
    # are the tensors' data, not constants); q read once (S x d x 2 B), k's first 128 rows
    # (128 x d x 2 B), out S x 128 fp32 written
    assert b["W"] == 2 * S * 128 * d
    assert b["q"] == (S * d * 2, 0) and b["k"] == (128 * d * 2, 0) and b["out"] == (0, S * 512)


def test_partition_vector_broadcast_and_one_element_tiles():
    b, _ = counted(SAMPLES, "row_scaled", {"x": ((128, 256), "fp32")})
    # x read whole (128 x 256 x 4 B = 131,072) and its first element again (4 B); out written
    assert b["x"] == (131_072 + 4, 0) and b["out"] == (0, 131_072) and b["W"] == 0


def test_a_read_across_pieces_in_no_affine_order_goes_on_as_data_not_followed():
    b, rec = counted(SAMPLES, "shuffled_tiles", {"x": ((128, 512), "bf16")})
    # x's four tiles read once (128 x 512 x 2 B = 131,072), out written once: the bytes are
    # exact; where each tile landed is not followed (noted, ASSUMED)
    assert b["x"] == (131_072, 0) and b["out"] == (0, 131_072) and b["Q"] == 262_144
    assert any("no affine map follows" in n and "ASSUMED" in n for n in rec.notes)


def test_an_op_stored_transposed_reads_as_one_nest():
    b, rec = counted(SAMPLES, "scaled_product_stored_transposed",
                     {"a": ((128, 128), "bf16"), "b": ((128, 512), "bf16"), "c": ((128, 512), "bf16")})
    # W = 2 x 128 x 512 x 128 = 16,777,216; a 32,768 B, b and c 131,072 B each read, out
    # 512 x 128 x 2 B = 131,072 written
    assert b["W"] == 16_777_216
    assert b["a"] == (32_768, 0) and b["b"] == b["c"] == (131_072, 0) and b["out"] == (0, 131_072)
    assert any("read by no op the op graph holds" in n and "ASSUMED" in n for n in rec.notes)
