"""search over every kind of kernel loopsim reads (single nests, programs of several ops, kernel
references), ranked by the verdict ``entitle`` prints; the library API and the batch mode."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

import loopsim
from loopsim.analyses.parallel import Pool
from loopsim.analyses.search import engine, space
from loopsim.analyses.search import evaluate as ev
from loopsim.cli.main import main
from loopsim.frontends import spec
from loopsim.model import pipeline
from loopsim.render.search import best_text
from loopsim.targets import hardware

ROOT = Path(__file__).resolve().parent.parent
KERNELS = ROOT / "tests" / "nki_kernels"
BUNDLED = sorted(p.stem for p in (ROOT / "tilings").glob("*.toml"))


@pytest.fixture(scope="module")
def hw():
    return hardware.load("trn2-core")


def _search(p: engine.Problem):
    with Pool(1) as pool:
        return engine.context(p), engine.search(p, pool)


def _entitle_of(ctx, out, c, hw, tmp_path):
    """entitle of a reported tiling: its spec written out (search -o) and read back, or for a
    program / kernel reference the spec at the tiling's values."""
    if ctx.tpl.is_reference:
        return c.verdict.report  # traced again at its values by the exact confirmation
    path = tmp_path / "t.toml"
    single = engine.Outcome(out.problem, out.values, 0, top=[c])
    path.write_text(best_text(ctx, single, hw))
    return pipeline.analyze(pipeline.load(str(path)), hw)


#: the programs whose default search takes 7-50 s (every loop order x placement of each kernel
#: at every tile point) search two values per tile here, structures in full, to keep the suite
#: within its few minutes; mlp_fused and swiglu_mlp search their default space in the acceptance
#: check (check-search-programs) and in test_fused_against_unfused_as_alternatives (mlp_fused)
SMALL_SPACE = {
    "attention_unfused": ("TQ=64,128", "TK=256,512", "TJ=128", "TC=128"),
    "mlp_unfused": ("TB=64,128", "TD=128", "TF=128", "TE=256,512"),
    "mlp_fused": ("TB=64,128", "TD=128", "TF=128", "TE=256,512"),
    "swiglu_mlp": ("TB=64,128", "TD=128", "TF=128", "TE=256,512"),
}


@pytest.mark.parametrize("name", BUNDLED)
def test_every_bundled_spec_searches_and_entitle_prints_its_numbers(name, hw, tmp_path):
    """Every bundled spec and program: a feasible best; every reported tiling (top, runner-ups,
    both fronts) read back through entitle gives the T, limit and Q search reported; the top is
    in rank-key order."""
    ctx, out = _search(engine.Problem(name, (), "trn2-core", SMALL_SPACE.get(name, ()), top=2))
    assert out.top and out.top[0].verdict.feasible
    keys = [c.key for c in out.top]
    assert keys == sorted(keys)
    for c in out.top + out.runner_ups + out.front_sbuf + out.front_q:
        a = _entitle_of(ctx, out, c, hw, tmp_path)
        assert (a.T, a.limit, a.Q, a.feasible) == (c.verdict.T, c.verdict.limit, c.verdict.Q,
                                                    c.verdict.feasible), dict(c.values)
    acc = out.accounting()
    # every point went somewhere: run (evaluated, refused or pruned by its bound), skipped, or
    # never enumerated (pruned by its floor); none twice
    assert acc["points"] == math.prod(len(v) for v in out.values.values())
    assert out.units + out.not_tilings + out.unfit <= out.points <= \
        out.units + out.not_tilings + out.unfit + out.pruned_floor


