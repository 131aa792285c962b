"""Each op said once: a program's op graph and inputs derived from its nest statements
(loopsim.graph.derive_ops), checked against the same programs with [ops] spelled out."""

import json
import re

import pytest

from loopsim import hardware, pipeline, spec
from loopsim.cli import main
from loopsim.errors import SpecError

TRN2 = hardware.load("trn2-core")
SPELLED = {  # mlp_fused as it was written before (every op twice: here and in the nest)
    "inputs": 'inputs = ["x", "W_up", "W_down"]\n',
    "tables": '''[ops]
up = { kind = "matmul", in = ["x", "W_up"], out = "h" }
act = { kind = "gelu", in = ["h"], out = "g" }
down = { kind = "matmul", in = ["g", "W_down"], out = "y" }

[schedule]
mlp = ["up", "act", "down"]

''',
}


def _numbers(res):
    """What a program analysis says, with the ops' names left out (only they may differ)."""
    return (res.W, res.Q, res.T, res.limit, res.times, res.feasible,
            tuple((t.name, t.read_bytes, t.write_bytes) for t in res.counts.tensors),
            tuple((i.name, i.bytes, i.write_bytes, i.read_bytes, i.fused) for i in res.intermediates),
            tuple((s.kind, s.engine, s.W, s.Q, s.T_best) for s in res.steps))


def _strip(text: str) -> str:
    text = re.sub(r"\ninputs = \[.*?\]\n", "\n", text)
    text = re.sub(r"\[ops\]\n(?:.+\n)*", "", text)
    return re.sub(r"\[schedule\].*\n(?:.+\n)*", "", text)


def test_mlp_fused_said_once_gives_the_numbers_it_gave_spelled_out(tmp_path):
    text = spec.locate("mlp_fused").read_text()
    lines = text.splitlines()
    assert not [ln for ln in lines if ln.startswith(("[ops]", "[schedule]", "inputs ="))]
    old = tmp_path / "mlp_fused_spelled.toml"
    old.write_text(text.replace('[kernel]\nname = "mlp_fused"\n',
                                '[kernel]\nname = "mlp_fused"\n' + SPELLED["inputs"])
                   .replace("# Each op is said once", SPELLED["tables"] + "# Each op is said once"))
    new_res = pipeline.analyze(pipeline.load("mlp_fused"), TRN2)
    old_res = pipeline.analyze(pipeline.load(str(old)), TRN2)
    assert _numbers(new_res) == _numbers(old_res)
    # and by hand (Day 5, fused): x, both weights and y cross HBM once, h and g never
    B, D, F = 2048, 1024, 4096
    assert new_res.Q == 2 * (B * D + D * F + F * D + B * D) == 25_165_824
    assert new_res.W == 2 * (2 * B * D * F)
    assert [(i.name, i.write_bytes + i.read_bytes) for i in new_res.intermediates] == [("h", 0), ("g", 0)]
    prog = new_res.program
    assert set(prog.inputs) == {"x", "W_up", "W_down"}
    assert [(o.name, o.kind, o.inputs, o.transposed) for o in prog.ops] == [
        ("h", "matmul", ("x", "W_up"), (False, False)), ("g", "gelu", ("h",), (False,)),
        ("y", "matmul", ("g", "W_down"), (False, False))]


@pytest.mark.parametrize("name", ["mlp_unfused", "swiglu_mlp", "attention_fused",
                                  "attention_unfused", "layernorm"])
def test_every_bundled_program_said_once_gives_the_same_numbers(name, tmp_path):
    f = tmp_path / f"{name}.toml"
    f.write_text(_strip(spec.locate(name).read_text()))
    assert "\n[ops]" not in f.read_text()
    derived = pipeline.analyze(pipeline.load(str(f)), TRN2)
    spelled = pipeline.analyze(pipeline.load(name), TRN2)
    assert _numbers(derived) == _numbers(spelled)
    # the derived ops are the spelled ones, named after the tensor each makes
    want = sorted((o.out, o.kind, o.inputs, o.transposed) for o in spelled.program.ops)
    assert sorted((o.name, o.kind, o.inputs, o.transposed) for o in derived.program.ops) == want


def test_attention_qk_is_derived_as_q_times_k_transposed(tmp_path):
    f = tmp_path / "att.toml"
    f.write_text(_strip(spec.locate("attention_fused").read_text()))
    ops = {o.name: o for o in pipeline.load(str(f)).ops}
    # 'matmul s[i, j] += q[i, c] @ k[j, c]': s = q @ k.T, then o = p @ v
    assert (ops["s"].inputs, ops["s"].transposed) == (("q", "k"), (False, True))
    assert (ops["o"].inputs, ops["o"].transposed) == (("p", "v"), (False, False))


def test_ops_table_keeps_only_an_engine_override(tmp_path, capsys):
    text = spec.locate("mlp_fused").read_text()
    f = tmp_path / "v.toml"
    f.write_text(text + '\n[ops]\ng = { engine = "vector" }\n')
    res = pipeline.analyze(pipeline.load(str(f)), TRN2)
    (gelu,) = [s for s in res.steps if s.kind == "gelu"]
    assert gelu.engine == "vector"
    for extra, msg in ((('g = { engine = "vector", kind = "gelu" }'), "keeps only engine and about"),
                       ('z = { engine = "vector" }', "no nest statement makes z"),
                       ('h = { engine = "vector" }', "a matmul runs on the Tensor Engine")):
        f.write_text(text + "\n[ops]\n" + extra + "\n")
        assert main(["entitle", str(f), "--hardware", "trn2-core"]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and msg in err, err
    f.write_text(text + '\n[schedule]\nmlp = ["up", "act", "down"]\n')
    with pytest.raises(SpecError, match=r"\[schedule\].*kernels = \[\.\.\.\]"):
        pipeline.load(str(f))
