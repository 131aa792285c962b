"""On-chip buffers filled piece by piece (tests/nki_kernels/pieces.py): the pieces' tiles fitted
into one map (a block gathered tile by tile), or read piece by piece (heads shuffled one by one);
each against a hand count of Q and the accesses the IR shows."""

from __future__ import annotations

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


def test_a_permuted_layout_read_across_pieces_is_a_one_line_error():
    """group=2 places head n at column 4 * (2 * (n % 2) + n // 2): heads 0, 2, 1, 3; an affine
    read shuf[:, 4n ...] cannot follow that order: refused, naming the buffer and the tensor."""
    with pytest.raises(SpecError, match=r"pieces\.py:\d+: kernel shuffled_head_groups: a read of "
                       r"buffer shuf\[.*\] spans pieces written one by one that hold tiles of a "
                       r"in an order no affine map follows"):
        analyzed("shuffled_head_groups", kwargs={"group": 2}, a=(128, 4, 4), b=(128, 16))