def test_programs_search_their_tiles_against_brute_force(hw):
    """mlp_fused over TB x TF, loads as written: the search's best equals the best of every point
    analysed in full."""
    vals = ("TB=32,64,128", "TF=32,128", "TE=512", "TD=128")
    _, out = _search(engine.Problem("mlp_fused", (("B", 256), ("F", 1024)), "trn2-core", vals, top=3,
                                    structures=False))
    keys = []
    for tb in (32, 64, 128):
        for tf in (32, 128):
            a = pipeline.analyze(pipeline.load("mlp_fused", {"B": 256, "F": 1024, "TB": tb, "TF": tf,
                                                             "TE": 512, "TD": 128}), hw)
            keys.append((pipeline.rank_key(a), (("TB", tb), ("TD", 128), ("TE", 512), ("TF", tf))))
    keys.sort()
    assert [c.verdict.key() for c in out.top] == [k for k, _ in keys[:3]]
    assert dict(out.top[0].values) == dict(keys[0][1])


def test_program_placements_against_exhaustive_enumeration(hw, tmp_path):
    """mlp_fused (one kernel whose token loop holds two loop nests) over TB x its 18 load
    placements (each weight whole at the top, split by f (W_up) or e (W_down), or by both of its
    loops; x whole per token block or by d): the search's top 3 equal the best 3 of every (TB, placement) analysed
    in full, and the best, written with -o and read back, gives the same verdict."""
    sets = (("B", 256), ("D", 256), ("F", 512))
    vals = ("TB=64,128", "TF=128", "TE=256", "TD=128")
    ctx, out = _search(engine.Problem("mlp_fused", sets, "trn2-core", vals, top=3))
    assert len(ctx.structs) == 3 * 3 * 2 and out.points == 2
    keys = []
    for tb in (64, 128):
        values = {"TB": tb, "TD": 128, "TE": 256, "TF": 128}
        prog = pipeline.load("mlp_fused", {**dict(sets), **values})
        for p in space.placements(ctx.moves):
            a = pipeline.analyze(space.place(prog, ctx.moves, p), hw)
            if a.feasible:
                keys.append(pipeline.rank_key(a))
    keys.sort()
    assert len(keys) > 3
    assert [c.verdict.key() for c in out.top] == keys[:3]
    a = _entitle_of(ctx, out, out.top[0], hw, tmp_path)
    assert (a.T, a.Q) == (out.top[0].verdict.T, out.top[0].verdict.Q)


def test_program_streams_weights_that_do_not_fit(hw):
    """mlp_fused with SBUF cut to 512 KiB (128 partitions x 4 KiB): as written both weights sit
    on chip whole (W_up: 2 partition tiles x 512 x 2 B = 2 KiB per partition, W_down: 4 x 256 x 2 B
    = 2 KiB) beside x's block and g's, which does not fit; the search splits them by f or e so they
    stream, and with one token block (B = TB = 64) every weight is still read once: Q is the
    compulsory 2*B*D + 2*D*F*2 + 2*B*D = 589,824 bytes (x, W_up, W_down, y; bf16)."""
    sets = (("B", 64), ("D", 256), ("F", 512))
    vals = ("TB=64", "TF=128", "TE=256", "TD=128")
    with pytest.raises(engine.InputError, match="no feasible tiling"):
        _search(engine.Problem("mlp_fused", sets, "trn2-core", vals, top=1, structures=False,
                               sbuf_bytes=1 << 19))
    ctx, out = _search(engine.Problem("mlp_fused", sets, "trn2-core", vals, top=1,
                                      sbuf_bytes=1 << 19))
    best = out.top[0]
    assert best.verdict.feasible and engine.structure_of(ctx, best)["split"]
    assert best.verdict.Q == 2 * 64 * 256 + 2 * 256 * 512 * 2 + 2 * 64 * 256 == 589_824


