"""Idioms of the production NKI library's kernels (tests/nki_kernels/library_idioms.py, kernels
written for loopsim): each traced against a hand count of its bytes and FLOPs."""

from __future__ import annotations

from pathlib import Path

import pytest

from loopsim.frontends.nki import views
from loopsim.frontends.nki.errors import TraceError
from loopsim.frontends.nki.load import load_kernel, trace_kernel
from loopsim.frontends.nki.symbolic import Sym
from tests.nki_counts import bytes_of

KERNELS = Path(__file__).parent / "nki_kernels" / "library_idioms.py"


# -- HBM is bytes: handles of another element size ----------------------------------------------


def test_bytes_read_as_int32_then_as_bf16_count_their_flat_byte_ranges():
    b = bytes_of(load_kernel(str(KERNELS), "tail_index", args={"x": ((128, 258), "bf16")}))
    # x [128, 258] bf16: the int32 tail column 128 x 4 B = 512; the values 128 x 256 x 2 B =
    # 65,536, read twice (an access pattern and a slice); out 128 x 256 x 2 B written once
    assert b["x"] == (512 + 2 * 65_536, 0) and b["out"] == (0, 65_536)
    assert b["Q"] == 512 + 3 * 65_536


def test_indirect_read_at_another_row_stride_counts_its_rows():
    k, rec = trace_kernel(str(KERNELS), "gather_by_tail_index", args={"x": ((128, 258), "bf16")})
    b = bytes_of(k)
    # the tail column 128 x 4 B; then 128 rows of 256 bf16 picked by data (a gather: its rows a
    # tensor of their own), 128 x 512 B = 65,536; out the same written. Q = 131,584.
    assert b["x"] == (512, 0) and b["x_gathered"] == (65_536, 0) and b["out"] == (0, 65_536)
    assert b["Q"] == 131_584
    assert any("row stride 129" in n and "ASSUMED" in n for n in rec.notes)


def test_units_of_a_pattern_cover_the_same_bytes():
    # int32 [[129, 128], [1, 1]] at 128 -> bf16: every stride and the offset doubled, each
    # element two bf16 (one more innermost run)
    pat, off = views._in_units([[129, 128], [1, 1]], 128, 4, 2, "t")
    assert pat == [[258, 128], [2, 1], [1, 2]] and off.const == 256
    # bf16 [[258, 128], [1, 256]] -> fp32: halved, the 256-element run 128 fp32
    pat, off = views._in_units([[258, 128], [1, 256]], Sym({}, 0), 2, 4, "t")
    assert pat == [[129, 128], [1, 128]] and off.const == 0
    with pytest.raises(TraceError, match="covers part of a 4-byte element"):
        views._in_units([[258, 128], [1, 3]], 0, 2, 4, "t")  # 3 bf16: one and a half fp32
    with pytest.raises(TraceError, match="covers part of a 4-byte element"):
        views._in_units([[258, 128], [1, 256]], 1, 2, 4, "t")  # starts mid-element


# -- a sliding-window (im2col) matmul operand ---------------------------------------------------


def test_im2col_operand_matmul_is_charged_from_the_instruction_shapes():
    k, rec = trace_kernel(str(KERNELS), "window_matmul",
                          args={"x": ((4, 130), "bf16"), "w": ((4, 3), "bf16")})
    b = bytes_of(k)
    # 4 channels, K = 3 taps, Q = 130 - 3 + 1 = 128 outputs each: W = 2 x 3 x 1 x 128 x 4 = 3,072.
    # w: 4 x 3 x 2 B = 24; x: each window DMA names 3 x 128 elements (overlapping, each moved):
    # 768 B x 4 = 3,072; out 4 x 128 x 2 B = 1,024 written. Q = 4,120.
    assert b["W"] == 3_072
    assert b["w"] == (24, 0) and b["x"] == (3_072, 0) and b["out"] == (0, 1_024)
    assert b["Q"] == 4_120
    (mm,) = [w for w in k.work if w.matmul]
    assert (mm.elements, mm.passes, mm.executions) == (128, 3, 4)
    assert any("sliding window" in n for n in rec.notes)


# -- a PSUM tile drained into an SBUF sum beside an op graph ------------------------------------


def test_psum_drained_into_an_sbuf_sum_is_read_not_refused():
    k, rec = trace_kernel(str(KERNELS), "drained_psum",
                          args={"a": ((128, 128), "bf16"), "b": ((128, 512), "bf16")})
    b = bytes_of(k)
    # two matmuls of K = 128, M = 128, N = 512: W = 2 x 2 x 128 x 128 x 512 = 33,554,432.
    # a 128 x 128 x 2 B = 32,768 and b 128 x 512 x 2 B = 131,072 read once; out 131,072 written.
    assert b["W"] == 33_554_432
    assert b["a"] == (32_768, 0) and b["b"] == (131_072, 0) and b["out"] == (0, 131_072)
    assert b["Q"] == 294_912
    assert any("read only by an SBUF accumulation of a PSUM tile" in n for n in rec.notes)
