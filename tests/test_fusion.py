"""Chains of ops (issue #3): the Day 5 MLP fused and unfused, k of every intermediate from the
replay, each step against its own engine, spills, the op graph and its bad inputs.

Every number is checked against a closed form written out beside it (curriculum Day 5 and hand
counts of the bundled nests) or against the plain-Python oracle in tests/naive.py.
"""

import json
import os
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loopsim.targets import hardware
from loopsim.model import pipeline
from loopsim.frontends import program, spec
from loopsim.sim import trace
from loopsim.render.json import analysis_dict
from loopsim.cli.main import main
from tests.test_ops_once import spelled_text

sys.path.insert(0, os.path.dirname(__file__))
import naive  # noqa: E402
from loopsim.targets import hardware as _hw_sheets
TRN = _hw_sheets.load("trn2-core")  # 128 SBUF partitions: costs per partition

TRN2 = hardware.load("trn2-core")
p = 2  # bf16 bytes
B, D, F = 2048, 1024, 4096
DAY5 = {"B": B, "D": D, "F": F}
ROOT = Path(__file__).resolve().parent.parent


def analyze(name, sets=None, **kw):
    return pipeline.analyze(pipeline.load(name, sets or {}), TRN2, **kw)


# --- Day 5: the MLP on one physical Trn2 core ----------------------------------------------------

W_MLP = 4 * B * D * F  # up 2BDF + down 2BFD = 34,359,738,368
Q_UNFUSED = p * (2 * B * D + 2 * D * F + 4 * B * F)  # x, y; W_up, W_down; h and g written + read
Q_FUSED = p * (2 * B * D + 2 * D * F)  # h and g never leave the chip


def test_day5_closed_forms_are_the_curriculums():
    assert W_MLP == 34_359_738_368
    assert Q_UNFUSED == 92_274_688
    assert Q_FUSED == 25_165_824


@pytest.mark.parametrize("policy", ["as-written", "lru", "opt"])
@pytest.mark.parametrize("name,Q,I,T_worst,k", [
    ("mlp_unfused", Q_UNFUSED, 372, 683.2e-6, 2.0),
    ("mlp_fused", Q_FUSED, 1365, 504.2e-6, 0.0),
])
def test_day5_mlp(name, Q, I, T_worst, k, policy):
    rep = analyze(name, DAY5, policy=policy)
    e = rep.entitlement
    assert (e.W, e.Q) == (W_MLP, Q)
    assert round(e.I) == I
    # the sheet's P is 128*128*2*2.4e9 = 78.64 TFLOPS (the curriculum rounds to 78.6): W/P in
    # closed form, and the curriculum's 437.1 us and T_worst within its rounding (0.1%)
    assert e.t_compute == pytest.approx(W_MLP / (128 * 128 * 2 * 2.4e9), rel=1e-12)
    assert e.T_best == pytest.approx(437.1e-6, rel=1e-3)
    assert e.T_worst == pytest.approx(T_worst, rel=1e-3)
    assert e.T_worst == pytest.approx(W_MLP / (128 * 128 * 2 * 2.4e9) + Q / 375e9, rel=1e-12)
    inter = {i.name: i for i in rep.intermediates}
    assert set(inter) == {"h", "g"}
    for im in inter.values():
        assert im.bytes == p * B * F
        assert im.k == k  # unfused: written once + read once = 2 crossings of B*F*p each
        assert not im.spilled
    d = analysis_dict(rep)
    assert d["sbuf"]["fits"] is True
    assert {n: v["k"] for n, v in d["intermediates"].items()} == {"h": k, "g": k}


def test_fused_mlp_residency_shows_the_weights_fit():
    """Both weights (2*D*F*2 B = 16 MiB = 128 KiB per partition) plus one token block fit in 224 KiB."""
    rep = analyze("mlp_fused", DAY5)
    (sc,) = rep.stages
    r = sc.counts.residency
    weights_per_partition = 2 * D * F * p // 128
    assert weights_per_partition == 128 * 1024 and 2 * D * F * p == 16 * 2**20
    assert weights_per_partition < r.peak_cost <= r.capacity_cost == 224 * 1024
    assert r.fits


