"""Matmul roles after lowering and on-chip producers (tests/nki_kernels/matmul_roles.py, kernels
in the idioms of the attention tutorials and the production library): a transpose on the Tensor
Engine feeding the next matmul, a PSUM tile reused per output tile, a tensor of tiles, a second
contraction walked one element at a time, a prologue tile at a fixed index, a sliding window
(kept as Tensor Engine work outside the nest), an output made by two pipeline stages. Every W
and Q is a hand count of the kernel's source (derivations beside each)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loopsim.frontends import program
from loopsim.frontends.nki.load import trace_kernel
from loopsim.ir import kernel as ir
from loopsim.model import pipeline
from loopsim.targets import hardware

KERNELS = Path(__file__).parent / "nki_kernels" / "matmul_roles.py"
TRN2 = hardware.load("trn2-core")


def analyzed(func, kwargs=None, **shapes):
    """(counts, IR, record) of ``func`` traced with bf16 arguments of ``shapes``."""
    k, rec = trace_kernel(str(KERNELS), func, args={n: (s, "bf16") for n, s in shapes.items()},
                          kwargs=kwargs or {})
    prog = k if isinstance(k, program.Program) else program.Program.single(k)
    return pipeline.analyze(prog, TRN2).counts, k, rec


def kernel_of(k):
    return k if isinstance(k, ir.Kernel) else k.stages[0].kernel


def matmuls(k):
    return [s for s, _ in kernel_of(k).statements() if isinstance(s, ir.Matmul)]


@pytest.mark.parametrize("how", ["identity", "nc_transpose", "is_transpose"])
def test_a_tensor_engine_transpose_costs_its_documented_cycles(how):
    """The NKI ISA reference's estimate for nc_transpose on the Tensor Engine: max(P, min(64, F))
    cycles for a [P, F] tile. transposed_operand transposes two [128, 128] blocks: 2 x
    max(128, min(64, 128)) = 256 cycles at trn2's 2.4 GHz Tensor Engine clock = 106.67 ns (the
    peak-rate charge it replaces, 2 x 128³ multiply-adds at the fp8 rate, said 53.3 ns)."""
    from loopsim.targets.neuron.engines import work_seconds

    _, k, _ = analyzed("transposed_operand", {"how": how}, x=(128, 256), w=(256, 512))
    (t,) = [w for w in kernel_of(k).work if w.call.startswith("nc_transpose")]
    assert t.transpose and work_seconds(TRN2, t) == pytest.approx(256 / 2.4e9, rel=1e-12)
    assert work_seconds(TRN2, t, per_core=True) == work_seconds(TRN2, t)  # one physical core


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 128), st.integers(1, 1024))
def test_transpose_cycles_per_instruction_of_at_most_128_columns(p, f):
    """A [p, f] tile goes through the array 128 free elements at a time: one instruction per
    full 128 (max(p, 64) cycles each) and one for the rest r (max(p, min(64, r))), by brute force
    over its instructions."""
    from loopsim.targets.neuron.engines import transpose_cycles

    chunks = [min(128, f - i) for i in range(0, f, 128)]
    assert transpose_cycles(TRN2, p, f) == sum(max(p, min(64, c)) for c in chunks)
    # worked: [32, 16] -> 32; [16, 100] -> 64; [128, 200] -> 128 + 128
    assert [transpose_cycles(TRN2, *s) for s in ((32, 16), (16, 100), (128, 200))] == [32, 64, 256]


@pytest.mark.parametrize("how", ["identity", "nc_transpose", "is_transpose"])
def test_a_tensor_engine_transpose_feeds_the_next_matmul(how):
    """x 128 x 256, w 256 x 512 bf16. Two 128-column blocks of x transposed into PSUM, each the
    stationary operand of one matmul with 128 rows of w: W = 2 x 128 (M) x 256 (K) x 512 (N) =
    33,554,432. Q: x 65,536 + w 262,144 + the identity constant 128 x 128 x 2 = 32,768 (loaded by
    every variant; unread by nc_transpose) + out 128 x 512 x 2 = 131,072 -> 491,520. Each
    transpose is the matmul of a 128 x 128 block with the 128 x 128 identity: 128 x 128 outputs
    of 128 multiply-adds, twice: 4,194,304 element-ops on the Tensor Engine, no FLOPs of W."""
    c, k, _ = analyzed("transposed_operand", {"how": how}, x=(128, 256), w=(256, 512))
    assert c.flops == 2 * 128 * 256 * 512 == 33_554_432
    assert c.Q == 65_536 + 262_144 + 32_768 + 131_072 == 491_520
    (t,) = [w for w in kernel_of(k).work if w.call.startswith("nc_transpose")]
    assert (t.engine, t.elements, t.passes, t.executions) == ("tensor", 128 * 128, 128, 2)
    assert t.element_ops == 4_194_304 and t.flops == 0 and not t.assumed
    # the matmul reads the transposed block of x itself: K (the loop k) on x's columns
    (mm,) = matmuls(k)
    assert mm.stationary.tensor == "x" and mm.stationary.index[1] == ("k",)


def test_a_psum_tile_reused_per_output_tile_over_a_tensor_of_tiles():
    """at [4, 2, 128, 128]: tile (k, m) of A^T (K = 512, M = 256); b [4, 128, 128] (N = 128).
    W = 2 x 512 x 256 x 128 = 33,554,432 (8 instructions of 2 x 128^3). Q: at once 262,144, b
    once per m (2 x 131,072 = 262,144), out 256 x 128 x 2 = 65,536 -> 589,824."""
    c, k, _ = analyzed("tiles_of_tiles", at=(4, 2, 128, 128), b=(4, 128, 128))
    assert c.flops == 2 * 512 * 256 * 128 == 33_554_432
    assert c.instructions == 8
    assert c.Q == 262_144 + 2 * 131_072 + 65_536 == 589_824
    assert c.tensor_map["b"].r == 2
    # the tensor of tiles reads as [K, M]: kv tiles with their partitions, m tiles with columns
    assert kernel_of(k).tensor_map["at"].shape == (512, 256)


@settings(max_examples=8, deadline=None)
@given(st.integers(1, 6), st.sampled_from([128, 256, 512]))
def test_a_second_contraction_walked_one_element_at_a_time(h, n):
    """x [128, H, 128], w [128, H, N]: out = sum_h x[:, h, :].T @ w[:, h, :], H instructions of
    K = 128, M = 128, N: W = 2 x 128 x H x 128 x N; Q = 2 B x (128 H 128 + 128 H N + 128 N)."""
    c, _, _ = analyzed("two_contractions", x=(128, h, 128), w=(128, h, n))
    assert c.flops == 2 * 128 * h * 128 * n
    assert c.instructions == h
    assert c.Q == 2 * (128 * h * 128 + 128 * h * n + 128 * n)


def test_two_contractions_worked_example():
    """H = 4, N = 512: W = 2 x 128 x 4 x 128 x 512 = 67,108,864; Q = 131,072 (x) + 524,288 (w)
    + 131,072 (out) = 786,432."""
    c, _, _ = analyzed("two_contractions", x=(128, 4, 128), w=(128, 4, 512))
    assert (c.flops, c.Q) == (67_108_864, 786_432)


def test_a_prologue_tile_at_a_fixed_index_of_a_longer_operand():
    """q, k 128 x 512; only q[:, 0:128] enters the one matmul: W = 2 x 128 x 128 x 512 =
    16,777,216 (not M = 512 of q's shape). Q: q and k loaded whole, 131,072 each, out 128 x 512
    x 2 = 131,072 -> 393,216."""
    c, k, _ = analyzed("prologue_tile", q=(128, 512), k=(128, 512))
    assert c.flops == 2 * 128 * 128 * 512 == 16_777_216
    assert c.Q == 3 * 131_072 == 393_216
    (mm,) = matmuls(k)
    assert mm.stationary.extent_of(1) == 128  # the slice says its extent: 128 of q's 512


def test_a_sliding_window_matmul_is_tensor_engine_work_with_exact_w():
    """x 128 x 512, f 3 x 128 x 128, taps t = 0..2 over windows x[:, t:t + 510]: each tap one
    instruction of K = 128, M = 128, N = 510: W = 3 x 2 x 128 x 128 x 510 = 50,135,040, kept
    outside the nest (the window's index is also the output's: no einsum reading), assumed.
    Q: x 131,072 + f 98,304 + out 128 x 510 x 2 = 130,560 -> 359,936."""
    c, k, rec = analyzed("sliding_window", x=(128, 512), f=(3, 128, 128))
    assert c.flops == 3 * 2 * 128 * 128 * 510 == 50_135_040
    assert c.Q == 131_072 + 98_304 + 130_560 == 359_936
    assert not matmuls(k)
    (w,) = [w for w in kernel_of(k).work if w.matmul]
    assert (w.engine, w.elements, w.passes, w.executions, w.assumed) == ("tensor", 128 * 510, 128, 3, True)
    line = next(i for i, s in enumerate(KERNELS.read_text().splitlines(), 1)
                if "ps += nisa.nc_matmul(f_sb[:, t, :]" in s)
    assert w.where.endswith(f"matmul_roles.py:{line}")
    assert any("kept as Tensor Engine work outside the nest" in n for n in rec.notes)


def test_an_output_made_by_two_pipeline_stages_reads_as_one_nest():
    """x 128 x 256, w 128 x 128, v 256 x 128: two stages g_i = x_i.T @ w (2 x 2 x 128^3), then
    out += e_i.T @ v_i (2 x 2 x 128^3): W = 4 x 2 x 128^3 = 16,777,216. Q: x 65,536 + w 32,768
    + v 65,536 + out 32,768 = 196,608 (the stage values stay on chip)."""
    c, k, rec = analyzed("unrolled_stages", x=(128, 256), w=(128, 128), v=(256, 128))
    assert isinstance(k, ir.Kernel)  # no op graph
    assert c.flops == 4 * 2 * 128 ** 3 == 16_777_216
    assert c.Q == 65_536 + 32_768 + 65_536 + 32_768 == 196_608
    assert any("the stages of a software pipeline" in n and "ASSUMED" in n for n in rec.notes)
