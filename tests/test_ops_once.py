"""Each op said once: a program's op graph and inputs derived from its nest statements
(loopsim.frontends.ops.derive_ops), checked against the same programs with [ops] spelled out."""

import pytest

from loopsim.targets import hardware
from loopsim.model import pipeline
from loopsim.frontends import spec
from loopsim.cli.main import main
from loopsim.base.errors import SpecError

TRN2 = hardware.load("trn2-core")
SPELLED = {  # each bundled program as it was written before: its ops spelled out a second time
    'mlp_unfused': ('inputs = ["x", "W_up", "W_down"]\n',
        '[ops]\nup = { kind = "matmul", in = ["x", "W_up"], out = "h" }\nact = { kind = "gelu", in = ["h"], out = "g" }\ndown = { kind = "matmul", in = ["g", "W_down"], out = "y" }\n\n[schedule]        # three kernels, in order: nothing fused\nup = ["up"]\nact = ["act"]\ndown = ["down"]\n\n'),
    'swiglu_mlp': ('inputs = ["x", "W_gate", "W_up", "W_down"]\n',
        '[ops]\ngate = { kind = "matmul", in = ["x", "W_gate"], out = "a" }\nup = { kind = "matmul", in = ["x", "W_up"], out = "u" }\nact = { kind = "silu", in = ["a"], out = "s" }\nprod = { kind = "mul", in = ["s", "u"], out = "z" }\ndown = { kind = "matmul", in = ["z", "W_down"], out = "y" }\n\n[schedule]\nmlp = ["gate", "up", "act", "prod", "down"]\n\n'),
    'attention_fused': ('inputs = ["q", "k", "v"]\n',
        '[ops]\nqk = { kind = "matmul", in = ["q", "k.T"], out = "s" }\nsm = { kind = "online_softmax", in = ["s"], out = "p" }\npv = { kind = "matmul", in = ["p", "v"], out = "o" }\n\n[schedule]\nattn = ["qk", "sm", "pv"]\n\n'),
    'attention_unfused': ('inputs = ["q", "k", "v"]\n',
        '[ops]\nqk = { kind = "matmul", in = ["q", "k.T"], out = "s" }\nsm = { kind = "softmax", in = ["s"], out = "p" }\npv = { kind = "matmul", in = ["p", "v"], out = "o" }\n\n[schedule]\nqk = ["qk"]\nsm = ["sm"]\npv = ["pv"]\n\n'),
    'layernorm': ('inputs = ["x", "gamma", "beta"]\n',
        '[ops]\nln = { kind = "layernorm", in = ["x", "gamma", "beta"], out = "y" }\n\n[schedule]\nln = ["ln"]\n\n'),
}
SPELLED["mlp_fused"] = ('inputs = ["x", "W_up", "W_down"]\n',
                        '[ops]\nup = { kind = "matmul", in = ["x", "W_up"], out = "h" }\n'
                        'act = { kind = "gelu", in = ["h"], out = "g" }\n'
                        'down = { kind = "matmul", in = ["g", "W_down"], out = "y" }\n\n'
                        '[schedule]\nmlp = ["up", "act", "down"]\n\n')


def spelled_text(name: str) -> str:
    """The bundled spec ``name`` with its ops spelled out a second time, as it was written before
    (``[ops]``, ``[schedule]``, ``kernel.inputs``): the older form, which still works."""
    inputs, tables = SPELLED[name]
    text = spec.locate(name).read_text()
    at = text.index("\n[nest.") + 1
    return (text[:at] + tables + text[at:]).replace("[kernel]\n", "[kernel]\n" + inputs, 1)


def _spelled(name: str, tmp_path):
    f = tmp_path / f"{name}_spelled.toml"
    f.write_text(spelled_text(name))
    return str(f)


def _numbers(res):
    """What a program analysis says, with the ops' names left out (only they may differ)."""
    return (res.W, res.Q, res.T, res.limit, res.times, res.feasible,
            tuple((t.name, t.read_bytes, t.write_bytes) for t in res.counts.tensors),
            tuple((i.name, i.bytes, i.write_bytes, i.read_bytes, i.fused) for i in res.intermediates),
            tuple((s.kind, s.engine, s.W, s.Q, s.T_best) for s in res.steps))


def test_mlp_fused_said_once_gives_the_numbers_it_gave_spelled_out(tmp_path):
    text = spec.locate("mlp_fused").read_text()
    lines = text.splitlines()
    assert not [ln for ln in lines if ln.startswith(("[ops]", "[schedule]", "inputs ="))]
    old = _spelled("mlp_fused", tmp_path)
    new_res = pipeline.analyze(pipeline.load("mlp_fused"), TRN2)
    old_res = pipeline.analyze(pipeline.load(old), TRN2)
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
def test_every_bundled_program_said_once_gives_the_numbers_it_gave_spelled_out(name, tmp_path):
    text = spec.locate(name).read_text()
    assert not [ln for ln in text.splitlines() if ln.startswith(("[ops]", "[schedule]", "inputs ="))]
    derived = pipeline.analyze(pipeline.load(name), TRN2)
    spelled = pipeline.analyze(pipeline.load(_spelled(name, tmp_path)), TRN2)
    assert _numbers(derived) == _numbers(spelled)
    # the derived ops are the spelled ones, named after the tensor each makes
    want = sorted((o.out, o.kind, o.inputs, o.transposed) for o in spelled.program.ops)
    assert sorted((o.name, o.kind, o.inputs, o.transposed) for o in derived.program.ops) == want
    assert [s.stage.name for s in derived.stages] == [s.stage.name for s in spelled.stages]


def test_attention_qk_is_derived_as_q_times_k_transposed(tmp_path):
    ops = {o.name: o for o in pipeline.load("attention_fused").ops}
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