def test_gelu_alone_is_89_5_us_of_data_movement():
    """As its own kernel GELU reads h and writes g: 2*B*F*2 bytes = 33.55 MB, 89.5 us at 375 GB/s,
    and its Scalar Engine time B*F / (128 lanes * 1.2 GHz) is less: it is memory-bound."""
    rep = analyze("mlp_unfused", DAY5)
    step = next(s for s in rep.steps if s.op == "g")  # ops are named after what they make
    assert (step.kind, step.engine, step.kernel) == ("gelu", "scalar", "act")  # kernel [nest.act]
    assert step.Q == 2 * B * F * p == 33_554_432
    assert step.T_best == pytest.approx(89.5e-6, rel=1e-3)
    assert step.t_compute == pytest.approx(B * F / (128 * 1.2e9), rel=1e-12)
    assert step.bound == "memory" and step.binding == "hbm"
    up = next(s for s in rep.steps if s.op == "h")
    assert (up.engine, up.W) == ("tensor", 2 * B * D * F)
    assert sum(s.Q for s in rep.steps) == Q_UNFUSED
    assert analyze("mlp_unfused", DAY5, model="roofline").limit == "compute"  # 437 us of matmuls against 246 us of HBM
    fused = analyze("mlp_fused", DAY5)
    assert next(s for s in fused.steps if s.kind == "gelu").Q == 0  # (mlp_fused names ops by output: g)
    assert sum(s.Q for s in fused.steps) == Q_FUSED


# --- the other bundled programs: hand counts ----------------------------------------------------


def test_attention_unfused_and_fused():
    L, d = 2048, 128
    un = analyze("attention_unfused")
    # q, k, v read and o written (4*L*d) + S and P each written and read (4*L*L)
    assert un.entitlement.Q == p * (4 * L * d + 4 * L * L)
    assert {i.name: i.k for i in un.intermediates} == {"s": 2.0, "p": 2.0}
    fu = analyze("attention_fused")
    assert fu.entitlement.Q == p * 4 * L * d  # K, V hoisted; S, P stay on chip
    assert {i.name: i.k for i in fu.intermediates} == {"s": 0.0, "p": 0.0}
    assert fu.entitlement.W == un.entitlement.W == 2 * (2 * L * L * d)
    sm = next(s for s in fu.steps if s.op == "p")
    # online softmax: 3 Vector passes at 512 bf16 lanes * 0.96 GHz, 1 Scalar pass at 128 * 1.2 GHz
    secs = dict(sm.engine_seconds)
    assert secs["vector"] == pytest.approx(3 * L * L / (512 * 0.96e9), rel=1e-12)
    assert secs["scalar"] == pytest.approx(L * L / (128 * 1.2e9), rel=1e-12)
    assert sm.engine == "scalar"


def test_swiglu_and_layernorm():
    Bs, Ds, Fs = 2048, 1024, 2048
    sw = analyze("swiglu_mlp")
    assert sw.entitlement.Q == p * (2 * Bs * Ds + 3 * Ds * Fs)  # x, y; three weights once
    assert sw.entitlement.W == 3 * 2 * Bs * Ds * Fs
    assert all(i.k == 0 for i in sw.intermediates) and len(sw.intermediates) == 4
    prod = next(s for s in sw.steps if s.op == "z")
    assert prod.t_compute == pytest.approx(Bs * Fs / (512 * 0.96e9), rel=1e-12)
    Bl, Dl = 2048, 4096
    ln = analyze("layernorm")
    assert ln.entitlement.Q == p * (2 * Bl * Dl + 2 * Dl)  # x in, y out, gamma and beta once
    assert ln.entitlement.W == 0
    (step,) = ln.steps
    assert step.T_best == pytest.approx(p * (2 * Bl * Dl + 2 * Dl) / 375e9, rel=1e-12)


# --- properties ----------------------------------------------------------------------------------

