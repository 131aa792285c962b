"""NKI kernel files traced by loopsim's shim give the same Q, W, per-tensor r and SBUF/PSUM
verdict as the equivalent TOML spec; what the shim cannot model is one loud line."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from loopsim.targets.neuron import ceilings
from loopsim.targets import hardware
from loopsim.model import pipeline
from loopsim.frontends import spec
from loopsim.frontends.program import Program
from loopsim.cli.main import main
from loopsim.base.errors import SpecError
from loopsim.frontends.nki.load import load_kernel, parse_arg, parse_grid, parse_kwarg, parse_options

HERE = Path(__file__).parent
KERNELS = HERE / "nki_kernels"
TRN2 = hardware.load("trn2-core")
MATMUL_ARGS = {"lhsT": ((1024, 4096), "bf16"), "rhs": ((1024, 2048), "bf16")}
RESULT = {"result": ((4096, 2048), "bf16")}


def facts(kernel) -> dict:
    """What must agree between a traced kernel and its spec: W, Q, r per tensor, SBUF, PSUM."""
    rep = pipeline.analyze_kernel(kernel, TRN2)
    c, ps = rep.counts, rep.ceilings.psum
    return {"W": c.flops, "Q": c.Q, "r": {t.name: t.r for t in c.tensors},
            "written": {t.name: t.write_bytes for t in c.tensors},
            "sbuf_peak": c.residency.peak_bytes, "sbuf_fits": c.residency.fits,
            "psum_banks": ps.needed_banks, "psum_fits": ps.fits}


def traced(file: str, func: str, args, **kw):
    return load_kernel(str(KERNELS / file), func, args=args, **kw)


@pytest.mark.parametrize("style,file,extra", [("isa", "matmul_isa.py", {}),
                                             ("lang", "matmul_lang.py", RESULT)])
@pytest.mark.parametrize("func,toml", [("tiled", "1_tiled"), ("hoisted", "2_hoist_load"),
                                       ("blocked", "3_block_free_dimension"),
                                       ("fully_optimized", "4_fully_optimized")])
def test_matmul_tutorial_steps_match_their_specs(style, file, extra, func, toml):
    k = traced(file, func, {**MATMUL_ARGS, **extra})
    want = facts(spec.load_kernel(f"tilings/nki_tutorial/{toml}.toml"))
    assert facts(k) == want
    # independent check of the numbers compared: W = 2MNK; result written once
    assert want["W"] == 2 * 4096 * 2048 * 1024
    assert want["written"]["result"] == 4096 * 2048 * 2


@pytest.mark.parametrize("style,file,extra", [("isa", "matmul_isa.py", {}),
                                             ("lang", "matmul_lang.py", {"result": ((2048, 2048), "bf16")})])
def test_step_four_sums_across_k_blocks_in_sbuf(style, file, extra):
    """K = 4096: four K-blocks summed in SBUF, nothing stored before the sums are done. Both the
    kernel and the spec at these shapes; r_lhsT = N / BLOCK_N (= 2), r_rhs = 1, as the spec says."""
    args = {"lhsT": ((4096, 2048), "bf16"), "rhs": ((4096, 2048), "bf16"), **extra}
    k = traced(file, "fully_optimized", args)
    want = facts(spec.load_kernel("tilings/nki_tutorial/4_fully_optimized.toml",
                                  {"M": 2048, "K": 4096, "N": 2048, "TILES_IN_BLOCK_M": 16}))
    got = facts(k)
    assert got == want
    assert got["r"]["lhsT"] == 2048 / 1024 and got["r"]["rhs"] == 1
    assert got["written"]["result"] == 2048 * 2048 * 2


def test_step_one_reload_factors_from_the_loop_nest():
    """r_lhsT = N / 512 (reloaded per n) and r_rhs = M / 128 (per m), the tutorial's numbers."""
    f = facts(traced("matmul_isa.py", "tiled", MATMUL_ARGS))
    assert f["r"]["lhsT"] == 2048 / 512 and f["r"]["rhs"] == 4096 / 128


