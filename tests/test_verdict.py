"""One verdict per tiling: the attainable time T over every roof and ceiling, what binds it,
whether the kernel can run, and the one ranking every command uses."""

import json
import math

import pytest

from loopsim.targets import hardware
from loopsim.model import pipeline
from loopsim.frontends import spec
from loopsim.analyses import sweep
from loopsim.cli.main import main
from loopsim.model.verdict import Verdict, binding, decide, in_sequence, rank_key

TRN2 = hardware.load("trn2-core")
P = 128 * 128 * 2 * 2_400_000_000  # trn2-core bf16 FLOP/s
BW = 375_000_000_000  # bytes/s
DMA_BW = 368_000_000_000  # bytes/s, trn2-core's DMA engines


def _json(capsys, argv, rc=0):
    assert main(argv) == rc
    return json.loads(capsys.readouterr().out)


# --- the verdict itself ---------------------------------------------------------------------------

def test_t_is_the_largest_time_and_ties_name_the_simpler_roof():
    v = decide({"memory": 2.0, "compute": 1.0, "tensor_engine": 3.0}, {"tensor_engine": "why"}, [])
    assert (v.T, v.limit, v.detail, v.feasible) == (3.0, "tensor_engine", "why", True)
    # compute and the Tensor Engine tie when every fill factor is 1 (float rounding included)
    assert binding({"tensor_engine": 1.0 + 1e-15, "compute": 1.0}) == "compute"
    assert decide({"compute": 1.0}, {}, ["SBUF: too big"]).feasible is False


def test_kernels_in_sequence_add_up():
    a = Verdict(2.0, "memory", "", (("compute", 1.0), ("memory", 2.0)))
    b = Verdict(3.0, "compute", "", (("compute", 3.0), ("memory", 0.5)), ("kernel b: PSUM",))
    v = in_sequence([a, b])
    assert v.T == 5.0 and v.limit == "compute" and v.time_map == {"compute": 4.0, "memory": 2.5}
    assert v.reasons == ("kernel b: PSUM",)


def test_rank_key_puts_feasible_first_then_t_q_sbuf():
    rows = [(1.0, False, 10, 1), (2.0, True, 10, 1), (2.0, True, 5, 9), (2.0, True, 5, 3)]
    assert sorted(rows, key=lambda r: rank_key(*r)) == [rows[3], rows[2], rows[1], rows[0]]


# --- evidence: a resident-B-panel matmul ranks by the Tensor Engine fill --------------------------

def test_panel_matmul_ranks_full_tiles_first_at_w_over_p(capsys):
    d = _json(capsys, ["compare", "matmul_panel", "--hardware", "trn2-core", "--model", "roofline",
                       "--vary", "TM=32,128", "--vary", "TK=32,128", "--json"])
    rows = d["rows"]
    W = 2 * 4096 ** 3
    top = rows[0]
    assert (top["params"]["TM"], top["params"]["TK"]) == (128, 128) and top["best"]
    assert top["limit"] == "compute" and top["T"] == pytest.approx(W / P, rel=1e-12)
    # every tiling has the same flat roofline (T_best = W/P): only the ceilings tell them apart
    assert all(r["T_best"] == pytest.approx(W / P, rel=1e-12) for r in rows)
    slow = next(r for r in rows if (r["params"]["TM"], r["params"]["TK"]) == (32, 32))
    # K_t = 32 of 128 PE rows and M_t = 32 of 128 columns: a sixteenth of the array
    assert slow["T"] == pytest.approx(16 * W / P, rel=1e-9) and slow["rank"] == 4
    assert slow["limit"] == "tensor_engine"
    assert "partition_fill 0.25" in slow["limit_detail"] and "column_fill 0.25" in slow["limit_detail"]
    half = [r for r in rows if r["rank"] in (2, 3)]
    assert all(r["T"] == pytest.approx(4 * W / P, rel=1e-9) for r in half)