small_mlp = st.fixed_dictionaries({
    "B": st.sampled_from([128, 256, 384]), "D": st.sampled_from([128, 256, 512]),
    "F": st.sampled_from([128, 256, 512, 640]),
})


@settings(max_examples=12, deadline=None)
@given(small_mlp, st.sampled_from(["as-written", "lru", "opt"]))
def test_fusing_never_raises_q(dims, policy):
    un = analyze("mlp_unfused", dims, policy=policy).entitlement
    fu = analyze("mlp_fused", dims, policy=policy).entitlement
    b, d, f = dims["B"], dims["D"], dims["F"]
    assert fu.Q <= un.Q
    assert un.Q - fu.Q == p * 4 * b * f  # exactly the round trips of h and g
    assert fu.W == un.W == 4 * b * d * f


def _fused_kernel_reference(dims, per_partition):
    """The fused MLP kernel's trace replayed by the plain-Python LRU; bytes of g written back."""
    prog = program.load("mlp_fused", dims)
    k = prog.stages[0].kernel
    tr = trace.build(k)
    cost = tr.object_cost(TRN)
    _, wb, _ = naive.lru(tr.obj.tolist(), tr.write.tolist(), cost.tolist(), per_partition,
                         tr.dead.tolist())
    g = tr.grids["g"]
    return sum(wb[g.offset:g.offset + g.n_blocks]) * int(tr.obj_bytes[g.offset])


@settings(max_examples=10, deadline=None)
@given(st.sampled_from([{"B": 256, "D": 256, "F": 512}, {"B": 128, "D": 256, "F": 384}]),
       st.integers(4, 40))
def test_k_is_zero_exactly_when_g_never_leaves_sbuf(dims, quarter_kib):
    """k of g > 0 iff the oracle evicts a block of g before its last use (a dirty write-back:
    g is dirty from its production until it is freed at its last use)."""
    per_partition = quarter_kib * 256  # 1 to 10 KiB per partition: around the fused working set
    try:
        rep = analyze("mlp_fused", dims, policy="lru", sbuf_bytes=per_partition * 128)
    except Exception as e:  # below one instruction's working set: refused, nothing to compare
        assert "cannot hold" in str(e)
        return
    g = next(i for i in rep.intermediates if i.name == "g")
    evicted_bytes = _fused_kernel_reference(dims, per_partition)
    assert g.write_bytes == evicted_bytes
    assert (g.k > 0) == (evicted_bytes > 0) == g.spilled


def test_dead_marks_exactly_the_last_use_of_each_block_of_g():
    tr = trace.build(program.load("mlp_fused", {"B": 256, "D": 256, "F": 256}).stages[0].kernel)
    g = tr.grids["g"]
    last = {}
    for i, o in enumerate(tr.obj.tolist()):
        last[o] = i
    want = sorted(i for o, i in last.items() if g.offset <= o < g.offset + g.n_blocks)
    assert np.flatnonzero(tr.dead).tolist() == want
    h = tr.grids["h"]  # h lives in PSUM: no SBUF request for it at all
    assert not ((tr.obj >= h.offset) & (tr.obj < h.offset + h.n_blocks)).any()