@pytest.mark.parametrize("func,grid,kw", [("add_lang", (32, 2), {}), ("add_isa", (32,), {"TC": 2048})])
def test_elementwise_add_over_spmd_grid_matches_spec(func, grid, kw):
    args = {"x": ((4096, 4096), "bf16"), "y": ((4096, 4096), "bf16")}
    k = traced("add_grid.py", func, args, grid=grid, kwargs=kw)
    want = facts(spec.load_kernel(str(HERE / "nki_specs" / "add.toml")))
    assert facts(k) == want
    assert want["Q"] == 3 * 4096 * 4096 * 2 and want["W"] == 0


def test_grid_changes_the_tiles():
    """A 64 x 2 grid over 8192 rows: each program still one 128 x 2048 tile, Q scales with R."""
    args = {"x": ((8192, 4096), "bf16"), "y": ((8192, 4096), "bf16")}
    k = traced("add_grid.py", "add_lang", args, grid=(64, 2))
    assert facts(k)["Q"] == 3 * 8192 * 4096 * 2


def test_unmodelled_call_is_one_line_naming_call_file_line_kernel():
    with pytest.raises(SpecError) as e:
        traced("bad_unmodelled.py", "uses_find_index", {"x": ((128, 512), "bf16")})
    msg = str(e.value)
    assert "\n" not in msg
    assert msg.startswith(f"{KERNELS / 'bad_unmodelled.py'}:11: kernel uses_find_index: ")
    assert "nki.isa.nc_find_index8 is not modelled" in msg


@pytest.mark.parametrize("func,line,what", [("branches_on_data", 9, "data-dependent control flow")])
def test_control_flow_on_values_is_refused(func, line, what):
    with pytest.raises(SpecError) as e:
        traced("bad_data_branch.py", func, {"x": ((256, 512), "bf16")})
    msg = str(e.value)
    assert "\n" not in msg and f"bad_data_branch.py:{line}: kernel {func}: " in msg and what in msg


def test_shim_leaves_sys_modules_as_it_found_them_even_on_error():
    before = {k: sys.modules.get(k) for k in ("nki", "nki.language", "neuronxcc", "neuronxcc.nki.isa")}
    with pytest.raises(SpecError):
        traced("bad_unmodelled.py", "uses_find_index", {"x": ((128, 512), "bf16")})
    traced("matmul_isa.py", "tiled", MATMUL_ARGS)
    assert {k: sys.modules.get(k) for k in before} == before
    assert not [m for m in sys.modules if m.startswith("_loopsim_nki_kernel_")]


def test_missing_argument_and_unknown_function_are_named():
    with pytest.raises(SpecError, match=r"needs parameter rhs: give --arg rhs="):
        traced("matmul_isa.py", "tiled", {"lhsT": ((1024, 4096), "bf16")})
    with pytest.raises(SpecError, match=r"no function nope; functions here: blocked, fully_optimized, hoisted, tiled"):
        traced("matmul_isa.py", "nope", MATMUL_ARGS)


@pytest.mark.parametrize("text,want", [("lhsT=1024x4096", ("lhsT", ((1024, 4096), "bf16"))),
                                       ("x=8x4x2:fp32", ("x", ((8, 4, 2), "fp32"))),
                                       ("q=128x64:bfloat16", ("q", ((128, 64), "bf16")))])
def test_parse_arg(text, want):
    assert parse_arg(text) == want


@pytest.mark.parametrize("bad,match", [("x=0x4", "must be > 0"), ("x=4x", "NAME=D0xD1"), ("x=4x-2", "NAME=D0xD1"),
                                       ("x=4:float64", "not known")])
def test_parse_arg_errors(bad, match):
    with pytest.raises(SpecError, match=match):
        parse_arg(bad)


def test_parse_kwarg_is_a_literal_never_code():
    assert parse_kwarg("TILES=(2, 4)") == ("TILES", (2, 4))
    assert parse_kwarg("scale=0.5") == ("scale", 0.5)
    with pytest.raises(SpecError, match="not a Python literal"):
        parse_kwarg("x=__import__('os').getcwd()")
    assert parse_grid("4x2") == (4, 2)
    with pytest.raises(SpecError, match="G0"):
        parse_grid("4x0")
    with pytest.raises(SpecError, match="given twice"):
        parse_options(["x=1x2", "x=2x2"])