def test_kernel_reference_searched_over_its_keyword_parameters(hw):
    """matmul_isa.blocked(TILES_M, TILES_N) at K=1024, M=N=2048: a point whose blocks exceed the
    matrix (N // BN = 0: no work) is refused, not ranked; the best does the full W = 2MNK and
    entitle of the reference at those values prints the same T."""
    ref = f"{KERNELS / 'matmul_isa.py'}::blocked"
    kargs = (("lhsT=1024x2048", "rhs=1024x2048"), (), None)
    _, out = _search(engine.Problem(ref, (), "trn2-core", (), top=2, kernel_args=kargs))
    best = out.top[0].verdict
    assert best.W == 2 * 2048 * 2048 * 1024 and out.invalid > 0
    vals = dict(out.top[0].values)
    # TM = 128, TN = 512 in the kernel: blocks of TILES_M x 128 rows by TILES_N x 512 columns fit
    assert vals["TILES_M"] * 128 <= 2048 and vals["TILES_N"] * 512 <= 2048
    from loopsim.frontends.nki.load import parse_options

    a = pipeline.analyze(pipeline.load(ref, vals, kernel_args=parse_options(*kargs[:2])), hw)
    assert (a.T, a.Q) == (best.T, best.Q)


def test_copy_picks_large_transfers(hw):
    """copy moves the same bytes at every tiling; the verdict counts each transfer at the rate
    its size reaches (dma_transfers), so the pick moves no transfer below the guidance's 2 KiB per
    partition, and TR = TC = 1 (33.5 M two-byte transfers, which enumeration order used to pick)
    is over 100x slower by the same verdict."""
    from loopsim.targets.neuron import dma

    ctx, out = _search(engine.Problem("copy", (), "trn2-core", (), top=1))
    rep = out.top[0].verdict.report
    assert dma.report(rep.program.stages[0].kernel, hw).small_bytes == 0
    tiny = pipeline.analyze(pipeline.load("copy", {"TR": 1, "TC": 1}), hw)
    assert tiny.T > 100 * rep.T


def test_fast_path_transfers_equal_the_exact_verdict(hw):
    """The closed form's DMA time and transfers' time (dma, dma_transfers) equal the exact
    verdict's (model "floor": the pipeline without the timeline's run), structure by structure,
    split ':' tiles included."""
    tpl = space.template("matmul_blocked", {"M": 512, "N": 1024, "K": 256})
    k = space.bind(tpl, {"TN": 128, "BN": 256})
    ch = space.chain_of(k)
    m = ev.chain_model(ch, k, hw)
    ss = list(space.structures(ch))
    assert any(s.tiles for s in ss[::37])
    for s in ss[::37]:
        fast = ev.model_verdict(m, s).verdict.time_map
        exact = ev.verdict(space.arrange(ch, s, k), hw, model="floor").verdict.time_map
        assert fast["dma"] == pytest.approx(exact["dma"], rel=1e-12), s
        assert fast["dma_transfers"] == pytest.approx(exact["dma_transfers"], rel=1e-12), s


def test_searched_buffers_dimension(hw):
    """--space buffers=1,2 on projection: a second buffer lets the next load overlap the work on
    the current one, so by the engine timeline the best double-buffers, and its T is no more than
    the same tiling with one buffer (both analysed by the pipeline here)."""
    _, out = _search(engine.Problem("projection", (("B", 256),), "trn2-core",
                                    ("TB=128", "TD=128", "TF=512", "buffers=1,2"), top=2))
    best = out.top[0]
    assert dict(best.values)["buffers"] == 2
    sets = {"B": 256, "TB": 128, "TD": 128, "TF": 512}
    one = pipeline.analyze(pipeline.load("projection", sets, buffers=(("*", 1),)), hw)
    assert best.verdict.T <= one.T


def _cli(capsys, *argv):
    rc = main(list(argv))
    cap = capsys.readouterr()
    return rc, cap.out, cap.err


@pytest.mark.parametrize("argv,msg", [
    (["--space", "TM=1..9223372036854775808:x2"], "exceeds the largest value"),
    (["--space", "TM=1..512"], "a bare LO..HI is every integer from LO to HI; give a step"),
    (["--sbuf-bytes", str(2**70)], "is not between 1 and 2^62"),
    (["--top", "1000000000"], "--top 1000000000 is not between 1 and 1,000"),
    (["-o", "best"], "no extension"),
])
def test_cli_limits_one_line(capsys, argv, msg):
    rc, out, err = _cli(capsys, "search", "matmul", "-H", "trn2-core", "-q", *argv)
    assert rc == 2 and msg in err and err.count("\n") == 1, err


