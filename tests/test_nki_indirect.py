"""Indirect DMAs (tests/nki_kernels/indirect.py): rows chosen at run time by index data are
counted as what the DMA moves (rows x row bytes, every row a fresh HBM read, ASSUMED), one
transfer per gathered row, into a tensor of their own; an indirect pattern that is no box is
refused in one line."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from loopsim.cli.main import main
from loopsim.frontends.nki.load import load_kernel
from loopsim.model import pipeline
from loopsim.targets import hardware
from loopsim.targets.neuron import dma

KERNELS = Path(__file__).parent / "nki_kernels" / "indirect.py"
TRN2 = hardware.load("trn2-core")


def traced(func, args):
    return load_kernel(str(KERNELS), func, args=args)


def line_of(text: str) -> int:
    return next(i for i, ln in enumerate(KERNELS.read_text().splitlines(), 1) if text in ln)


def counts(k) -> dict:
    c = pipeline.analyze_kernel(k, TRN2).counts
    return {"Q": c.Q, **{t.name: (t.read_bytes, t.write_bytes) for t in c.tensors}}


def transfers(k) -> dict:
    """statement text -> (transfers, bytes) of the DMA report."""
    return {s.text: (s.transfers, s.bytes) for s in dma.report(k, TRN2).statements}


def test_a_token_gather_moves_its_rows_once_per_block_one_transfer_per_row():
    k = traced("token_gather", {"table": ((1024, 256), "bf16"), "ids": ((512, 1), "int32")})
    c = counts(k)
    # 512 ids = 4 blocks of 128 gathered rows of 256 x 2 B = 4 x 128 x 512 B = 262,144 B, each
    # block fresh rows; the gathered tile read twice on chip, loaded once; ids 512 x 4 B; out
    # 512 x 256 x 2 B written; the table itself is never read as a box
    assert c["table_gathered"] == (4 * 128 * 512, 0) and "table" not in c
    assert c["ids"] == (512 * 4, 0) and c["out"] == (0, 512 * 512)
    assert c["Q"] == 4 * 128 * 512 + 512 * 4 + 512 * 512
    t = transfers(k)
    # one transfer (descriptor) per gathered row: 4 x 128, each 512 B; ids and out one per block
    assert t["load table_gathered[b, :] by 1"] == (4 * 128, 4 * 128 * 512)
    assert t["load ids[b]"] == (4, 2_048) and t["store out[b, :]"] == (4, 262_144)
    line = line_of("nisa.dma_copy(dst=rows, src=table.ap(")
    assert any(n.startswith(f"{KERNELS}:{line}: vector_offset= reads 128 rows of table") and
               "fresh rows per execution (4)" in n and "ASSUMED" in n for n in k.notes)


def test_an_expert_slab_chosen_by_a_scalar_offset_tile_is_one_block_per_index():
    k = traced("expert_slab", {"w": ((4, 128, 512), "bf16"), "expert_of": ((3,), "int32")})
    c = counts(k)
    # 3 blocks, each its expert's 128 x 512 x 2 B slab read in two column halves (the same
    # index, the same rows: no half counted twice): 3 x 131,072 B; expert_of 3 x 4 B
    assert c["w_gathered"] == (3 * 128 * 512 * 2, 0) and c["expert_of"] == (12, 0)
    assert c["out"] == (0, 3 * 131_072) and "w" not in c
    t = transfers(k)
    # a scalar_offset= DMA is one transfer of its box (a start address read at run time):
    # 3 blocks x 2 halves of 128 x 256 x 2 B
    assert t["load w_gathered[128*b, half]"] == (6, 3 * 131_072)
    assert any("scalar_offset= reads 1 row of w" in n and "per element of expert_of" in n
               for n in k.notes)


@settings(max_examples=12, deadline=None)
@given(blocks=st.integers(1, 4), h=st.sampled_from([64, 128, 512]))
def test_gathered_bytes_are_rows_times_row_bytes(blocks, h):
    """Property: Q of the gathered rows is blocks x 128 x h x 2 B, in blocks x 128 transfers."""
    k = traced("token_gather", {"table": ((256, h), "bf16"), "ids": ((128 * blocks, 1), "int32")})
    assert counts(k)["table_gathered"] == (blocks * 128 * h * 2, 0)
    assert transfers(k)["load table_gathered[b, :] by 1"] == (blocks * 128, blocks * 128 * h * 2)


def test_an_indirect_store_counts_its_box_and_says_which_rows_are_data():
    k = traced("token_scatter", {"x": ((128, 64), "bf16"), "ids": ((128, 1), "int32")})
    c = counts(k)
    # 128 rows of 64 x 2 B written once; x read once
    assert c["out"] == (0, 128 * 128) and c["x"] == (128 * 128, 0)
    line = line_of("nisa.dma_copy(dst=out.ap(")
    assert any(n.startswith(f"{KERNELS}:{line}: vector_offset= writes rows of out") for n in k.notes)


def test_an_indirect_pattern_that_is_no_box_is_one_line(capsys):
    rc = main(["entitle", f"{KERNELS}::strided_gather", "--arg", "table=1024x256",
               "--arg", "ids=128x1:int32", "-H", "trn2-core"])
    err = capsys.readouterr().err.strip().splitlines()
    line = line_of("nisa.dma_copy(dst=rows, src=table.ap(pattern=[[h, 128], [2")
    assert rc != 0 and len(err) == 1
    assert err[0].startswith(f"loopsim: error: {KERNELS}:{line}: kernel strided_gather: .ap of ")
    assert "vector_offset=: rows chosen at run time through pattern [[256, 128], [2, 128]]" in err[0]
    assert "not modelled" in err[0]


def test_a_gather_along_no_dimension_of_the_tensor_counts_its_static_box_assumed():
    k = traced("reshaped_gather", {"table": ((256, 64), "bf16"), "ids": ((128, 1), "int32")})
    c = counts(k)
    # rows of 128 elements are no dimension of the [256, 64] table: the pattern's box at offset 0
    # (128 x 128 elements = the whole table, 32,768 B, a tile of its own) after the first
    # 128 x 64 rows (16,384 B), ASSUMED and noted
    assert c["table"][0] == 16_384 + 32_768 and "table_gathered" not in c
    line = line_of("nisa.dma_copy(dst=rows, src=table.reshape(")
    assert any(n.startswith(f"{KERNELS}:{line}: vector_offset= on a reshaped handle of table") and
               "ASSUMED" in n for n in k.notes)