def program_facts(prog) -> dict:
    """W, Q, r per tensor, SBUF and PSUM of a program (each of its kernels' PSUM)."""
    res = pipeline.analyze(prog, TRN2)
    c = res.counts
    psum = [ceilings.compute(s.kernel, TRN2, dtype="bf16").psum for s in prog.stages]
    return {"W": c.flops, "Q": c.Q, "r": {t.name: t.r for t in c.tensors
                                                  if t.name in ("q", "k", "v", "o")},
            "sbuf_peak": c.residency.peak_bytes, "sbuf_fits": c.residency.fits,
            "psum_banks": [p.needed_banks for p in psum], "psum_fits": [p.fits for p in psum],
            "ops": sorted(o.kind for o in prog.ops),  # (the kernel takes q as d x L: qᵀ)
            "vector_s": sorted(round(s.t_compute, 15) for s in res.steps if s.kind != "matmul")}


@pytest.mark.parametrize("func", ["flash_isa", "flash_lang"])
def test_fused_attention_with_online_softmax_matches_spec(func):
    from loopsim.frontends import program

    L, d = 2048, 128
    args = {"q": ((d, L), "bf16"), "k": ((d, L), "bf16"), "v": ((L, d), "bf16")}
    got = program_facts(traced("attention.py", func, args))
    want = program_facts(program.load("attention_fused"))
    assert got == want
    # independently: K and V once, each query block once, O written once -> Q = 4 L d bytes x 2
    assert got["Q"] == 4 * L * d * 2
    assert got["W"] == 2 * (2 * L * L * d)


@pytest.mark.parametrize("func", ["flash_isa", "flash_lang"])
def test_fused_attention_spec_and_kernel_predict_the_same_run(func):
    """The kernels fill their V buffer with one DMA per 128-row tile, as the spec's ``load v[:, :]
    by TJ`` says: the same transfers and the same timeline T (trn1-core) both ways."""
    from loopsim.frontends import program
    from loopsim.targets.neuron import dma

    trn1 = hardware.load("trn1-core")
    L, d = 2048, 128
    args = {"q": ((d, L), "bf16"), "k": ((d, L), "bf16"), "v": ((L, d), "bf16")}
    got_p, want_p = traced("attention.py", func, args), program.load("attention_fused")
    # by hand: K one transfer (d = 128 rows), V L/128 = 16, Q one per query block (16), O one
    # per query block (16): 49
    xfers = [sum(dma.report(s.kernel, trn1).transfers for s in p.stages) for p in (got_p, want_p)]
    assert xfers == [1 + 16 + 16 + 16] * 2
    got, want = (pipeline.analyze(p, trn1) for p in (got_p, want_p))
    assert got.limit == want.limit == "timeline"
    assert got.T == pytest.approx(want.T, rel=1e-9)
    # the scores stay in PSUM as fp32 (a matmul writes fp32 there), the probabilities in SBUF as
    # bf16: L x L x 4 = 16 MiB and L x L x 2 = 8 MiB made on chip, never in HBM
    assert sorted((i.bytes, i.write_bytes + i.read_bytes) for i in got.intermediates) == \
        sorted((i.bytes, i.write_bytes + i.read_bytes) for i in want.intermediates) == \
        [(L * L * 2, 0), (L * L * 4, 0)]