def test_output_spec_is_named_after_its_file(tmp_path, capsys):
    path = tmp_path / "mlp_best.toml"
    rc, out, err = _cli(capsys, "search", "mlp_fused", "-H", "trn2-core", "-q", "--top", "1",
                        "--set", "B=256", "-o", str(path))
    assert rc == 0, err
    sf = spec.read(str(path))
    assert sf.data["kernel"]["name"] == "mlp_best"


def test_api_analyze_matches_entitle_json(capsys):
    r = loopsim.analyze("projection", "trn2-core", sets={"B": 1})
    # x 1 x 4096 + W 4096 x 4096 + y 1 x 4096, bf16
    assert r.Q == 2 * (4096 + 4096 * 4096 + 4096) == r.to_dict()["Q"]
    rc, out, _ = _cli(capsys, "entitle", "projection", "-H", "trn2-core", "--set", "B=1", "--json")
    d = json.loads(out)
    assert (d["T"], d["limit"]) == (r.T, r.limit) == (r.to_dict()["T"], r.to_dict()["limit"])
    assert "<table>" in r._repr_html_()
    assert r.plot().get_xlabel().startswith("time (")
    with pytest.raises(loopsim.api.InputError):
        loopsim.analyze("projection", "trn2-core", sets={"B": 1}, set={"B": 2})


def test_api_search_equals_cli(capsys):
    s = loopsim.search("matmul", "trn2-core", sets={"M": 512, "N": 512, "K": 512}, top=2)
    rc, out, _ = _cli(capsys, "search", "matmul", "-H", "trn2-core", "--set", "M=512", "--set",
                      "N=512", "--set", "K=512", "--top", "2", "--json", "-q", "--jobs", "1")
    d = json.loads(out)
    assert d["best"]["T"] == s.best.T and d["best"]["searched"] == s.best_values
    assert s.to_dict()["best"]["params"] == d["best"]["params"]


def test_batch_answers_in_order_with_error_lines(tmp_path, capsys):
    reqs = [{"id": 1, "spec": "projection", "hardware": "trn2-core", "set": {"B": 1}},
            "not json {",
            {"id": 3, "spec": "no_such_spec", "hardware": "trn2-core"},
            {"id": 4, "spec": "projection", "hardware": "trn2-core", "set": {"B": 1}},
            {"id": 5, "spec": f"{KERNELS / 'matmul_isa.py'}::blocked", "hardware": "trn2-core"},
            {"id": 6, "toml": (ROOT / "tilings" / "copy.toml").read_text(), "hardware": "trn2-core"},
            {"id": 7, "spec": "copy", "hardware": "trn2-core", "model": "floor"}]
    path = tmp_path / "r.jsonl"
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in reqs) + "\n")
    rc, out, err = _cli(capsys, "evaluate", "--batch", str(path))
    assert rc == 0, err
    lines = [json.loads(x) for x in out.splitlines()]
    assert len(lines) == 7
    assert lines[0]["Q"] == 2 * (4096 + 4096 * 4096 + 4096) and not lines[0]["cached"]
    assert "not JSON" in lines[1]["error"] and "no_such_spec" in lines[2]["error"]
    assert lines[3]["cached"] and lines[3]["T"] == lines[0]["T"] and lines[3]["id"] == 4
    assert "EXECUTES" in lines[4]["error"]
    trn2 = hardware.load("trn2-core")
    # the default: what entitle prints
    rc, out, _ = _cli(capsys, "entitle", "copy", "-H", "trn2-core", "--json")
    assert (lines[5]["T"], lines[5]["Q"]) == (json.loads(out)["T"], json.loads(out)["Q"])
    # model "floor": the cheap verdict, not above the timeline's
    copy = pipeline.analyze(pipeline.load("copy"), trn2, model="floor")
    assert (lines[6]["T"], lines[6]["Q"]) == (copy.T, copy.Q) and copy.T <= lines[5]["T"]


