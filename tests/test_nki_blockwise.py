"""The blockwise-MoE idioms (tests/nki_kernels/blockwise.py): a buffer written in pieces by one
instruction in a loop, experts' weights picked per block of tokens, a loop whose last
iterations record nothing, a block's result scattered to its tokens' rows; each against a hand
count of W and Q and the statements the IR shows."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings, strategies as st

from loopsim.count.counts import shape_flops
from loopsim.frontends import program
from loopsim.frontends.nki.load import trace_kernel
from loopsim.model import pipeline
from loopsim.targets import hardware

KERNELS = Path(__file__).parent / "nki_kernels"
TRN2 = hardware.load("trn2-core")


def analyzed(func, **args):
    """(counts, statements, notes, the IR's first kernel) of ``func`` at bf16 shapes (a
    ``(shape, dtype)`` pair for other dtypes)."""
    args = {n: (s if isinstance(s[0], tuple) else (s, "bf16")) for n, s in args.items()}
    k, rec = trace_kernel(str(KERNELS / "blockwise.py"), func, args=args)
    prog = k if isinstance(k, program.Program) else program.Program.single(k)
    kern = prog.stages[0].kernel
    return pipeline.analyze(prog, TRN2).counts, [str(s) for s, _ in kern.statements()], rec.notes, kern


def rw(counts):
    return {t.name: (t.read_bytes, t.write_bytes) for t in counts.tensors if t.read_bytes or t.write_bytes}


def test_one_instruction_writing_column_pieces_in_a_loop_is_one_op_over_the_whole_buffer():
    """gated_pieces, x [128, 1024], wg, wu [128, 256], wd [256, 128]: inter[i] [128, 1024] is
    written in 2 column pieces of 512 by the same silu/multiply pair (a loop over b). Each piece
    is its own value (silu(gate[b][i]) * up[b][i]) and the pieces are one tensor: one op
    statement over every (i, b), 2 inputs, 2 element-ops per element (chain2).
    (Before: the second piece merged the first's ops and sources into a value written only at
    columns 512.., "chain4 inter[i_1, 512:]", half the tile at twice the passes.)
    W = gate + up: 2 x (2 x 128 x 256 x 1024) = 134,217,728; down: 2 x 1024 x 128 x 256 =
    67,108,864; W = 201,326,592.
    Q = x 128 x 1024 x 2 = 262,144 + wg, wu, wd 3 x 65,536 + out 1024 x 128 x 2 = 262,144
    = 720,896."""
    c, stmts, notes, kern = analyzed("gated_pieces", x=(128, 1024), wg=(128, 256), wu=(128, 256),
                                     wd=(256, 128))
    ops = [s for s in stmts if s.startswith("chain")]
    assert ops == ["chain2 inter[i_1, b_1] = gate[i_1, b_1], up[i_1, b_1]"]
    assert c.flops == 2 * 2 * 128 * 256 * 1024 + 2 * 1024 * 128 * 256 == 201_326_592
    assert rw(c) == {"x": (262_144, 0), "wg": (65_536, 0), "wu": (65_536, 0), "wd": (65_536, 0),
                     "out": (0, 262_144)}
    assert c.Q == 720_896
    # the op statement covers inter whole: 256 rows x 1024 columns, once
    inter = kern.tensor_map["inter"]
    assert inter.shape == (256, 1024)


def test_experts_picked_per_block_count_each_blocks_tokens_once():
    """expert_per_block, x [256, 4096], w [4, 256, 64]: block blk (1024 tokens) uses w[blk].
    The index blk of w moves with the block's tokens (N = 1024*blk + n), so it adds no (m, n, k)
    of its own: W = 2 x K 256 x M 64 x T 4096 = 134,217,728 (before: the shapes' count took
    the 4 experts times all 4096 tokens, 536,870,912, and the trace was refused).
    Q = x 256 x 4096 x 2 = 2,097,152 + w read once per 512-token tile: 2 x 4 x 256 x 64 x 2
    = 262,144 + out 64 x 4096 x 2 = 524,288 = 2,883,584."""
    c, stmts, _, kern = analyzed("expert_per_block", x=(256, 4096), w=(4, 256, 64))
    assert "matmul out[out_m, 1024*blk + n] += w[blk, k, out_m] @ x[k, 1024*blk + n]" in stmts
    assert c.flops == shape_flops(kern) == 2 * 256 * 64 * 4096 == 134_217_728
    assert rw(c) == {"x": (2_097_152, 0), "w": (262_144, 0), "out": (0, 524_288)}
    assert c.Q == 2_883_584


@settings(max_examples=6, deadline=None)
@given(st.integers(1, 3), st.integers(1, 2), st.integers(1, 2))
def test_experts_per_block_flops_any_shape(e, kt, nt):
    """Property: E blocks of nt x 512 tokens, K = kt x 128, M = 64: W = 2 K M T (each token by
    its block's expert once), the instructions' count and the shapes' count agree."""
    K, T = kt * 128, e * nt * 512
    c, _, _, kern = analyzed("expert_per_block", x=(K, T), w=(e, K, 64))
    assert c.flops == shape_flops(kern) == 2 * K * 64 * T


def test_iterations_recording_nothing_at_the_end_leave_a_loop_of_the_used_ones():
    """banks_used, x [128, 128], w [128, 1024]: a loop over 4 PSUM banks whose body runs under
    ``if h < 2``: the 2 used iterations are one loop (h, 2 trips). W = 2 x 128 x 128 x 1024 =
    33,554,432; Q = x 32,768 + w 262,144 + out 128 x 1024 x 2 = 262,144 = 557,056."""
    c, stmts, _, _ = analyzed("banks_used", x=(128, 128), w=(128, 1024))
    assert "matmul out[out_m, h] += x[out_k, out_m] @ w[out_k, h]" in stmts
    assert c.flops == 2 * 128 * 128 * 1024 == 33_554_432
    assert c.Q == 32_768 + 2 * 262_144 == 557_056


def test_a_value_scattered_to_its_tokens_rows_is_one_nest_without_an_op_graph():
    """scattered_block, x [128, 256], w [128, 64], idx [256, 1] int32: per 128-token tile,
    y = 2 * (x[:, t]**2).T @ w stored to rows idx[t] of out (a scatter). The accumulator is
    stored at rows chosen at run time, a reader the op graph cannot hold: one nest (a note;
    refused before this branch and main's fallback, "ps, which no op reads"). W = 2 x 128 x 256 x 64 = 4,194,304;
    Q = x 65,536 + w 16,384 + idx 256 x 4 = 1,024 + out 2 x 128 x 64 x 2 = 32,768 = 115,712."""
    c, _, notes, _ = analyzed("scattered_block", x=(128, 256), w=(128, 64), idx=((256, 1), "int32"))
    assert any("ps is read by no op the op graph holds" in n and "ASSUMED" in n for n in notes)
    assert c.flops == 2 * 128 * 256 * 64 == 4_194_304
    assert rw(c) == {"x": (65_536, 0), "w": (16_384, 0), "idx": (1_024, 0), "out": (0, 32_768)}
    assert c.Q == 115_712


def test_two_halves_written_by_one_helper_instruction_outside_a_loop_stay_one_value():
    """halves_by_helper, x [128, 256]: one helper's instruction writes r[:, :128] and r[:, 128:]
    in two calls (the same call site, no loop between them), r stored whole: the stored tile is
    made by both calls (as RoPE's two halves written by two instructions): one op over r whole
    from both halves of x, the same statement as before pieces written by one instruction in a
    loop became values of their own. Q = x 65,536 + out 65,536 = 131,072."""
    c, stmts, _, _ = analyzed("halves_by_helper", x=(128, 256))
    assert [s for s in stmts if s.startswith("chain")] == ["chain2 r[:, :] = x[:, 0:128], x[:, 128:]"]
    assert c.Q == 2 * 65_536 == 131_072