def test_module_cli_prints_the_nest_read_and_one_line_errors(capsys):
    from loopsim.frontends.nki.__main__ import main as nki_main

    ref = f"{KERNELS / 'add_grid.py'}::add_isa"
    assert nki_main([ref, "--arg", "x=256x4096", "--arg", "y=256x4096", "--grid", "2",
                     "--kwarg", "TC=1024"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[1:] == ["  for pid0 in 256 by 128:", "    for c in 4096 by 1024:",
                       "      load x[pid0, c]", "      load y[pid0, c]",
                       "      add z[pid0, c] = x[pid0, c], y[pid0, c]", "      store z[pid0, c]"]
    assert nki_main([f"{KERNELS / 'bad_unmodelled.py'}::uses_find_index", "--arg", "x=128x512"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("loopsim: error: ")


def test_break_out_of_a_loop_keeps_the_one_iteration_it_ran(tmp_path):
    f = tmp_path / "k.py"
    f.write_text("import nki.language as nl\n"
                 "def brk(x):\n"
                 "    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)\n"
                 "    for i in nl.affine_range(2):\n"
                 "        nl.store(out[i * 128:(i + 1) * 128, :], value=nl.load(x[i * 128:(i + 1) * 128, :]))\n"
                 "        break\n"
                 "    return out\n")
    # the break makes loop i run concretely: one iteration, one 128-row tile of x (256 x 64 bf16)
    # at a fixed place, loaded and stored: Q = 2 x 128 x 64 x 2 B = 32,768
    k = load_kernel(str(f), "brk", args={"x": ((256, 64), "bf16")})
    (ld, _), (st, _) = k.statements()
    assert str(ld) == "load x[0:128, :]" and str(st) == "store out[0:128, :]"
    prog = k if isinstance(k, Program) else Program.single(k)
    assert pipeline.analyze(prog, hardware.load("trn2-core")).counts.Q == 2 * 128 * 64 * 2


def test_old_api_matmul_with_gelu_epilogue_is_a_two_op_program():
    """h = lhsT.T @ rhs stays in PSUM, gelu reads it, only y is written: W = 2MNK, lhsT read once,
    rhs once per 128-row band (M / 128 times), y written once."""
    M, N, K = 512, 512, 256
    prog = traced("old_api.py", "matmul_gelu", {"lhsT": ((K, M), "bf16"), "rhs": ((K, N), "bf16")})
    f = program_facts(prog)
    assert f["ops"] == ["gelu", "matmul"]
    assert f["W"] == 2 * M * N * K
    assert f["Q"] == (K * M + K * N * (M // 128) + M * N) * 2


def test_ragged_last_tile_is_clipped_at_the_edge():
    k = traced("old_api.py", "ragged_exp", {"x": ((300, 512), "bf16")})
    assert facts(k)["Q"] == 2 * 300 * 512 * 2


def test_named_dimensions_bound_by_sets_and_sets_override_kwargs():
    """--arg lhsT=KxM with --set K=... --set M=...; --set TILES_M=4 overrides the kernel's
    keyword: the panel of lhsT is read once and rhs once per 512-row M-block."""
    named = {"lhsT": (("K", "M"), "bf16"), "rhs": (("K", "N"), "bf16")}
    k = load_kernel(str(KERNELS / "matmul_isa.py"), "blocked", args=named,
                    sets={"K": 1024, "M": 4096, "N": 2048, "TILES_M": 4})
    f = facts(k)
    assert f["r"]["lhsT"] == 1 and f["r"]["rhs"] == 4096 / (4 * 128)
    assert dict(k.params) == {"K": 1024, "M": 4096, "N": 2048, "TILES_M": 4}
    assert parse_arg("lhsT=KxM:fp32") == ("lhsT", (("K", "M"), "fp32"))
    with pytest.raises(SpecError, match="dimension M of an --arg has no value; give --set M=INT"):
        load_kernel(str(KERNELS / "matmul_isa.py"), "blocked", args=named, sets={"K": 8, "N": 8})


def test_a_module_already_named_nki_is_put_back(monkeypatch):
    import types

    mine = types.ModuleType("nki")
    monkeypatch.setitem(sys.modules, "nki", mine)
    traced("matmul_isa.py", "tiled", MATMUL_ARGS)
    assert sys.modules["nki"] is mine


def test_the_kernels_own_exception_is_one_line_with_its_line(tmp_path):
    f = tmp_path / "boom.py"
    f.write_text("import nki.language as nl\n"
                 "def boom(x, n=0):\n"
                 "    return x.shape[0] // n\n")
    with pytest.raises(SpecError) as e:
        load_kernel(str(f), "boom", args={"x": ((128, 64), "bf16")})
    assert str(e.value) == f"{f}:3: kernel boom: ZeroDivisionError: integer division or modulo by zero"


# ---------------------------------------------------------------------------------------------
# the commands accept a kernel reference wherever they accept a spec

TILED = f"{KERNELS / 'matmul_isa.py'}::tiled"
NAMED = ["--arg", "lhsT=KxM", "--arg", "rhs=KxN", "--set", "K=1024", "--set", "N=2048"]


def _json(capsys, argv) -> dict:
    import json

    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def test_entitle_and_ceilings_take_a_kernel_reference(capsys):
    got = _json(capsys, ["entitle", TILED, "--arg", "lhsT=1024x4096", "--arg", "rhs=1024x2048",
                         "-H", "trn2-core", "--json"])
    want = _json(capsys, ["entitle", "tilings/nki_tutorial/1_tiled.toml", "-H", "trn2-core", "--json"])
    for key in ("W", "Q", "T"):
        assert got[key] == want[key]
    assert got["Q"] == (1024 * 4096 * 4 + 1024 * 2048 * 32 + 4096 * 2048) * 2  # r = 4, 32; C once
    assert main(["ceilings", TILED, "--arg", "lhsT=1024x4096", "--arg", "rhs=1024x2048",
                 "-H", "trn2-core"]) == 0
    assert "PSUM" in capsys.readouterr().out


def test_compare_varies_a_kernel_keyword_and_a_named_dimension(capsys):
    blocked = f"{KERNELS / 'matmul_isa.py'}::blocked"
    out = _json(capsys, ["compare", blocked, *NAMED, "--vary", "TILES_M=1,2,4", "--vary", "M=2048,4096",
                         "-H", "trn2-core", "--json"])
    r_rhs = {(r["params"]["TILES_M"], r["params"]["M"]): r["r"]["rhs"] for r in out["rows"]}
    # rhs is read once per M-block of 128 * TILES_M rows
    assert r_rhs == {(t, m): m / (128 * t) for t in (1, 2, 4) for m in (2048, 4096)}


def test_capacity_and_bad_kernel_reference_through_the_cli(capsys):
    assert main(["capacity", TILED, "--arg", "lhsT=1024x1024", "--arg", "rhs=1024x1024",
                 "-H", "trn2-core", "--samples", "2"]) == 0
    capsys.readouterr()
    assert main(["entitle", f"{KERNELS / 'bad_unmodelled.py'}::uses_find_index", "--arg", "x=128x512",
                 "-H", "trn2-core"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "bad_unmodelled.py:11: kernel uses_find_index:" in err
    assert main(["entitle", TILED, "--arg", "lhsT=KxM", "-H", "trn2-core"]) == 2
    assert "dimension K of an --arg has no value; give --set K=INT" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [["formula"], ["check", "--formula", "2*M"]])
def test_commands_on_parameter_expressions_refuse_a_kernel_reference(capsys, argv):
    assert main([argv[0], TILED, *argv[1:], "--arg", "lhsT=1024x4096", "--arg", "rhs=1024x2048",
                 "-H", "trn2-core"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "a traced kernel has numbers only" in err


def _tutorial_hand_counts(func: str, M: int, K: int, N: int) -> tuple[int, int]:
    """(Q bytes, DMA transfers) of the NKI matmul tutorial's four steps, counted by hand from the
    tutorial's loops (bf16: 2 bytes; tiles 128 (K) x 128 (M) and 128 (K) x 512 (N); every
    ``dma_copy`` one transfer, a store one per result tile it writes). MT = M/128, NT = N/512,
    KT = K/128; A = lhsT (K x M), B = rhs (K x N), C = result (M x N)."""
    MT, NT, KT = M // 128, N // 512, K // 128
    a, b, c = 2 * K * M, 2 * K * N, 2 * M * N
    if func == "tiled":     # A reread per n, B per m; per (m, n, k) one A and one B tile; C per (m, n)
        return NT * a + MT * b + c, 2 * MT * NT * KT + MT * NT
    if func == "hoisted":   # A once (KT tiles per m), B per m (KT tiles per (m, n)); C per (m, n)
        return a + MT * b + c, MT * KT + MT * NT * KT + MT * NT
    if func == "blocked":   # blocks of 2 x 2 tiles: MB = M/256 blocks, NB = N/1024; B reread per block
        MB, NB = M // 256, N // 1024
        return a + MB * b + c, MB * 2 * KT + MB * NB * 2 * KT + MT * NT
    # fully_optimized, 16 x 2 x 8 tiles: NB = N/1024, KB = K/1024, MB = M/2048; A reread per N-block;
    # per (n, kb) 8 B transfers of 128 x 1024, per (n, kb, m) 8 A transfers of 128 x 2048, per
    # (n, row of 128) one store of 128 x 1024
    NB, KB, MB = N // 1024, K // 1024, M // 2048
    return NB * a + b + c, NB * KB * 8 + NB * KB * MB * 8 + NB * MT


TUTORIAL_STEPS = [("tiled", "1_tiled"), ("hoisted", "2_hoist_load"),
                  ("blocked", "3_block_free_dimension"), ("fully_optimized", "4_fully_optimized")]


@pytest.mark.parametrize("M,K,N", [(4096, 1024, 2048), (2048, 2048, 3072)])
@pytest.mark.parametrize("style,file", [("isa", "matmul_isa.py"), ("lang", "matmul_lang.py")])
@pytest.mark.parametrize("func,toml", TUTORIAL_STEPS)
def test_tutorial_steps_traced_and_specced_predict_the_same_run(func, toml, style, file, M, K, N):
    """Spec and trace of each tutorial step agree on W, Q per tensor, SBUF, the DMA transfers and
    the timeline's T (trn1-core, the sheet issue 20 compared on), at the spec's shape and a second
    one (K = 2048: two K-blocks in step 4). A column loaded by ``for k: dma_copy(tiles[k], ...)`` is
    KT transfers, not one (the traced hoist step predicted 1.041 ms against the spec's 1.609 ms
    at the first shape when the tracer merged them)."""
    from loopsim.targets.neuron import dma
    trn1 = hardware.load("trn1-core")
    args = {"lhsT": ((K, M), "bf16"), "rhs": ((K, N), "bf16")}
    if style == "lang":
        args["result"] = ((M, N), "bf16")
    got_k = traced(file, func, args)
    want_k = spec.load_kernel(f"tilings/nki_tutorial/{toml}.toml", {"M": M, "K": K, "N": N})
    got, want = (pipeline.analyze_kernel(k, trn1) for k in (got_k, want_k))
    Q, transfers = _tutorial_hand_counts(func, M, K, N)
    assert want.counts.flops == got.counts.flops == 2 * M * N * K
    assert want.counts.Q == got.counts.Q == Q
    per_tensor = [{t.name: (t.read_bytes, t.write_bytes) for t in r.counts.tensors
                   if t.read_bytes or t.write_bytes} for r in (got, want)]
    assert per_tensor[0] == per_tensor[1]
    assert got.counts.residency.peak_bytes == want.counts.residency.peak_bytes
    xfers = [dma.report(k, trn1) for k in (got_k, want_k)]
    assert xfers[0].transfers == xfers[1].transfers == transfers
    assert [(s.transfers, s.partition_bytes) for s in xfers[0].statements] == \
        [(s.transfers, s.partition_bytes) for s in xfers[1].statements]
    assert got.limit == want.limit == "timeline"
    assert got.T == pytest.approx(want.T, rel=1e-9)


@settings(max_examples=25, deadline=None)
@given(st.sampled_from(TUTORIAL_STEPS[:3]), st.integers(1, 3), st.integers(1, 3), st.integers(1, 4))
def test_tutorial_steps_agree_with_their_specs_at_any_shape(step, mb, nb, kt):
    """Steps 1-3 at M = 256·mb, N = 1024·nb, K = 128·kt (multiples of step 3's blocks): the
    traced kernel and the spec have the hand-counted Q and transfers, and the same T."""
    from loopsim.targets.neuron import dma
    func, toml = step
    M, N, K = 256 * mb, 1024 * nb, 128 * kt
    got_k = traced("matmul_isa.py", func, {"lhsT": ((K, M), "bf16"), "rhs": ((K, N), "bf16")})
    want_k = spec.load_kernel(f"tilings/nki_tutorial/{toml}.toml", {"M": M, "K": K, "N": N})
    Q, transfers = _tutorial_hand_counts(func, M, K, N)
    got, want = (pipeline.analyze_kernel(k, TRN2) for k in (got_k, want_k))
    assert got.counts.Q == want.counts.Q == Q
    assert dma.report(got_k, TRN2).transfers == dma.report(want_k, TRN2).transfers == transfers
    assert got.T == pytest.approx(want.T, rel=1e-9)