@pytest.mark.parametrize("spec,sets", [("matmul", {"M": 512, "N": 1024, "K": 256}),
                                       ("projection", {"B": 64}),
                                       ("mlp_fused", {"B": 256}),
                                       ("mlp_unfused", {"B": 128, "F": 2048}),
                                       ("layernorm", {}),
                                       ("attention_fused", {"L": 512})])
def test_batch_T_is_entitles_T(spec, sets, tmp_path, capsys):
    """One verdict: a batch request's T (default model) equals `loopsim entitle --json`'s T for
    the same spec, sheet and --set, exactly; so do W, Q, the limit and feasibility."""
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps({"id": 0, "spec": spec, "hardware": "trn2-core", "set": sets}) + "\n")
    rc, out, err = _cli(capsys, "evaluate", "--batch", str(path))
    assert rc == 0, err
    (b,) = [json.loads(x) for x in out.splitlines()]
    args = [a for k, v in sets.items() for a in ("--set", f"{k}={v}")]
    rc, out, err = _cli(capsys, "entitle", spec, "-H", "trn2-core", "--json", *args)
    assert rc in (0, 3), err
    e = json.loads(out)
    assert (b["T"], b["W"], b["Q"], b["limit"], b["feasible"]) == \
        (e["T"], e["W"], e["Q"], e["limit"], e["feasible"])


def test_whole_axis_tiles_are_split_for_the_prefill_down_projection(hw):
    """projection at the Llama-3-8B prefill down-projection (B=2048, D=14336, F=4096): x[:, :] is
    B*D*2 = 56 MiB, 448 KiB per partition (> 224 KiB), so as written nothing fits; splitting the
    ':' of x by the token loop (x[b, :]: 128 x 14336 x 2 = 28 KiB per partition) does, and the
    best is compute-bound at W/P = 2*2048*14336*4096 / (128*128*2*2.4e9) s."""
    ctx, out = _search(engine.Problem("projection", (("B", 2048), ("D", 14336), ("F", 4096)),
                                      "trn2-core", (), top=1))
    best = out.top[0]
    s = ctx.structs[best.structure]
    assert any(s.tiles) and "load x[b, :]" in engine.structure_of(ctx, best)["split"]
    W = 2 * 2048 * 14336 * 4096
    # its roofs put it at W/P (the timeline may add to that: fills, fixed costs)
    assert ev.roofline_T(best.verdict) == pytest.approx(W / (128 * 128 * 2 * 2.4e9), rel=1e-12)
    assert best.verdict.feasible
    # as written (no split) the same space has no tiling that fits
    with pytest.raises(engine.InputError, match="no feasible tiling"):
        _search(engine.Problem("projection", (("B", 2048), ("D", 14336), ("F", 4096)),
                               "trn2-core", (), structures=False, top=1))


def test_batch_on_two_processes_gives_the_serial_answers(tmp_path, capsys):
    reqs = [{"id": i, "spec": s, "hardware": "trn2-core", "set": {"B": b}}
            for i, (s, b) in enumerate((s, b) for s in ("projection", "mlp_fused", "layernorm")
                                       for b in (128, 256, 128))]
    path = tmp_path / "r.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in reqs) + "\n")
    strip = lambda text: [{k: v for k, v in json.loads(x).items() if k not in ("seconds", "cached")}
                          for x in text.splitlines()]
    rc1, one, _ = _cli(capsys, "evaluate", "--batch", str(path))
    rc2, two, _ = _cli(capsys, "evaluate", "--batch", str(path), "--jobs", "2")
    assert rc1 == rc2 == 0 and strip(one) == strip(two) and len(strip(one)) == 9


def test_program_and_reference_searches_on_two_processes_equal_one():
    for p in (engine.Problem("mlp_fused", (("B", 256),), "trn2-core", ("TB=32,64,128", "TF=64,128"),
                             top=3),
              engine.Problem(f"{KERNELS / 'matmul_isa.py'}::blocked", (), "trn2-core", (), top=3,
                             kernel_args=(("lhsT=512x1024", "rhs=512x1024"), (), None))):
        with Pool(1) as pool:
            one = engine.search(p, pool)
        with Pool(2) as pool:
            two = engine.search(p, pool)
        assert [(c.values, c.verdict.T, c.verdict.Q) for c in one.top] == \
            [(c.values, c.verdict.T, c.verdict.Q) for c in two.top]


