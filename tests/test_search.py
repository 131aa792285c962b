"""loopsim search: the space, the closed forms against the exact count, pruning against brute
force, the spec writer, and the command's answers and errors."""

from __future__ import annotations

import itertools
import json
import math

import pytest

from loopsim.base.errors import InputError
from loopsim.targets import hardware
from loopsim.frontends import spec
from loopsim.cli.main import main
from loopsim.analyses.parallel import Pool
from loopsim.analyses.search import engine, pareto, space
from loopsim.analyses.search import evaluate as ev
from loopsim.analyses.search.writer import write_spec


@pytest.fixture(scope="module")
def hw():
    return hardware.load("trn2-core")


def _chain(name, sets):
    tpl = space.template(name, sets)
    k = space.bind(tpl, {})
    return tpl, k, space.chain_of(k)


def test_structures_of_matmul_counted_by_hand():
    # loops m, n, k; A[k, m] and B[k, n] each sit anywhere from the innermost of their two index
    # loops down to k's body. Orders mnk, nmk: both loads innermost (1 each); mkn, nkm, kmn, knm:
    # one load may also sit one level out (2 each): 1 + 1 + 4 * 2 = 10.
    _, _, ch = _chain("matmul", {})
    ss = list(space.structures(ch))
    assert len(ss) == 10 and len(set(ss)) == 10
    assert space.as_written(ch) == ss[0]


