"""Engine ops as kernels write them: elementwise chains of any number of input tiles (op kind
``chainN``), broadcasts between ranks, on-chip reshapes. Every figure is a hand count of the
kernel's source (tests/nki_kernels/elementwise_ops.py), derived in the comment beside it."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, strategies as st

from loopsim.base.errors import SpecError
from loopsim.frontends import program
from loopsim.frontends.nki.load import load_kernel
from loopsim.ir import ops
from loopsim.model import pipeline
from loopsim.targets import hardware
from loopsim.targets.neuron.timeline import timeline

KERNELS = Path(__file__).parent / "nki_kernels" / "elementwise_ops.py"
TRN2 = hardware.load("trn2-core")


def traced(func, args):
    return load_kernel(str(KERNELS), func, args=args)


def op_statements(k):
    return [s for s, _ in k.statements() if isinstance(s, ops.OpStatement)]


def vector_element_ops(k) -> int:
    """Element-ops the predicted timeline gives the Vector Engine: passes x elements of each op
    statement's tile at every execution, summed (the statement's kind as the IR names it)."""
    from loopsim.count.executions import tile_elements

    total = 0
    for s, loops in k.statements():
        if isinstance(s, ops.OpStatement):
            kind = ops.get(s.kind)
            per = s.out if kind.per_output else s.inputs[0]
            total += sum(p for e, p in kind.work if e == "vector") * tile_elements(s, loops, per, k)
    return total


# -- the chain kind ----------------------------------------------------------------------------


def test_chain_kind_any_arity_broadcasts_and_costs_its_output():
    k = ops.kind("chain3", "t")
    assert (k.arity, k.work, k.per_output) == (0, (("vector", 3),), True)
    # NumPy's rules: [128, 4, 64] with [128, 1, 64] and [64] -> [128, 4, 64]
    shapes = [(128, 4, 64), (128, 1, 64), (64,), (128, 4, 64)]
    assert ops.output_shape(k, shapes, ["a", "b", "c", "d"], "t") == (128, 4, 64)
    with pytest.raises(SpecError, match="do not broadcast"):
        ops.output_shape(k, [(128, 64), (128, 32)], ["a", "b"], "t")
    for bad in ("chain0", "chain", "chainx", "chain01"):
        assert ops.get(bad) is None
        with pytest.raises(SpecError, match="not a known op"):
            ops.kind(bad, "t")


@given(st.lists(st.lists(st.integers(1, 4), min_size=0, max_size=4), min_size=1, max_size=4))
def test_broadcast_agrees_with_numpy(shapes):
    import numpy as np

    shapes = [tuple(s) for s in shapes]
    try:
        want = np.broadcast_shapes(*shapes)
    except ValueError:
        want = None
    assert ops.broadcast(shapes) == want


def test_a_chain_statement_parses_in_a_spec_nest():
    from loopsim.frontends import spec

    (loop,) = spec.parse_nest("for i in 256 by 128:\n  chain3 y[i, :] = a[i, :], b[i, :], c[:, :], d[:, :]",
                              {}, "t.toml")
    (stmt,) = loop.body
    assert stmt.kind == "chain3" and [a.tensor for a in stmt.inputs] == ["a", "b", "c", "d"]


# -- RoPE: four input tiles --------------------------------------------------------------------


def test_rotary_halves_is_one_chain_of_six_instructions():
    k = traced("rotary_halves", {"x": ((256, 128), "bf16"), "cos": ((128, 64), "bf16"),
                                 "sin": ((128, 64), "bf16")})
    (op,) = op_statements(k)
    assert sorted({a.tensor for a in op.inputs}) == ["cos", "sin", "x"] and not k.notes
    # per 128-row tile: 4 multiplies, a subtract and an add, each on 128 x 64 = 8,192 elements:
    # 49,152 element-ops; 2 tiles: 98,304
    assert vector_element_ops(k) == 98_304
    # Q: x read once and out written once (256 x 128 x 2 B each), cos and sin 128 x 64 x 2 B each
    c = pipeline.analyze(program.Program.single(k), TRN2).counts
    assert c.Q == 2 * 65_536 + 2 * 16_384


def test_rotary_in_place_counts_each_instruction_once():
    k = traced("rotary_in_place", {"x": ((256, 128), "bf16"), "cos": ((128, 128), "bf16"),
                                   "sin": ((128, 128), "bf16")})
    (op,) = op_statements(k)
    assert op.kind.startswith("chain") and not k.notes
    # per tile: x * cos on 128 x 128 (16,384) and four instructions on 128 x 64 (4 x 8,192):
    # 49,152 element-ops; the statement's tile is the last write's (r[:, 64:], 8,192 elements),
    # so 49,152 / 8,192 = 6 passes; 2 tiles: 98,304
    assert op.kind == "chain6" and vector_element_ops(k) == 98_304


def test_rotary_on_a_tile_walking_rows_in_blocks_keeps_the_blocks_apart():
    k = traced("rotary_ap_blocks", {"x": ((512, 128), "bf16"), "cos": ((512, 128), "bf16"),
                                    "sin": ((512, 128), "bf16")})
    (op,) = op_statements(k)
    # x * cos on 128 x 4 x 128 = 65,536 elements, four instructions on 128 x 4 x 64 = 32,768:
    # 196,608 element-ops; the op's tile (the last write, r[:, :, 64:]) covers all 512 rows x 64
    # columns = 32,768 elements, so exactly 6 passes (no rounding note)
    assert op.kind == "chain6" and vector_element_ops(k) == 196_608 and not k.notes
    c = pipeline.analyze(program.Program.single(k), TRN2).counts
    assert c.Q == 4 * 512 * 128 * 2  # x, cos, sin read once, out written once


# -- broadcasts between ranks ------------------------------------------------------------------


def test_an_output_of_another_rank_follows_the_operand_with_its_axes():
    k = traced("scale_into_3d", {"x": ((128, 1024), "bf16"), "aff": ((128, 1), "bf16")})
    (op,) = op_statements(k)
    # [128, 1] * [128, 1024] into o[:, 0:1, :]: costed over the big tile, 128 x 1024 = 131,072
    assert (op.kind, [a.tensor for a in op.inputs]) == ("mul", ["x", "aff"]) and not k.notes
    assert vector_element_ops(k) == 131_072
    c = pipeline.analyze(program.Program.single(k), TRN2).counts
    # x and out 128 x 1024 x 2 B each, aff 128 x 2 B
    assert c.Q == 2 * 262_144 + 256


def test_an_output_grouping_its_elements_otherwise_holds_the_tile_whole():
    k = traced("regroup_elementwise", {"x": ((128, 1024), "bf16")})
    (op,) = op_statements(k)
    # one multiply over 128 x 1024 = 131,072 elements, written as [128, 4, 256]
    assert op.kind == "chain1" and vector_element_ops(k) == 131_072
    assert any("another rank" in n and "ASSUMED" in n for n in k.notes)
    c = pipeline.analyze(program.Program.single(k), TRN2).counts
    assert c.Q == 2 * 262_144  # x read once, out written once


# -- on-chip reshapes --------------------------------------------------------------------------


def test_a_reshape_mixing_free_axes_is_written_through_as_the_same_bytes():
    k = traced("regroup_through_view", {"x": ((128, 4, 256), "bf16")})
    # the [128, 4, 256] tile lands in the [128, 2, 512] buffer through its view and is stored
    # whole: x read once, out written once, 128 x 1024 x 2 B each
    c = pipeline.analyze(program.Program.single(k), TRN2).counts
    assert {t.name: (t.read_bytes, t.write_bytes) for t in c.tensors} == \
        {"x": (262_144, 0), "out": (0, 262_144)}
    assert any("merges axes holding different dimensions of x" in n for n in k.notes)


# -- a kernel file that runs its own test at import --------------------------------------------


def test_a_failing_top_level_test_after_the_kernel_is_not_run():
    path = str(KERNELS.parent / "runs_at_import.py")
    k = load_kernel(path, "copy_rows", args={"x": ((256, 512), "bf16")})
    c = pipeline.analyze(program.Program.single(k), TRN2).counts
    assert c.Q == 2 * 256 * 512 * 2  # x read once, out written once (bf16)
    assert any("runs_at_import.py:24: importing the kernel file stopped" in n and "TypeError" in n
               for n in k.notes)
    # a kernel defined below the failing line was never defined: refused, with the line
    with pytest.raises(SpecError, match=r"runs_at_import.py:24: .*importing the kernel file: TypeError"):
        load_kernel(path, "defined_after", args={"x": ((256, 512), "bf16")})


# -- chainN in a spec --------------------------------------------------------------------------

ROPE_SPEC = """
[kernel]
name = "rope"
about = "RoPE as one chain of 3 Vector passes: y = x * cos + rot(x) * sin, cos and sin rows broadcast"