def test_fused_against_unfused_as_alternatives(capsys, tmp_path):
    """Two specs of the same MLP searched together: each one's best, ranked by the same key. The
    fused kernel keeps h and g on chip, so its Q is the compulsory traffic; the unfused one writes
    h and g to HBM and reads them back: 2 x 2 x B*F*2 bytes more at B=256, F=4096."""
    path = tmp_path / "mlp_best.toml"
    rc, out, err = _cli(capsys, "search", "mlp_fused", "mlp_unfused", "-H", "trn2-core", "--set",
                        "B=256", "--space", "TD=128", "--space", "TE=512", "--json", "-q",
                        "--top", "1", "-o", str(path))
    assert rc == 0, err
    d = json.loads(out)
    assert d["ranking"] == ["mlp_fused", "mlp_unfused"]
    fused, unfused = (a["best"] for a in d["alternatives"])
    assert unfused["Q"] - fused["Q"] == 2 * 2 * 256 * 4096 * 2
    assert d["best"]["T"] == fused["T"] and spec.read(str(path)).data["kernel"]["name"] == "mlp_best"
    rc, out, err = _cli(capsys, "search", "matmul", "copy", "-H", "trn2-core", "-q")
    assert rc == 2 and "do not do the same work" in err


def test_kernel_reference_module_constants_searched_with_space(hw):
    """matmul_consts.blocked reads its block sizes TILES_M, TILES_N from module-level constants.
    They are parameters (--set, --space) but varied only when --space names them; SCALE, read by
    another module-level line at import, is not one. Searched over TILES_M x TILES_N at K=256,
    M=N=1024, the top 2 equal the best 2 of every point analysed in full, and each point's Q is
    the hand count: lhsT once (K*M*2 B), rhs once per M-block (M/(128*TILES_M) * K*N*2 B), the
    result once (M*N*2 B)."""
    from loopsim.frontends.nki.load import parse_options

    ref = f"{KERNELS / 'matmul_consts.py'}::blocked"
    kargs = (("lhsT=256x1024", "rhs=256x1024"), (), None)
    opts = parse_options(*kargs[:2])
    tpl = space.template(ref, {}, opts)
    assert tpl.spec.data["constants"] == ("TILES_M", "TILES_N") and tpl.free == ()
    K, M, N = 256, 1024, 1024
    keys = []
    for tm in (1, 2, 4, 8):
        for tn in (1, 2):
            a = pipeline.analyze(pipeline.load(ref, {"TILES_M": tm, "TILES_N": tn},
                                               kernel_args=opts), hw)
            assert a.Q == K * M * 2 + M // (128 * tm) * K * N * 2 + M * N * 2, (tm, tn)
            keys.append((pipeline.rank_key(a), (("TILES_M", tm), ("TILES_N", tn))))
    keys.sort()
    _, out = _search(engine.Problem(ref, (), "trn2-core", ("TILES_M=1,2,4,8", "TILES_N=1,2"),
                                    top=2, kernel_args=kargs))
    assert out.points == 8
    assert [(c.verdict.key(), c.values) for c in out.top] == keys[:2]


def test_kernel_reference_constant_errors(capsys):
    """A name that is no parameter (SCALE: a constant read at import) is refused in one line
    naming the parameters there are."""
    ref = f"{KERNELS / 'matmul_consts.py'}::blocked"
    rc, out, err = _cli(capsys, "search", ref, "--arg", "lhsT=256x1024", "--arg", "rhs=256x1024",
                        "-H", "trn2-core", "--space", "SCALE=1,2")
    assert rc != 0 and "no parameter SCALE" in err and "TILES_M, TILES_N" in err
    assert "Traceback" not in err


