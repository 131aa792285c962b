"""Re-rolling a software pipeline (tests/nki_kernels/pipelined.py, the idiom of the attention
tutorials' scheduling steps v10/v11): a loop run concretely (``i % 2`` rotation) whose stages
read what the prologue or the iteration before made, folded back into loops. Every stage's op
must survive the fold (an exp lost leaves its PSUM scores live to the end), and a scaled copy
that drains PSUM into a rotated SBUF row is an instruction of its own (the PSUM tile is free
after it, not after a later loop's exp reads the row). W, Q, the PSUM banks and the engine
elements are hand counts of the kernel's source."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from loopsim.count.executions import tile_elements
from loopsim.frontends.nki.load import load_kernel
from loopsim.ir import kernel as ir
from loopsim.ir import ops
from loopsim.model import pipeline
from loopsim.targets import hardware

KERNELS = Path(__file__).parent / "nki_kernels" / "pipelined.py"
TRN2 = hardware.load("trn2-core")


def traced(L: int, d: int = 128):
    args = {"q": ((d, L), "bf16"), "k": ((d, L), "bf16"), "v": ((L, d), "bf16")}
    return load_kernel(str(KERNELS), "pipelined_attention", args=args)


def op_elements(k) -> dict[str, int]:
    """Elements each op kind's statements write, summed over their executions."""
    out: dict[str, int] = {}
    for s, loops in k.statements():
        if isinstance(s, ops.OpStatement):
            out[s.kind] = out.get(s.kind, 0) + tile_elements(s, loops, s.out, k)
    return out


def check(L: int) -> None:
    """d = 128, L = 128 n (n blocks of queries and of keys).
    W: per query block, stage A's n matmuls sT = k_jᵀ q_i (K = d, M = 128 keys, N = 128
    queries) and stage C's n matmuls o_i += p_jᵀ v_j (K = 128 keys, M = 128 queries, N = d):
    2 n x 2 x 128 x 128 x 128 per block, n blocks -> 4 L² d.
    Q: q, k, v read once, o written once, each L x d bf16: 4 x 2 L d = 8 L d.
    PSUM: one 128 x 128 fp32 scores tile (512 B per partition: 1 bank of 2 KiB) drained by the
    scaled copy in the same key iteration, beside o's accumulator (128 x 128 fp32: 1 bank) open
    for the whole walk over the keys: 2 banks, at every n.
    Engine elements: every query block's scores are copied out (chain1: the x 0.125 copy) and
    exponentiated (exp) once: L x L each. A lost stage (the fold dropping a re-rolled exp)
    shows here as fewer elements, and in PSUM as scores never drained."""
    k = traced(L)
    assert isinstance(k, ir.Kernel)  # o made by two stages: one nest, no op graph
    rep = pipeline.analyze_kernel(k, TRN2)
    d = 128
    assert rep.counts.flops == 4 * L * L * d
    assert rep.counts.Q == 8 * L * d
    ps = rep.ceilings.psum
    assert (ps.needed_banks, ps.fits) == (2, True)
    assert op_elements(k) == {"chain1": L * L, "exp": L * L}
    # every on-chip accumulator a matmul makes is read by a later op statement
    stmts = [s for s, _ in k.statements()]
    outputs = {t.name for t in k.tensors if t.output}
    for i, s in enumerate(stmts):
        if isinstance(s, ir.Matmul) and s.out.tensor not in outputs:
            assert any(isinstance(r, ops.OpStatement) and any(a.tensor == s.out.tensor for a in r.inputs)
                       for r in stmts[i + 1:]), f"{s}: its accumulator has no consumer"


def test_pipelined_attention_keeps_every_stage_and_fits_psum():
    """L = 1024: W = 4 x 1024² x 128 = 536,870,912; Q = 8 x 1024 x 128 = 1,048,576;
    2 PSUM banks (before the fix: 41 live accumulator tiles, CANNOT RUN)."""
    check(1024)
    assert 4 * 1024 * 1024 * 128 == 536_870_912 and 8 * 1024 * 128 == 1_048_576


@settings(max_examples=8, deadline=None)
@given(st.integers(min_value=3, max_value=12))
def test_pipelined_attention_any_number_of_blocks(n):
    """The pipeline's loop runs n - 2 iterations (none folded for n = 3, a remainder left
    unrolled where the fold's period does not divide them): the hand counts hold at every n."""
    check(128 * n)