[params]
B = 512
D = 128
TB = 128

[tensors]
x = { shape = ["B", "D"], dtype = "bf16" }
cos = { shape = ["D"], dtype = "bf16" }
sin = { shape = ["D"], dtype = "bf16" }
y = { shape = ["B", "D"], dtype = "bf16", output = true }

[nest.rope]
body = '''
load cos[:]
load sin[:]
for b in B by TB:
  load x[b, :]
  chain3 y[b, :] = cos[:], x[b, :], sin[:]
  store y[b, :]
'''
"""


def test_a_chain_in_a_spec_is_costed_over_its_output(tmp_path):
    f = tmp_path / "rope.toml"
    f.write_text(ROPE_SPEC)
    res = pipeline.analyze(pipeline.load(str(f)), TRN2)
    (step,) = res.steps
    # 3 passes x (512 x 128 = 65,536 output elements); its first input, cos, has 128 per tile
    assert (step.kind, step.engine, step.elements) == ("chain3", "vector", 196_608)
    # Q: x read and y written once (512 x 128 x 2 B each), cos and sin 128 x 2 B each
    assert res.Q == 2 * 131_072 + 2 * 256
    bad = tmp_path / "bad.toml"
    bad.write_text(ROPE_SPEC.replace('cos = { shape = ["D"]', 'cos = { shape = ["TB", "TB"]')
                   .replace('load cos[:]', 'load cos[:, :]').replace('cos[:], x', 'cos[:, :], x'))
    with pytest.raises(SpecError, match="do not broadcast"):
        pipeline.load(str(bad))


def test_a_reused_scratch_buffer_does_not_carry_a_read_value():
    k = traced("scratch_halves", {"x": ((128, 256), "bf16")})
    # u = t[:, :128] * 2 + 1 (2 instructions on 128 x 128) and w[:, 128:] = t[:, 128:] * 3 (1):
    # 3 x 16,384 = 49,152 element-ops; carrying w[:, :128]'s multiply again would make 65,536
    assert vector_element_ops(k) == 49_152


@given(st.integers(1, 12))
def test_a_chain_of_n_instructions_costs_n_passes(n_ops):
    shapes = {t: ((128, 256), "bf16") for t in "xyzw"}
    k = load_kernel(str(KERNELS), "chain_of", args=shapes, kwargs={"n_ops": n_ops})
    (op,) = op_statements(k)
    # n_ops instructions, each over the whole 128 x 256 = 32,768-element tile
    assert vector_element_ops(k) == n_ops * 32_768 and not k.notes
    assert op.kind == ("mul" if n_ops == 1 else f"chain{n_ops}")


def test_a_chain_lines_time_is_the_timelines_busy_time(tmp_path, capsys):
    # the per-source-line table (engine_lines, as `entitle --measured` prints it) costs a chain
    # over its output, as the timeline does: 512 / TB = 4 executions, each 3 passes over the
    # 128 x 128 = 16,384-element output tile ([S2] Vector 512 bf16 elements/cycle at 0.96 GHz =
    # 491.52e9/s): 49,152 / 491.52e9 = 100 ns, above MIN_II = 64 cycles = 66.7 ns; 4 x 100 ns.
    # Counting the first input (cos, 128 elements) would give 4 x MIN_II = 266.7 ns.
    import json

    from loopsim.cli.main import main

    f = tmp_path / "rope.toml"
    f.write_text(ROPE_SPEC)
    kernel = pipeline.load(str(f)).stages[0].kernel
    rows = [r for r in TRN2.engine_lines(kernel, "bf16") if r[1].startswith("chain3")]
    assert [(r[3], round(r[2] * 1e9, 6)) for r in rows] == [("vector", 400.0)]
    assert main(["timeline", str(f), "-H", "trn2-core", "--json"]) == 0
    eng = json.loads(capsys.readouterr().out)["stages"][0]["engines"]
    assert eng["vector"]["busy_s"] == pytest.approx(4 * 49_152 / 491.52e9, rel=1e-12)