def test_tutorial_matmul_at_4096_cubed_ranks_by_t_not_t_best(capsys):
    # The tutorial's matmul reloads A for every n and B for every m: memory-bound at TM = 128;
    # the 32 x 32 tiling's T is its Tensor Engine time, 16 W/P, against Q at the best's memory
    # side: the DMA engines' 368 GB/s on trn2 ([S10] 23 B/ns x 16), below the HBM share 375 GB/s.
    d = _json(capsys, ["compare", "matmul", "--hardware", "trn2-core", "--set", "M=4096", "--set",
                       "N=4096", "--set", "K=4096", "--vary", "TM=32,128", "--vary", "TK=32,128",
                       "--model", "roofline", "--json"])
    rows = d["rows"]
    M = N = K = 4096
    q_top = 2 * (N // 512 * M * K + M // 128 * K * N + M * N)
    assert (rows[0]["params"]["TM"], rows[0]["params"]["TK"]) == (128, 128)
    assert rows[0]["Q"] == q_top and rows[0]["T"] == pytest.approx(q_top / DMA_BW, rel=1e-12)
    assert rows[0]["limit"] == "dma" and rows[0]["T_best"] == pytest.approx(q_top / BW, rel=1e-12)
    slow = next(r for r in rows if (r["params"]["TM"], r["params"]["TK"]) == (32, 32))
    assert slow["T"] == pytest.approx(16 * 2 * M * N * K / P, rel=1e-9)
    assert [r["T"] for r in rows] == sorted(r["T"] for r in rows)


# --- evidence: PSUM feasibility in the ranking ------------------------------------------------------

def test_fully_optimized_rows_whose_psum_overflows_rank_below_every_row_that_fits(capsys):
    d = _json(capsys, ["compare", "tilings/nki_tutorial/4_fully_optimized.toml", "--hardware",
                       "trn2-core", "--set", "M=4096", "--set", "N=4096", "--set", "K=4096",
                       "--vary", "TILES_IN_BLOCK_N=2,4,8", "--json"])
    rows = d["rows"]
    assert len(rows) == 3
    for r in rows:
        psum_reason = any(x.startswith("PSUM: does not fit") for x in r["infeasible_reasons"])
        assert psum_reason == (not r["psum_fits"]) == (r["psum_banks"] > r["psum_capacity_banks"])
        if not r["psum_fits"]:
            assert r["feasible"] is False and not r["best"]
    feasible = [r["feasible"] for r in rows]
    assert feasible == sorted(feasible, reverse=True)  # every row that can run comes first


def test_entitle_of_a_program_shows_psum(capsys):
    d = _json(capsys, ["entitle", "swiglu_mlp", "--hardware", "trn2-core", "--json"])
    (k,) = d["kernels"]
    assert k["psum"]["needed_banks"] == 2 and d["psum"]["fits"] is True
    assert main(["entitle", "swiglu_mlp", "--hardware", "trn2-core"]) == 0
    assert "PSUM 2 of 8 banks" in capsys.readouterr().out


# --- evidence: work counted per execution -----------------------------------------------------------

NORM_PROJ = '''
[kernel]
name = "norm_proj"
inputs = ["x", "gam", "W"]

[params]
B = 256
D = 1024
F = 2048
TB = 128
TD = 128
TF = 512

[tensors]
x = {{ shape = ["B", "D"], dtype = "bf16", partition_axis = 1 }}
gam = {{ shape = ["D"], dtype = "bf16" }}
xn = {{ shape = ["B", "D"], dtype = "bf16", partition_axis = 1 }}
W = {{ shape = ["D", "F"], dtype = "bf16" }}
y = {{ shape = ["B", "F"], dtype = "bf16", output = true }}

[ops]
norm = {{ kind = "rmsnorm", in = ["x", "gam"], out = "xn" }}
proj = {{ kind = "matmul", in = ["xn", "W"], out = "y" }}

[schedule]
k = ["norm", "proj"]

[nest.k]
body = """
load gam[:]
for b in B by TB:
  load x[b, :]
{hoisted}  for f in F by TF:
{inside}    for d in D by TD:
      load W[d, f]
      matmul y[b, f] += xn[b, d] @ W[d, f]
    store y[b, f]
"""
'''


def _norm_proj(tmp_path, inside: bool):
    norm = "rmsnorm xn[b, :] = x[b, :], gam[:]\n"
    text = NORM_PROJ.format(hoisted="" if inside else "  " + norm, inside="    " + norm if inside else "")
    p = tmp_path / f"norm_proj_{'in' if inside else 'out'}.toml"
    p.write_text(text)
    return pipeline.analyze(pipeline.load(str(p)), TRN2)


def test_an_op_inside_a_loop_it_does_not_index_runs_every_iteration(tmp_path):
    B, D, F, TF = 256, 1024, 2048, 512
    out = _norm_proj(tmp_path, inside=False)
    ins = _norm_proj(tmp_path, inside=True)
    s_out = next(s for s in out.steps if s.op == "norm")
    s_in = next(s for s in ins.steps if s.op == "norm")
    # rmsnorm: 2 Vector passes and 1 Scalar pass over every element of x it normalises
    assert s_out.elements == 3 * B * D and s_out.executions == B // 128
    assert s_in.elements == (F // TF) * 3 * B * D and s_in.executions == (B // 128) * (F // TF)
    vec = dict(s_out.engine_seconds)["vector"]
    assert dict(s_in.engine_seconds)["vector"] == pytest.approx((F // TF) * vec, rel=1e-12)
    assert ins.times["vector"] - out.times["vector"] == pytest.approx((F // TF - 1) * vec, rel=1e-9)
    # Q and W do not change: the norm's input is already on chip
    assert (ins.Q, ins.W) == (out.Q, out.W) == (2 * (B * D + D + D * F * (B // 128) + B * F),
                                                2 * B * D * F)


def test_a_layout_change_inside_an_op_is_charged_as_a_transpose():
    # attention_unfused's softmax reads s with the query rows on the partitions and writes p with
    # the keys there (the layout the P @ V matmul contracts over): a transpose of every tile on the
    # Tensor Engine, ceil(L / 128) instructions of max(128, 64) cycles per 128-row tile
    a = pipeline.analyze(pipeline.load("attention_unfused"), TRN2)
    sm = next(s for s in a.steps if s.kind == "softmax")
    secs = dict(sm.engine_seconds)
    L = dict(a.params)["L"]
    TQ = dict(a.params).get("TQ", 128)
    tiles = -(-L // TQ)
    cycles = tiles * (-(-L // 128)) * max(min(TQ, 128), 64)
    assert secs["tensor"] == pytest.approx(cycles / 2.4e9, rel=1e-12)


# --- sweeps, blocks equal to tiles, exit status -------------------------------------------------

def test_a_block_equal_to_its_tile_is_legal_and_counted():
    M, N, K, BM, BN = 2048, 2048, 1024, 512, 512  # BN = TN: one moving tile per block
    a = pipeline.analyze(pipeline.load("matmul_blocked", {"BN": 512}), TRN2)
    assert a.feasible
    assert a.Q == 2 * (N // BN * M * K + M // BM * K * N + M * N)


def test_a_bad_point_in_a_sweep_is_a_row_with_its_reason(capsys):
    d = _json(capsys, ["compare", "matmul_blocked", "--hardware", "trn2-core", "--vary",
                       "BN=512,1024,777", "--json"])
    rows = d["rows"]
    assert len(rows) == 3
    bad = rows[-1]
    assert bad["params"]["BN"] == 777 and bad["feasible"] is False and bad["T"] is None
    assert "must each divide the next larger one" in bad["error"]
    assert all(r["feasible"] for r in rows[:2])
    assert main(["compare", "matmul_blocked", "--hardware", "trn2-core", "--vary", "BN=777"]) == 0
    assert "cannot analyse" in capsys.readouterr().out


def test_entitle_exit_status_is_3_for_a_kernel_that_cannot_run(capsys):
    assert main(["entitle", "matmul_hoisted", "--hardware", "trn2-core", "--sbuf-bytes",
                 str(4096 * 128)]) == 3
    out = capsys.readouterr().out
    assert "CANNOT RUN as written: SBUF" in out and "T (if it could run)" in out
    assert main(["entitle", "matmul_hoisted", "--hardware", "trn2-core"]) == 0


# --- double buffering ----------------------------------------------------------------------------

def test_buffers_multiply_the_loads_inside_loops(tmp_path, capsys):
    # the tutorial matmul holds, per partition, an A tile (TM = 128 x 2 B = 256) and a B tile
    # (TN = 512 x 2 B = 1,024) inside the k loop; the staged C tile (1,024) lives after the k loop,
    # when they are gone. Double buffering the loads (both inside the k loop) doubles A and B.
    one = pipeline.analyze(pipeline.load("matmul"), TRN2).residency.peak_cost
    two = pipeline.analyze(pipeline.load("matmul", buffers=(("*", 2),)), TRN2).residency.peak_cost
    b_only = pipeline.analyze(pipeline.load("matmul", buffers=(("B", 3),)), TRN2).residency.peak_cost
    assert one == 256 + 1024
    assert two == 2 * (256 + 1024)
    assert b_only == 256 + 3 * 1024
    d = _json(capsys, ["entitle", "matmul", "--hardware", "trn2-core", "--buffers", "2", "--json"])
    assert d["sbuf"]["peak"] == two
    text = (spec._bundled_dir() / "matmul.toml").read_text().replace("[nest]\n", "[nest]\nbuffers = 2\n")
    f = tmp_path / "mm2.toml"
    f.write_text(text)
    assert pipeline.analyze(pipeline.load(str(f)), TRN2).residency.peak_cost == two
    # a load outside every loop is not rotated: the projection loads all of x once (64 bytes per
    # partition at B = 1) and one D x TF panel of W per f (4096 x 512 x 2 B / 128 = 32,768)
    p1 = pipeline.analyze(pipeline.load("projection", {"B": 1}), TRN2)
    p2 = pipeline.analyze(pipeline.load("projection", {"B": 1}, buffers=(("*", 2),)), TRN2)
    assert dict(p1.stages[0].sbuf_buffers)["W"] == 32_768
    assert p2.residency.peak_cost == p1.residency.peak_cost + 32_768
    assert dict(p2.stages[0].sbuf_buffers)["x"] == dict(p1.stages[0].sbuf_buffers)["x"] == 64


# --- one pipeline for every command ---------------------------------------------------------------

def test_parallel_is_applied_by_compare_as_by_entitle(tmp_path, capsys):
    text = (spec._bundled_dir() / "matmul.toml").read_text() + '\n[parallel]\nchips = 2\nover = "K"\n'
    f = tmp_path / "mm_par.toml"
    f.write_text(text)
    e = _json(capsys, ["entitle", str(f), "--hardware", "trn2-core", "--link-bw", "1000000", "--json"])
    c = _json(capsys, ["compare", str(f), "--hardware", "trn2-core", "--link-bw", "1000000", "--json"])
    (row,) = c["rows"]
    link_T = -(-2 * (2 - 1) * 1024 * 1024 * 2 // 2) / 1e6  # all-reduce of C: 2 (C-1)/C x bytes
    assert e["limit"] == row["limit"] == "link"
    assert e["T"] == row["T"] == pytest.approx(link_T) and e["T_best"] == row["T_best"]
    assert e["times"]["link"] == pytest.approx(link_T)


@pytest.mark.parametrize("name, sets", [("projection", {"B": 1}), ("matmul_blocked", {"BN": 512}),
                                        ("matmul_kouter", {}), ("matmul", {"M": 1000})])
def test_replay_flag_gives_the_closed_forms_numbers(name, sets, capsys):
    # as written, Q comes from the closed form where it claims the nest; --replay counts the
    # trace instead: the two are independent derivations of the same bytes
    argv = ["entitle", name, "--hardware", "trn2-core", "--json"] + [f"--set={k}={v}" for k, v in sets.items()]
    a = _json(capsys, argv)
    b = _json(capsys, argv + ["--replay"])
    assert (a["Q"], a["W"], a["T"], a["tensors"]) == (b["Q"], b["W"], b["T"], b["tensors"])


def test_lowest_ceiling_names_the_one_that_binds_or_says_they_tie(capsys):
    # the tutorial matmul fills the array (K_t = M_t = 128, N_t = 512 >= 64): every factor is 1
    d = _json(capsys, ["ceilings", "matmul", "--hardware", "trn2-core", "--json"])
    assert d["lowest_ceiling"] == "tie"
    # decode: one token fills 1 of 128 PE columns
    d = _json(capsys, ["ceilings", "projection", "--hardware", "trn2-core", "--set", "B=1", "--json"])
    assert d["lowest_ceiling"] == "column_fill"


@pytest.mark.parametrize("argv", [
    ["projection", "--hardware", "trn2-lnc2", "--lnc", "2", "--set", "B=256", "--set", "D=1024",
     "--set", "F=1024", "--split", "b"],
    ["nki_tutorial/4_fully_optimized", "--hardware", "trn2-lnc2", "--lnc", "2"],
    ["matmul_hoisted", "--hardware", "trn2-core"],
])
def test_the_largest_buffers_add_up_to_the_peak_they_explain(argv, capsys):
    # the buffers named beside the SBUF peak are the ones live at that peak: one core's program
    # for a split kernel, as the peak is
    d = _json(capsys, ["entitle", *argv, "--json"])
    bufs = d["sbuf"]["largest_buffers"]
    assert 0 < len(bufs) < 5 and sum(bufs.values()) == d["sbuf"]["peak"]


def test_json_says_which_spec_and_sheet_were_read(tmp_path, capsys):
    d = _json(capsys, ["entitle", "matmul", "--hardware", "trn2-core", "--json"])
    assert (d["spec_file"], d["spec_bundled"]) == ("tilings/matmul.toml", True)
    assert d["hardware_file"] == "hardware/trn2-core.toml"
    own = tmp_path / "matmul.toml"
    own.write_text((spec._bundled_dir() / "matmul.toml").read_text())
    d = _json(capsys, ["entitle", str(own), "--hardware", "trn2-core", "--json"])
    assert (d["spec_file"], d["spec_bundled"]) == (str(own), False)


def test_a_statement_in_a_ragged_blocked_loop_does_not_run_past_the_edge():
    # for mo in 300 by 256: for mi in 256 by 128: the iteration mo = 256, mi = 128 starts at row
    # 384 >= 300 and does not exist, for every statement of its body: a load of B[mo, :], which
    # does not index mi, runs 3 times (not 2 x 2), as the trace and the DMA report count it
    import numpy as np

    from loopsim.count.executions import executions
    from loopsim.ir.kernel import Access, Kernel, Load, Loop, Tensor

    A = Tensor("A", (300, 64))
    B = Tensor("B", (300, 64))
    ld_a = Load(Access("A", (("mo", "mi"), ())))
    ld_b = Load(Access("B", (("mo",), ())))
    mi = Loop("mi", 256, 128, (ld_a, ld_b))
    mo = Loop("mo", 300, 256, (mi,))
    k = Kernel("ragged", (A, B), (mo,))
    _, exists, weight, _, _ = executions(ld_b, (mo, mi), (ld_b.tile,), k, None)
    assert int(np.asarray(exists).sum()) * weight == 3