def test_matmul_closed_form_q(hw):
    # the tutorial's nest (m, n, k; both loads inside k): r_A = N/TN, r_B = M/TM, C once
    M, N, K, TM, TN = 512, 1024, 256, 128, 512
    tpl, k, ch = _chain("matmul", {"M": M, "N": N, "K": K})
    m = ev.chain_model(ch, k, hw)
    assert ev.chain_q(m, space.as_written(ch)) == 2 * (K * M * (N // TN) + K * N * (M // TM) + M * N)
    # k outermost (the kouter nest): C stored K/TK times, read back K/TK - 1 times; A hoisted to m
    kout = space.Structure(("k", "m", "n"), ("m", "n"))
    TK = 128
    assert ev.chain_q(m, kout) == 2 * (K * M + K * N * (M // TM) + M * N * (2 * (K // TK) - 1))


@pytest.mark.parametrize("name,sets,step", [
    ("matmul_blocked", {"M": 512, "N": 1024, "K": 256}, 23),
    ("matmul_kouter", {"M": 256, "N": 1024, "K": 512}, 1),
    ("matmul_hoisted", {}, 1),
])
def test_model_verdict_equals_exact_count(hw, name, sets, step):
    """The closed forms (Q, SBUF peak, T with every ceiling, feasibility) equal the exact count of
    the arranged kernel, structure by structure."""
    _, k, ch = _chain(name, sets)
    m = ev.chain_model(ch, k, hw)
    for s in list(space.structures(ch))[::step]:
        fast = ev.model_verdict(m, s)
        exact = ev.verdict(space.arrange(ch, s, k), hw, model="floor")
        assert (fast.Q, fast.sbuf_peak_bytes, fast.feasible, fast.limit) == \
            (exact.Q, exact.sbuf_peak_bytes, exact.feasible, exact.limit), s
        assert fast.T == pytest.approx(exact.T, rel=1e-12), s


def test_arrange_keeps_w_and_moves_only_loads_and_stores(hw):
    _, k, ch = _chain("matmul_blocked", {})
    for s in list(space.structures(ch))[::50]:
        a = space.arrange(ch, s, k)
        assert [str(x) for x, _ in a.statements() if not isinstance(x, (spec.Load, spec.Store))] == \
            [str(x) for x in ch.compute]
        # every statement kept; a load split along ':' (s.tiles) is its variant of the same tensor
        assert sorted(str(x) for x, _ in a.statements()) == \
            sorted([str(x) for x in s.loads(ch)] + [str(x) for x in ch.compute + ch.stores])
        assert [x.tile.tensor for x in s.loads(ch)] == [x.tile.tensor for x in ch.loads]
        assert ev.verdict(a, hw).W == 2 * 2048 * 2048 * 1024


def test_tensor_engine_floor_is_the_combined_ceiling_for_clean_tiles(hw):
    from loopsim.targets.neuron import ceilings

    for tk, tm, tn in ((128, 128, 512), (64, 128, 32), (128, 32, 256)):
        tpl = space.template("matmul", {"M": 512, "N": 1024, "K": 256})
        k = space.bind(tpl, {"TK": tk, "TM": tm, "TN": tn})
        comb = ceilings.compute(k, hw, dtype="bf16").get("combined").T
        assert ev.tensor_engine_floor(hw, "bf16", 512, 1024, 256, tk, tm, tn) == \
            pytest.approx(comb, rel=1e-12)
    # a ragged N tile (N = 1000 by 512: one tile of 488) only makes the engine slower
    k = space.bind(space.template("matmul", {"M": 512, "N": 1000, "K": 256}), {})
    comb = ceilings.compute(k, hw, dtype="bf16").get("combined").T
    assert ev.tensor_engine_floor(hw, "bf16", 512, 1000, 256, 128, 128, 512) <= comb


def test_pareto_front_against_definition():
    pts = [(x, y) for x in range(5) for y in range(5) if (x * 7 + y * 3) % 4 != 1]
    got = pareto.front(pts, lambda p: p[0], lambda p: p[1])
    want = [p for p in pts if not any(q[0] <= p[0] and q[1] <= p[1] and q != p for q in pts)]
    assert got == sorted(want)


def _brute(p: engine.Problem, timeline: bool = False):
    """Every binding and structure of the space, by the closed forms (checked against the exact
    count above), no pruning: the sorted feasible keys. ``timeline``: the best engine.wide(top) of
    them re-ranked by the exact verdict's timeline T (what the search reports)."""
    ctx = engine.Context(p)
    names = list(ctx.values)
    keys = []
    for combo in itertools.product(*(ctx.values[n] for n in names)):
        k = space.bind(ctx.tpl, dict(zip(names, combo)))
        if k is None or not space.clean(k):
            continue
        m = ev.chain_model(ctx.chain, k, ctx.hw)
        for i, s in enumerate(ctx.structs):
            v = ev.model_verdict(m, s)
            if v.feasible:
                keys.append((v.key(), k, s))
    keys.sort(key=lambda x: x[0])
    if not timeline:
        return [x[0] for x in keys]
    wide = [ev.verdict(space.arrange(ctx.chain, s, k), ctx.hw).key() for _, k, s in keys[:engine.wide(p.top)]]
    return sorted(wide)


def test_search_top_equals_brute_force(hw):
    """Pruned search = brute force: the best engine.wide(5) by the closed forms (the roofline with
    the DMA transfers' floor), re-ranked by the timeline's T."""
    p = engine.Problem("matmul_blocked", (("M", 1024), ("N", 2048), ("K", 512)), "trn2-core",
                       ("TK=128", "TM=64,128", "TN=256,512", "BM=128..512:x2", "BN=512,2048"), top=5)
    with Pool(1) as pool:
        out = engine.search(p, pool)
    brute = _brute(p, timeline=True)
    assert [c.verdict.key() for c in out.top] == brute[:5]
    assert all(c.verdict.exact for c in out.top)
    assert out.evaluated < len(_brute(p)) * 2  # pruning skipped work (fronts aside)


def test_search_matmul_beats_hand_tilings(hw):
    # the best of the bundled hand tilings at 2048^3, and the search's best at the same shape
    sets = {"M": 2048, "N": 2048, "K": 2048}
    hand = [ev.verdict(spec.load_kernel(n, sets), hw)
            for n in ("matmul", "matmul_hoisted", "matmul_blocked", "matmul_kouter")]
    hand = [v for v in hand if v.feasible]
    with Pool(1) as pool:
        out = engine.search(engine.Problem("matmul_blocked", tuple(sets.items()), "trn2-core"), pool)
    best = out.top[0].verdict
    assert best.feasible
    assert ev.round_T(best.T) <= min(ev.round_T(v.T) for v in hand)
    assert best.Q <= min(v.Q for v in hand)
    # compute-bound at W/P by the roofline (the timeline's T lies above it), and the found Q is at
    # least the I/O lower bound
    assert ev.roofline_T(best) == pytest.approx(2 * 2048 ** 3 / hw.P("bf16"), rel=1e-12)
    assert best.T >= ev.roofline_T(best)
    assert best.Q >= out.lower_bound_Q


def test_written_spec_reads_back_to_the_same_kernel(tmp_path, hw):
    p = engine.Problem("matmul_blocked", (("M", 1024), ("N", 1024), ("K", 512)), "trn2-core")
    with Pool(1) as pool:
        out = engine.search(p, pool)
    ctx = engine.context(p)
    for c in out.top[:3]:
        kernel = engine.kernel_of(ctx, c)
        path = tmp_path / "best.toml"
        path.write_text(write_spec(ctx.tpl, dict(c.values), kernel, header="a test"))
        back = spec.load_kernel(str(path))
        assert [(str(n), [l.var for l in ls]) for n, ls in back.statements()] == \
            [(str(n), [l.var for l in ls]) for n, ls in kernel.statements()]
        v = ev.verdict(back, hw)
        assert (v.Q, v.T) == (c.verdict.Q, c.verdict.T)
        assert "BM = " in path.read_text() or "BM =" in path.read_text()


def test_each_reported_tiling_is_confirmed_once(monkeypatch):
    # the top, the runner-ups and the Pareto fronts overlap (here 42 confirmations of 34 tilings
    # before they shared them): every (binding, structure) runs its exact count and timeline once,
    # and each reported candidate is the one confirmation of its tiling
    p = engine.Problem("matmul", (("M", 1024), ("N", 1024), ("K", 1024)), "trn2-core")
    calls, confirm = [], engine.confirm
    monkeypatch.setattr(engine, "confirm", lambda ctx, c: calls.append((c.unit, c.structure)) or confirm(ctx, c))
    with Pool(1) as pool:
        out = engine.search(p, pool)
    assert len(calls) == len(set(calls)) > 0
    reported = out.top + out.runner_ups + out.front_sbuf + out.front_q
    assert {(c.unit, c.structure) for c in reported} <= set(calls)
    ctx = engine.context(p)
    for c in reported:
        v = ev.verdict(engine.kernel_of(ctx, c), ctx.hw)
        assert (v.Q, v.T, v.sbuf_peak_bytes) == (c.verdict.Q, c.verdict.T, c.verdict.sbuf_peak_bytes)


def test_tutorial_block_search_fits(hw):
    """The NKI tutorial's blocked kernel searched at the tutorial's shape: the best fits SBUF and
    PSUM and is no worse than the tutorial's own blocks."""
    p = engine.Problem("nki_tutorial/3_block_free_dimension", (), "trn2-core", (), top=3)
    with Pool(1) as pool:
        out = engine.search(p, pool)
    best = out.top[0].verdict
    assert best.feasible and best.report.ceilings.psum.fits and best.report.residency.fits
    own = ev.verdict(spec.load_kernel("nki_tutorial/3_block_free_dimension"), hw)
    assert best.key() <= own.key()


def test_tutorial_fully_optimized_block_search(hw):
    """The tutorial's fully optimized kernel (not a chain: its loop order stays) searched over its
    block parameters at the tutorial's shape and tiles: the best fits SBUF and PSUM and ranks no
    worse than the tutorial's own blocks."""
    p = engine.Problem("nki_tutorial/4_fully_optimized", (), "trn2-core",
                       ("TILE_M=128", "TILE_K=128", "TILE_N=512", "TILES_IN_BLOCK_K=8"), top=3)
    with Pool(1) as pool:
        out = engine.search(p, pool)
    best = out.top[0].verdict
    assert not out.structures_searched
    assert best.feasible and best.report.ceilings.psum.fits and best.report.residency.fits
    own = ev.verdict(spec.load_kernel("nki_tutorial/4_fully_optimized"), hw)
    assert best.key() <= own.key()


def _run(capsys, *argv):
    rc = main(list(argv))
    cap = capsys.readouterr()
    return rc, cap.out, cap.err


def test_cli_json_and_output(tmp_path, capsys):
    out_path = tmp_path / "best.toml"
    rc, out, err = _run(capsys, "search", "matmul_blocked", "--hardware", "trn2-core", "--set",
                        "M=1024", "--set", "N=1024", "--set", "K=512", "--json", "--jobs", "1",
                        "--top", "3", "-o", str(out_path))
    assert rc == 0, err
    d = json.loads(out)
    assert {"best", "evaluated", "seconds", "top", "pareto", "lower_bound_Q"} <= d.keys()
    b = d["best"]
    assert {"params", "Q", "T", "feasible", "compulsory_Q"} <= b.keys() and b["feasible"]
    assert b["compulsory_Q"] == 2 * (1024 * 512 * 2 + 1024 * 1024)
    assert len(d["top"]) == 3 and d["top"][0] == b
    back = ev.verdict(spec.load_kernel(str(out_path)), hardware.load("trn2-core"))
    assert back.Q == b["Q"] and back.T == pytest.approx(b["T"], rel=1e-12)


@pytest.mark.parametrize("argv,msg", [
    (["--space", "XX=1,2"], "has no parameter XX"),
    (["--space", "TM=3", "--space", "BM=5", "--space", "TK=128", "--space", "TN=512", "--space",
      "BN=1024"], "the search space is empty"),
    (["--space", "TM=abc"], "--space TM=abc: 'abc' is not an integer"),
    (["--space", "TM=0"], "must be > 0"),
    (["--set", "TM=128", "--space", "TM=64"], "both given"),
    (["--sbuf-bytes", "4096", "--space", "TM=64,128", "--space", "TN=512", "--space", "TK=128"],
     "no feasible tiling"),
    (["--top", "0"], "--top 0"),
    (["--jobs", "0"], "--jobs 0"),
])
def test_cli_bad_input_one_line(capsys, argv, msg):
    rc, out, err = _run(capsys, "search", "matmul_blocked", "--hardware", "trn2-core", "--quiet",
                        *argv)
    assert rc == 2
    assert msg in err and err.startswith("loopsim: error:") and err.count("\n") == 1


def test_space_is_the_shared_grammar_and_refuses_every_integer_as_a_search_space():
    # --space reads base/values.py's grammar: lists, LO..HI:STEP, LO..HI:xN mean what they mean
    # for --vary; a bare LO..HI (every integer) is refused with the stepped spellings
    tpl = space.template("matmul", {"M": 512, "N": 1024, "K": 256})
    got = space.parse_space(["TN=128..512:128", "TM=16..128:x2", "TK=64,128"], tpl)
    assert got == {"TN": (128, 256, 384, 512), "TM": (16, 32, 64, 128), "TK": (64, 128)}
    with pytest.raises(InputError, match="the step must be > 0"):
        space.parse_space(["TN=128..512:0"], tpl)
    with pytest.raises(InputError, match=r"a bare LO\.\.HI is every integer .* TN=64\.\.512:x2"):
        space.parse_space(["TN=64..512"], tpl)
