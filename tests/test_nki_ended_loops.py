"""Tiles and values made by a loop that has ended, read by a later loop
(tests/nki_kernels/ended_loops.py, the idiom of the MoE kernels: lists of tiles filled by one
loop run concretely, read by the next). A derived value (an engine op's result not yet an
instruction of its own) made in iteration m keeps its sources at m: a later read of it records
the dependency on the accumulator, never an op with its inputs silently dropped. W and Q are
hand counts of the kernels' source."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from loopsim.frontends import program
from loopsim.frontends.nki.load import load_kernel, trace_kernel
from loopsim.ir import kernel as ir
from loopsim.ir import ops
from loopsim.model import pipeline
from loopsim.targets import hardware

KERNELS = Path(__file__).parent / "nki_kernels" / "ended_loops.py"
TRN2 = hardware.load("trn2-core")


def counts(k):
    prog = k if isinstance(k, program.Program) else program.Program.single(k)
    c = pipeline.analyze(prog, TRN2).counts
    return c.flops, c.Q


@settings(max_examples=6, deadline=None)
@given(st.integers(1, 3), st.sampled_from([128, 256, 512]))
def test_scaled_value_read_by_a_later_loop_keeps_its_accumulator(nm: int, T: int):
    """ended_scaled, K = 128, M = 128 nm: per tile m one matmul (K x 128 x T multiply-adds),
    W = 2 K M T; Q = x (K T) + w (K M) read, out (M T) written, bf16: 2 (K T + K M + M T).
    The squares of the scaled PSUM tiles are stored: the store's tile is made from the
    accumulator (the matmul writes the stored tensor, its ops an epilogue). Before, the value
    kept in the list lost its source when its loop re-rolled: an op statement of no input
    wrote ``out`` and the accumulator was a tensor no statement read."""
    K, M = 128, 128 * nm
    k, _ = trace_kernel(str(KERNELS), "ended_scaled", args={"x": ((K, T), "bf16"), "w": ((K, M), "bf16")})
    assert isinstance(k, ir.Kernel)
    for s, _ in k.statements():
        if isinstance(s, ops.OpStatement):
            assert s.inputs, f"op {s.kind} writing {s.out} reads nothing"
    mm = [s for s, _ in k.statements() if isinstance(s, ir.Matmul)]
    assert [s.out.tensor for s in mm] == ["out"]
    assert counts(k) == (2 * K * M * T, 2 * (K * T + K * M + M * T))


@settings(max_examples=4, deadline=None)
@given(st.integers(1, 2), st.integers(1, 2))
def test_mlp_lists_across_loops(nh: int, ni: int):
    """ended_mlp, H = 128 nh, I = 128 ni, T = 128: gate and up (2 H I T multiply-adds) then
    down (I T H): W = 2 (2 H I T + I T H); Q = x (H T) + w_g, w_u (H I each) + w_d (I H) read,
    out (T H) written, bf16: 2 (H T + 3 H I + T H)."""
    H, I, T = 128 * nh, 128 * ni, 128
    args = {"x": ((H, T), "bf16"), "w_g": ((H, I), "bf16"), "w_u": ((H, I), "bf16"),
            "w_d": ((I, H), "bf16")}
    k = load_kernel(str(KERNELS), "ended_mlp", args=args)
    assert counts(k) == (2 * (2 * H * I * T + I * T * H), 2 * (H * T + 3 * H * I + T * H))