def test_shrinking_sbuf_spills_and_says_so(capsys):
    """20 KiB per partition cannot hold the 128 KiB of weights plus a block of g (8 KiB):
    under LRU g is evicted, written once and read back for each of the D/TE = 2 output tiles."""
    args = ["entitle", "mlp_fused", "--hardware", "trn2-core", "--sbuf-bytes", str(20 * 1024 * 128)]
    assert main(args + ["--policy", "lru", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    g = d["intermediates"]["g"]
    assert g["spilled"] is True and g["k"] == 3.0  # 1 write + D/TE = 2 reads
    assert any("g SPILLED" in n for n in d["notes"])
    assert d["intermediates"]["h"]["k"] == 0.0  # PSUM
    assert main(args + ["--json"]) == 3  # as written: no crossing, but it does not fit: cannot run
    d = json.loads(capsys.readouterr().out)
    assert d["intermediates"]["g"]["k"] == 0.0 and d["sbuf"]["fits"] is False
    assert any("--policy lru" in n for n in d["notes"])
    assert main(args + ["--policy", "lru"]) == 0
    assert "SPILLED" in capsys.readouterr().out


# --- CLI ------------------------------------------------------------------------------------------


def test_cli_json_and_single_kernel_specs_unchanged(capsys):
    assert main(["entitle", "mlp_unfused", "--hardware", "trn2-core", "--model", "roofline", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["Q"] == Q_UNFUSED and d["W"] == W_MLP
    assert [s["op"] for s in d["steps"]] == ["h", "g", "y"]
    assert {"op", "engine", "W", "T_best"} <= set(d["steps"][0])
    assert d["limit"] == "compute"
    assert main(["entitle", "matmul", "--hardware", "trn2-core", "--json"]) == 0
    m = json.loads(capsys.readouterr().out)
    assert "intermediates" not in m and m["Q"] == 2 * (2 * 1024 * 1024 + 8 * 1024 * 1024 + 1024 * 1024)


def test_graph_command(tmp_path, capsys):
    out = tmp_path / "g.png"
    assert main(["graph", "mlp_unfused", "--hardware", "trn2-core", "-o", str(out)]) == 0
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and out.stat().st_size > 5000
    assert main(["graph", "mlp_unfused", "--hardware", "trn2-core", "-o", str(tmp_path / "g.svg"),
                 "--json"]) == 0
    edges = json.loads(capsys.readouterr().out[len("wrote ") + len(str(out)) + 1:])["edges"]
    # h: B*F*2 bytes = 16 MiB, written by kernel up and read by kernel act: k = 2; the input x
    # is read once (r = 1); the output y written once
    assert edges["h"] == "h: 16 MiB, k=2"
    assert edges["x"] == "x: 4 MiB, r=1" and edges["y"] == "y: 4 MiB, written 1x"
    bad = tmp_path / "g.xyz"
    assert main(["graph", "mlp_unfused", "--hardware", "trn2-core", "-o", str(bad)]) == 2
    assert not bad.exists() and not list(tmp_path.glob(".g.xyz*"))


# --- bad input ------------------------------------------------------------------------------------

BASE = spelled_text("mlp_unfused")  # the older form: every op spelled out in [ops] too

BAD = [
    ("unknown op", ('kind = "gelu"', 'kind = "gelux"'), "ops.act.kind='gelux' is not a known op"),
    ("op named twice", ('act = ["act"]', 'act = ["act", "up"]'), "names op up again"),
    ("op left out", ('act = ["act"]\n', ''), "leaves out op act"),
    ("unknown op in schedule", ('down = ["down"]', 'down = ["down", "nope"]'), "names op 'nope'"),
    ("no roof", ('out = "g" }', 'out = "g", engine = "gpsimd" }'), "gpsimd engine, which has no roof"),
    ("no producer", ('in = ["h"], out = "g"', 'in = ["hh"], out = "g"'), "names tensor hh"),
    ("not an input", ('inputs = ["x", "W_up", "W_down"]', 'inputs = ["x", "W_down"]'),
     "ops.up reads W_up, but no op produces W_up and it is not in kernel.inputs"),
    ("unread output", ('in = ["h"], out = "g"', 'in = ["x"], out = "g"'),
     "ops.up produces h, which no op reads and which is not an output"),
    ("shape", ('g = { shape = ["B", "F"]', 'g = { shape = ["B", "D"]'),
     "ops.act (gelu) makes g of shape [2048, 4096]"),
    ("nest mismatch", ("gelu g[b, f] = h[b, f]", "silu g[b, f] = h[b, f]"), "does not match ops.act"),
    ("schedule order", ('up = ["up"]\nact = ["act"]', 'act = ["act"]\nup = ["up"]'),
     "before schedule.up produces it"),
    # listed twice, x's bytes were counted twice in the compulsory Q
    ("input twice", ('inputs = ["x", "W_up", "W_down"]', 'inputs = ["x", "W_up", "W_down", "x"]'),
     "kernel.inputs lists x twice"),
]


@pytest.mark.parametrize("what,change,message", BAD, ids=[b[0] for b in BAD])
def test_bad_input_one_line(tmp_path, capsys, what, change, message):
    old, new = change
    assert old in BASE
    f = tmp_path / "bad.toml"
    f.write_text(BASE.replace(old, new, 1))
    assert main(["entitle", str(f), "--hardware", "trn2-core"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "Traceback" not in err
    assert message in err and (str(f) in err or "trn2-core" in err), err


@pytest.mark.parametrize("command", [["entitle"], ["graph", "-o", "g.png"]])
def test_input_no_op_reads_is_refused(command, tmp_path, monkeypatch, capsys):
    # an input nothing reads would add its bytes to the compulsory Q and leave the graph with a
    # node that has no edge
    monkeypatch.chdir(tmp_path)
    f = tmp_path / "unread.toml"
    f.write_text(BASE.replace('inputs = ["x", "W_up", "W_down"]', 'inputs = ["x", "W_up", "W_down", "b"]')
                 .replace("\ny = {", '\nb = { shape = ["D"], dtype = "bf16" }\ny = {'))
    assert main([command[0], str(f), "--hardware", "trn2-core"] + command[1:]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and str(f) in err and "kernel.inputs" in err and "no op reads" in err, err
    assert not (tmp_path / "g.png").exists()


@pytest.mark.parametrize("sheet", ["trn2-core", "trn2-lnc2"])
def test_lnc_table_in_a_program_is_refused(sheet, tmp_path, capsys):
    # each kernel of a program is counted on one physical core, so a split kernel's loads outside
    # the split loop (both weights of mlp_fused) would be counted once instead of once per core
    f = tmp_path / "split.toml"
    f.write_text((ROOT / "tilings" / "mlp_fused.toml").read_text() + '\n[lnc]\nsplit = "b"\n')
    assert main(["entitle", str(f), "--hardware", sheet]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and str(f) in err and "[lnc]" in err and "several ops" in err, err


@pytest.mark.parametrize("command", [["entitle"], ["ceilings"], ["graph", "-o", "g.png"]])
def test_multi_core_sheet_points_at_what_a_program_accepts(command, tmp_path, monkeypatch, capsys):
    # --lnc is refused for a program, so the scope error must not suggest it
    monkeypatch.chdir(tmp_path)
    argv = [command[0], "mlp_fused", "--hardware", "trn2-lnc2"] + command[1:]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "--allow-scope-mismatch" in err and "--lnc" not in err, err
    assert "2x too high" in err and not (tmp_path / "g.png").exists()


def test_cycle_between_ops_names_both(tmp_path, capsys):
    text = BASE.replace('up = { kind = "matmul", in = ["x", "W_up"], out = "h" }',
                        'up = { kind = "matmul", in = ["g", "W_up"], out = "h" }')
    f = tmp_path / "cyc.toml"
    f.write_text(text)
    assert main(["entitle", str(f), "--hardware", "trn2-core"]) == 2
    err = capsys.readouterr().err
    assert "cycle" in err and "ops.up" in err and "ops.act" in err
    # the chain is closed and follows the data: each op reads what the one before it makes
    chain = err.strip().split("cycle: ")[1].split(" -> ")
    assert chain[0] == chain[-1] and len(chain) >= 3, chain


def test_layernorm_residency_counts_each_buffer_once():
    # As written, per partition (B on the partitions, D = 4096 bf16): gamma and beta are 1-D with
    # D on the partitions, ceil(4096/128) = 32 elements x 2 B = 64 B each; one x block of 128
    # rows holds D x 2 = 8192 B; the layernorm output block another 8192 B, which the store DMA
    # reads in place (no staging copy). Peak: 64 + 64 + 8192 + 8192 = 16,512 bytes.
    from loopsim.targets import hardware
    from loopsim.model.pipeline import analyze, load
    rep = analyze(load("layernorm", {"B": 2048, "D": 4096}), hardware.load("trn2-core"))
    assert rep.counts.residency.peak_cost == 64 + 64 + 8192 + 8192
