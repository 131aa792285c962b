"""Idioms of NKI kernels published outside nki-samples and nki-library (model code in
neuronx-distributed-inference and optimum-neuron, the Neuron SDK's examples), in kernels written
for these tests. Every count is a hand count of the test kernel's source (derivations beside)."""

from __future__ import annotations

from pathlib import Path

import pytest

from loopsim.base.errors import LoopsimError
from loopsim.frontends import program
from loopsim.frontends.nki.load import trace_kernel
from loopsim.model import pipeline
from loopsim.targets import hardware

KERNELS = Path(__file__).parent / "nki_kernels" / "other_corpora"
TRN2 = hardware.load("trn2-core")
F32 = ((128, 128), "fp32")


def counts_of(file, func, **args):
    k, rec = trace_kernel(str(KERNELS / file), func, args=args)
    prog = k if isinstance(k, program.Program) else program.Program.single(k)
    return pipeline.analyze(prog, TRN2).counts, rec


def test_an_optional_package_probe_finds_nothing_instead_of_a_stub():
    """``importlib.util.find_spec(missing) is not None`` is False, so the module defines its
    own helper (a stub answering the probe sent the kernel into the missing package).
    x 128 x 512 bf16 read once, out written once: Q = 2 x 128 x 512 x 2 B = 262,144."""
    c, rec = counts_of("probed.py", "probed_copy", x=((128, 512), "bf16"))
    assert c.Q == 2 * 128 * 512 * 2 == 262_144
    assert not any("loopsim_test_fastcopy_missing" in n for n in rec.notes)


def test_a_matmul_result_copied_to_sbuf_is_the_next_matmuls_operand():
    """(a.T @ b) copied out of PSUM, then the stationary operand of a second matmul with c;
    128 x 128 fp32 each. W = 2 matmuls x 2 x 128^3 = 8,388,608 FLOPs; Q = a, b, c read and
    out written once = 4 x 128 x 128 x 4 B = 262,144 (the intermediate never leaves the chip)."""
    c, _ = counts_of("chained.py", "chained_matmul", a=F32, b=F32, c=F32)
    assert c.flops == 2 * 2 * 128 ** 3 == 8_388_608
    assert c.Q == 4 * 128 * 128 * 4 == 262_144


def test_a_matmul_recurrence_in_a_loop_is_charged_per_round_and_listed():
    """p = a.T @ p three times (the loop indexes none of the matmul's tiles: a loop-carried
    value, not a K reduction): W = 3 rounds x 2 x 128^3 = 12,582,912 FLOPs, charged from the
    instruction's shapes and listed as assumed; Q = a read, out written = 2 x 128^2 x 4 B."""
    c, rec = counts_of("chained.py", "matmul_recurrence", a=F32)
    assert c.flops == 3 * 2 * 128 ** 3 == 12_582_912
    assert c.Q == 2 * 128 * 128 * 4 == 131_072
    assert any("recurrence" in n and "chained.py:44" in n for n in rec.notes)
    assert [w.where.rsplit(":", 1)[-1] for w in rec.work if w.assumed] == ["44"]


def test_a_column_taken_by_an_integer_index_is_a_unit_axis_a_helper_indexes_again():
    """``stat[:, i]`` passed to a helper that writes ``col[:, 0]`` (NKI keeps the column as
    [128, 1]). x 128 x 2048 fp32 read once, out 128 x 4 fp32 written once:
    Q = 128 x 2048 x 4 + 128 x 4 x 4 = 1,048,576 + 2,048 = 1,050,624 B."""
    c, _ = counts_of("columns.py", "column_stats", x=((128, 2048), "fp32"))
    assert c.Q == 128 * 2048 * 4 + 128 * 4 * 4 == 1_050_624


def test_a_value_stored_over_part_of_another_layouts_output_reads_as_one_nest():
    """x [128, 512] (tokens, 2 heads x 256) -> out [2, 128, 256] (heads first): per head the
    doubled row is stored, then out[h, :, 0:32] again from a rotation op (another layout than
    the output's, so no op graph reads it). Q = x 128*512*2 + c 2 heads x 128*32*2 + out
    2*128*256*2 + rewrites 2 x 128*32*2 = 131,072 + 16,384 + 131,072 + 16,384 = 294,912 B."""
    c, rec = counts_of("overwrite.py", "store_then_rewrite", x=((128, 512), "bf16"),
                       c=((128, 32), "bf16"))
    assert c.Q == 131_072 + 16_384 + 131_072 + 16_384 == 294_912
    assert any("r is read by no op the op graph holds" in n and "ASSUMED" in n for n in rec.notes)


def test_a_matmul_on_data_placed_by_a_reshaping_copy_does_the_kernels_flops():
    """xs: x's [128, 4, 32] tile copied through a [128, 128] view (its element order not
    followed, once read as a constant and its matmul left out of W). out = xs.T @ w:
    W = 2 x 128 x 128 x 256 = 8,388,608 FLOPs (charged from the instruction's shapes, listed);
    Q = x 128*128*2 + w 128*256*2 + out 128*256*2 = 32,768 + 65,536 + 65,536 = 163,840 B."""
    c, rec = counts_of("permuted.py", "permuted_operand_matmul", x=((128, 4, 32), "bf16"),
                       w=((128, 256), "bf16"))
    assert c.flops == 2 * 128 * 128 * 256 == 8_388_608
    assert c.Q == 32_768 + 65_536 + 65_536 == 163_840
    assert [w.where.rsplit(":", 1)[-1] for w in rec.work if w.assumed and "matmul" in str(w)] == ["21"]


def test_a_chain_of_matmuls_deeper_than_the_counts_hold_is_refused_in_one_line():
    """Two chained matmuls count (W = 2 x 2 x 128^3 = 8,388,608; Q = a and out, 2 x 128^2 x 4 B);
    forty give a nest of 120 whole-tile loops, past numpy's 64 axes: one clear line naming the
    depth, not a crash in the counts."""
    k, _ = trace_kernel(str(KERNELS / "chained.py"), "long_chain", args={"a": F32},
                        kwargs={"rounds": 2})
    c = pipeline.analyze(program.Program.single(k) if not isinstance(k, program.Program) else k,
                         TRN2).counts
    assert (c.flops, c.Q) == (2 * 2 * 128 ** 3, 2 * 128 * 128 * 4)
    with pytest.raises(LoopsimError, match=r"chained.py: kernel long_chain: its nest is 120 loops deep"):
        trace_kernel(str(KERNELS / "chained.py"), "long_chain", args={"a": F32}, kwargs={"rounds": 40})