_ACT_DOWN = """[kernel]
name = "act_down"
about = "GELU, then a down-projection whose weight panel W[:, e] is loaded inside the token loop"

[params]
B = 512
D = 1024
F = 256
TB = 128
TF = 128
TE = 512

[tensors]
h = { shape = ["B", "F"], dtype = "bf16", partition_axis = 1 }
g = { shape = ["B", "F"], dtype = "bf16", partition_axis = 1 }
W = { shape = ["F", "D"], dtype = "bf16" }
y = { shape = ["B", "D"], dtype = "bf16", output = true }

[nest.act]
body = '''
for b in B by TB:
  for f in F by TF:
    load h[b, f]
    gelu g[b, f] = h[b, f]
    store g[b, f]
'''

[nest.down]
body = '''
for b in B by TB:
  load g[b, :]
  for e in D by TE:
    load W[:, e]
    for f in F by TF:
      matmul y[b, e] += g[b, f] @ W[f, e]
    store y[b, e]
'''
"""


def test_program_loop_orders_against_exhaustive_enumeration(hw, tmp_path):
    """A program of two chain kernels (act: 2 loops, down: 3) over TB x (2! x 3! loop orders x
    load placements): the search's pick (its kernels' options ranked one kernel at a time, the
    best few combined) has the key and T of the best of every (TB, orders, placement) analysed in
    full; the pick puts down's e loop outside the token loop, so W is read once: Q = h 262,144 +
    g written 262,144 + g read per e block (D/TE = 2) 524,288 + W 524,288 + y 1,048,576 =
    2,621,440 bytes (bf16; as written W is read per token block, 4 x 524,288, Q 3,932,160).
    The pick written with -o and read back by entitle gives search's T and Q."""
    path = tmp_path / "act_down.toml"
    path.write_text(_ACT_DOWN)
    vals = ("TB=64,128", "TE=512", "TF=128")
    ctx, out = _search(engine.Problem(str(path), (), "trn2-core", vals, top=3))
    assert {s.orders for s in ctx.structs} == {(a, d) for a in range(2) for d in range(6)}
    keys = []
    for tb in (64, 128):
        prog = pipeline.load(str(path), {"TB": tb, "TE": 512, "TF": 128})
        for s in ctx.structs:
            a = pipeline.analyze(ctx.structured(prog, s), hw)
            if a.feasible:
                keys.append((pipeline.rank_key(a), a.T, a.Q, tb))
    keys.sort()
    best = out.top[0]
    assert (best.verdict.key(), best.verdict.T) == keys[0][:2]
    assert best.verdict.Q == keys[0][2] == 262_144 + 262_144 + 2 * 262_144 + 524_288 + 1_048_576
    assert engine.structure_of(ctx, best)["order"][-1] == "down:e,b,f"
    as_written = pipeline.analyze(pipeline.load(str(path), {"TB": 128}), hw)
    assert as_written.Q == 262_144 * 3 + 4 * 524_288 + 1_048_576 > best.verdict.Q
    a = _entitle_of(ctx, out, best, hw, tmp_path)
    assert (a.T, a.Q) == (best.verdict.T, best.verdict.Q)
    text = best_text(ctx, engine.Outcome(out.problem, out.values, 0, top=[best]), hw)
    down = text[text.index("[nest.down]"):]
    assert down.index("for e in D by TE:") < down.index("for b in B by TB:")


def test_program_orders_exhaustive_flag_agrees(tmp_path):
    """The per-kernel ranking keeps the pick of evaluating every structure of every point."""
    path = tmp_path / "act_down.toml"
    path.write_text(_ACT_DOWN)
    vals = ("TB=64,128", "TE=256,512", "TF=128")
    _, fast = _search(engine.Problem(str(path), (), "trn2-core", vals, top=1))
    _, full = _search(engine.Problem(str(path), (), "trn2-core", vals, top=1, exhaustive=True))
    assert fast.verdicts < full.verdicts
    assert (fast.top[0].values, fast.top[0].verdict.key()) == \
        (full.top[0].values, full.top[0].verdict.key())
