"""On-chip buffers filled piece by piece (tests/nki_kernels/pieces.py): the pieces' tiles fitted
into one map (a block gathered tile by tile), or read piece by piece (heads shuffled one by one);
each against a hand count of Q and the accesses the IR shows."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from loopsim.base.errors import SpecError
from loopsim.frontends import program
from loopsim.frontends.nki.load import trace_kernel
from loopsim.model import pipeline
from loopsim.targets import hardware

KERNELS = Path(__file__).parent / "nki_kernels"
TRN2 = hardware.load("trn2-core")


def analyzed(func, kwargs=None, **args):
    k, rec = trace_kernel(str(KERNELS / "pieces.py"), func,
                          args={n: (s, "bf16") for n, s in args.items()}, kwargs=kwargs or {})
    prog = k if isinstance(k, program.Program) else program.Program.single(k)
    kern = prog.stages[0].kernel
    return pipeline.analyze(prog, TRN2).counts, [str(s) for s, _ in kern.statements()]


def rw(counts):
    return {t.name: (t.read_bytes, t.write_bytes) for t in counts.tensors}


def test_a_block_gathered_tile_by_tile_is_read_as_one_tile_of_the_tensor():
    """x 128 x 1024 bf16 gathered as 8 tiles of 128 columns into buf [128, 2, 512] (tile k at
    block k // 4, column 128 * (k % 4)); the matmul reads buf[:, b, :] = x[:, 512*b ...]:
    the pieces fit one map (buf[p, b, c] = x[p, 512*b + c]). Q = x 128 x 1024 x 2 = 262,144
    read once + w 128 x 128 x 2 = 32,768 + out 128 x 1024 x 2 = 262,144 written = 557,056.
    (Before: the buffer held the last piece's map, the matmul read x[:, 512:1024] for both
    blocks and the trace was refused.)"""
    c, stmts = analyzed("blocked_gather", w=(128, 128), x=(128, 1024))
    assert "matmul out[out_m, b] += w[out_k, out_m] @ x[out_k, b]" in stmts
    assert rw(c) == {"w": (32_768, 0), "x": (262_144, 0), "out": (0, 262_144)}
    assert c.Q == 32_768 + 2 * 262_144 == 557_056


@pytest.mark.parametrize("func", ["shuffled_heads", "shuffled_head_groups"])
def test_heads_shuffled_one_by_one_are_read_piece_by_piece(func):
    """a [128, 4, 4] (d, head, s): head n copied to columns 4n .. 4n + 4 of shuf [128, 16] (by a
    static loop traced once, or iteration by iteration); shuf[:, 4n ...] holds a[:, n, :] (no
    one map does: head and column share a buffer axis), so the add reads a[:, n, :].
    Q = a 128 x 4 x 4 x 2 = 4,096 + b 128 x 16 x 2 = 4,096 + out 4,096 = 12,288. (Before: the
    read resolved through the last head's map, a[:, 3, 4n - 12], and was refused; the static
    loop's reads were dropped as a reduction.)"""
    c, stmts = analyzed(func, a=(128, 4, 4), b=(128, 16))
    assert "add res[:, 4*n] = a[:, n, :], b[:, 4*n]" in stmts
    assert {k: v for k, v in rw(c).items() if k != "res"} == {
        "a": (4_096, 0), "b": (4_096, 0), "out": (0, 4_096)}
    assert c.Q == 3 * 4_096 == 12_288


def test_a_permuted_layout_read_across_pieces_is_data_not_followed():
    """group=2 places head n at column 4 * (2 * (n % 2) + n // 2): heads 0, 2, 1, 3; an affine
    read shuf[:, 4n ...] cannot follow that order: the buffer is read from there on as data
    loopsim does not follow, noted ASSUMED with the file and line (it used to be refused). Its
    bytes count where they were loaded: a [128, 4, 4] and b [128, 16] read once, out written
    once, 128 x 16 x 2 B = 4,096 B each: Q = 12,288."""
    k, _ = trace_kernel(str(KERNELS / "pieces.py"), "shuffled_head_groups",
                        args={"a": ((128, 4, 4), "bf16"), "b": ((128, 16), "bf16")},
                        kwargs={"group": 2})
    prog = k if isinstance(k, program.Program) else program.Program.single(k)
    notes = [n for s in prog.stages for n in s.kernel.notes]
    assert any(re.search(r"pieces\.py:\d+: a read of buffer shuf\[.*\] spans pieces written one "
                         r"by one that hold tiles of a in an order no affine map follows.*ASSUMED", n)
               for n in notes), notes
    c, _ = analyzed("shuffled_head_groups", kwargs={"group": 2}, a=(128, 4, 4), b=(128, 16))
    assert rw(c) == {"a": (4_096, 0), "b": (4_096, 0), "out": (0, 4_096)} and c.Q == 12_288


# -- an HBM tensor is bytes: another shape of it after use is a view of the same bytes ----------

def test_a_scratch_tensor_written_as_one_row_is_read_back_as_rows():
    """x [8, 128] bf16 staged through stage [1, 1024] (written whole), read back after
    ``stage.reshape((8, 128))`` row by row: x read 8 x 128 x 2 = 2,048; stage written 2,048 and
    read 8 x 256 = 2,048; out written 2,048: Q = 4 x 2,048 = 8,192. (Before: refused, "reshaped
    to [8, 128] after it was accessed".)"""
    c, stmts = analyzed("staged_rows", x=(8, 128))
    assert rw(c) == {"x": (2_048, 0), "stage": (2_048, 2_048), "out": (0, 2_048)}
    assert c.Q == 4 * 2_048 == 8_192


def test_two_handles_of_one_tensor_count_each_byte_by_its_flat_address():
    """scratch [64, 128] bf16 reshaped to [128, 64] before its first use. Written whole through
    the [128, 64] handle (16,384 B), then in 2 halves through the [64, 128] handle's access
    pattern [[128, 32], [1, 128]] (rows 32b .. 32b + 32 of 128 = rows 64b .. 64b + 64 of the
    tensor, 8,192 B each), read back whole (16,384 B). x: read whole (16,384) and in 2 halves
    through x.reshape((64, 128)) after use (8,192 each). Q = x 32,768 + scratch 32,768 written
    + 16,384 read + out 16,384 = 98,304."""
    c, stmts = analyzed("two_shapes", x=(128, 64))
    assert "store scratch[b, :]" in stmts and "load x[b, :]" in stmts
    assert rw(c) == {"x": (32_768, 0), "scratch": (16_384, 32_768), "out": (0, 16_384)}
    assert c.Q == 98_304


# -- an HBM access pattern that is no box: one DMA per element of one entry -----------------------

def test_a_strided_pattern_moves_the_rows_it_names():
    """x [256, 64] bf16, rows 0, 2, ..., 254 by [[128, 128], [1, 64]]: 128 DMAs of one row of 64
    (128 B each): x read 128 x 64 x 2 = 16,384 (half of x), out written 16,384: Q = 32,768."""
    c, stmts = analyzed("every_other_row", x=(256, 64))
    assert rw(c) == {"x": (16_384, 0), "out": (0, 16_384)}
    assert c.Q == 32_768


def test_overlapping_windows_move_each_named_element(capsys):
    """x [1, 512] bf16, windows [[1, 3], [1, 510]]: 3 x 510 elements named (columns 1 .. 509
    more than once), so the DMA moves 3 x 510 x 2 = 3,060 B though x holds 1,024 B; out
    [3, 510] written 3,060: Q = 6,120. The DMA report sees 3 transfers of 510 elements and
    the store: 4 transfers."""
    from loopsim.cli.main import main

    c, stmts = analyzed("sliding_windows", x=(1, 512))
    assert rw(c) == {"x": (3_060, 0), "out": (0, 3_060)}
    assert c.Q == 2 * 3 * 510 * 2 == 6_120
    assert main(["dma", f"{KERNELS / 'pieces.py'}::sliding_windows", "--arg", "x=1x512",
                 "-H", "trn2-core"]) == 0
    assert "DMA: 4 transfers, 6,120 bytes" in capsys.readouterr().out


def test_a_pattern_no_split_makes_a_box_is_a_one_line_error(capsys):
    """[[3, 4], [2, 4]] on x [64]: elements 3a + 2b; neither entry split off leaves a box."""
    from loopsim.cli.main import main

    assert main(["entitle", f"{KERNELS / 'pieces.py'}::scattered", "--arg", "x=64",
                 "-H", "trn2-core"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and err.startswith("loopsim: error: ")
    assert re.search(r"pieces\.py:\d+: kernel scattered: \.ap of HBM x\[64\]: \[3, 4\] of pattern "
                     r"\[\[3, 4\], \[2, 4\]\] is not a run along one axis", err)


def test_transposed_tiles_side_by_side_are_copied_piece_by_piece():
    """x [128, 512] bf16: its 4 column tiles transposed one by one into one PSUM row, copied to
    SBUF at once: no one map places the 4 transposed tiles (column c of the row is x's row
    c % 128 of tile c // 128), so the copy runs piece by piece and xt[:, 128t ...] reads
    x[:, 128t ...]. Q = x 131,072 (loaded once) + y 131,072 + out 131,072 = 393,216. (Without
    the piece-by-piece copy: refused, the copy spanning pieces in no affine order.)"""
    c, stmts = analyzed("transposed_side_by_side", x=(128, 512), y=(128, 512))
    assert "add res[:, t] = x[:, t], y[:, t]" in stmts
    assert {k: v for k, v in rw(c).items() if k != "res"} == {
        "x": (131_072, 0), "y": (131_072, 0), "out": (0, 131_072)}
    assert c.Q == 3 * 131_072 == 393_216


def test_overlapping_row_windows_of_an_index_tile_move_each_named_row():
    """row_windows_max, x [256, 64] bf16, k = 3: x[128t + i_h + i_kh, i_w] names rows
    128t + kh .. 128t + kh + 128 for kh = 0, 1, 2: 3 DMAs per tile, clipped at x's 256 rows:
    t = 0: 3 x 128 rows; t = 1: 128 + 127 + 126; 765 rows x 64 x 2 B = 97,920 read. out
    [254, 64] written 254 x 64 x 2 = 32,512. Q = 130,432. (Before: refused, an index tile of
    an HBM tensor being an overlapping access; the contributed maxpooling kernel's idiom.)"""
    c, stmts = analyzed("row_windows_max", x=(256, 64))
    assert rw(c) == {"x": (97_920, 0), "out": (0, 32_512)}
    assert c.Q == 765 * 64 * 2 + 254 * 64 * 2 == 130_432


def test_a_handle_of_another_element_size_after_a_reinterpretation_counts_its_bytes():
    """x [128, 128] bf16 reinterpreted as int32 [128, 64] by its first access, then sliced
    through its bf16 handle: HBM is bytes, each access counts the flat bytes it covers. x read
    128 x 64 x 4 = 32,768 as int32, then 128 x 128 x 2 = 32,768 as bf16; out 32,768 written.
    (Before: refused, handles of two element sizes.)"""
    c, _ = analyzed("two_element_sizes", x=(128, 128))
    assert rw(c) == {"x": (65_536, 0), "out": (0, 32_768)}
    assert c.Q == 3 * 32_768
