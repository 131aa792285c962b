"""Lower ceilings, LNC scope, PSUM, interconnect and measured roofs — against the curriculum's Day 3
and Day 6 numbers, hand counts written out beside each assertion, and a brute-force oracle."""

import json
import math

import pytest
from hypothesis import given, settings, strategies as st

from loopsim.targets.neuron import ceilings
from loopsim.targets import hardware
from loopsim.count import lnc
from loopsim.frontends import spec
from loopsim.cli.main import main
from loopsim.base.errors import CapacityError, HardwareError, SpecError
from loopsim.ir.kernel import Matmul
from loopsim.model.pipeline import analyze_kernel as analyze
from loopsim.render.json import analysis_dict

TRN1 = hardware.load("trn1-core")
TRN2 = hardware.load("trn2-core")
LNC2 = hardware.load("trn2-lnc2")


def _json(argv, capsys):
    assert main(argv + ["--json"]) == 0
    return json.loads(capsys.readouterr().out)


def _fails(argv, capsys, *needles):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    for n in needles:
        assert n in err, err
    return err


# --- Day 3 (Trainium1) and Day 6 (Trainium2) sheet numbers through the hand-count calculator ---

@pytest.mark.parametrize("sheet, dtype, P, BW", [
    # Day 3: 128 x 128 PEs x 2 FLOPs x 2.8 GHz = 91.75 TFLOPS; fp32 a quarter (≈ 23); 820 GB/s ÷ 2
    ("trn1-core", "bf16", 128 * 128 * 2 * 2_800_000_000, 820e9 / 2),
    ("trn1-core", "fp32", 128 * 128 * 2 * 2_800_000_000 / 4, 820e9 / 2),
    # Day 6: 128 x 128 x 2 x 2.4 GHz = 78.6 TFLOPS; 3 TB/s ÷ 8 cores = 375 GB/s
    ("trn2-core", "bf16", 128 * 128 * 2 * 2_400_000_000, 3e12 / 8),
    # LNC=2: two physical cores: 157.3 TFLOPS and 0.75 TB/s, the ridge unchanged
    ("trn2-lnc2", "bf16", 2 * 128 * 128 * 2 * 2_400_000_000, 2 * 3e12 / 8),
])
def test_day3_day6_roofs(sheet, dtype, P, BW, capsys):
    d = _json(["entitle", "--flops", "1e12", "--bytes", "1e9", "--hardware", sheet, "--dtype", dtype],
              capsys)
    assert d["P"] == pytest.approx(P, rel=1e-12) and d["BW"] == pytest.approx(BW, rel=1e-12)
    assert d["ridge"] == pytest.approx(P / BW, rel=1e-12)
    assert d["roofs"] == "spec"


def test_curriculum_rounded_figures():
    assert TRN1.P("bf16") / 1e12 == pytest.approx(91.75, abs=0.005)
    assert TRN1.P("fp32") / 1e12 == pytest.approx(23, abs=0.1)
    assert TRN1.ridge("bf16") == pytest.approx(224, abs=0.5)
    assert TRN2.P("bf16") / 1e12 == pytest.approx(78.6, abs=0.05)
    assert TRN2.ridge("bf16") == pytest.approx(210, abs=0.5)
    assert LNC2.P("bf16") / 1e12 == pytest.approx(157.3, abs=0.05) and LNC2.bw == 750e9
    # Day 3: Vector Engine 128 elements/cycle x 1.12 GHz = 143e9 elements/s
    assert TRN1.engine_roof("vector") == pytest.approx(143.36e9)


# --- Tensor Engine ceilings against hand computation -------------------------------------------

def _ceil(name, sets=None, hw=TRN1, dtype=None):
    k = spec.load_kernel(name, sets or {})
    rep = analyze(k, hw, dtype=dtype)
    return rep, {c.name: c for c in rep.ceilings.ceilings}


def test_small_kt_tiling():
    # matmul_small_tiles: TK = 64, TN = 128 on trn1: K_t fills 64 of 128 rows; N_t = 128 >= 64
    rep, c = _ceil("matmul_small_tiles")
    assert c["partition_fill"].factor == 0.5 and c["column_fill"].factor == 1
    assert c["issue_rate"].factor == 1 and c["combined"].factor == 0.5
    assert c["partition_fill"].P == pytest.approx(TRN1.P("bf16") / 2)
    # 1024/128 * 1024/128 * 1024/64 = 1024 instructions, each max(128, 64) cycles at 2.8 GHz
    assert rep.ceilings.instructions == 8 * 8 * 16
    assert rep.ceilings.instruction_s == pytest.approx(128 / 2.8e9)
    assert c["combined"].T == pytest.approx(1024 * 128 / 2.8e9)
    assert c["combined"].T == pytest.approx(rep.entitlement.W / (TRN1.P("bf16") * 0.5))


def test_small_nt_tiling():
    # TN = 32 < N_min = 64: each instruction still costs 64 cycles; issue rate 32/64
    rep, c = _ceil("matmul_small_tiles", {"TN": 32})
    assert c["issue_rate"].factor == 0.5 and c["partition_fill"].factor == 0.5
    assert c["combined"].factor == 0.25
    n_inst = (1024 // 128) * (1024 // 32) * (1024 // 64)
    assert rep.ceilings.instructions == n_inst
    assert rep.ceilings.instruction_s == pytest.approx(64 / 2.8e9)
    assert c["combined"].T == pytest.approx(n_inst * 64 / 2.8e9)
    assert not c["issue_rate"].assumed  # MM_INIT_LATENCY is documented for NeuronCore-v2


def test_issue_rate_flagged_assumed_on_trn2(capsys):
    d = _json(["ceilings", "matmul", "--hardware", "trn2-core", "--set", "TN=32"], capsys)
    ir = next(c for c in d["ceilings"] if c["name"] == "issue_rate")
    assert ir["assumed"] is True and "ASSUMED" in ir["explanation"]
    assert ir["factor"] == 0.5 and ir["P"] == pytest.approx(TRN2.P("bf16") / 2)


def test_fp32_dtype_ceiling():
    rep, c = _ceil("matmul", dtype="fp32")
    assert c["dtype"].factor == 0.25 and c["dtype"].P == TRN1.P("fp32")
    # fp32 costs 4x the cycles: 4 x 512 cycles per 128x128x512 instruction at 2.8 GHz
    assert rep.ceilings.instruction_s == pytest.approx(4 * 512 / 2.8e9)
    assert c["combined"].T == pytest.approx(rep.entitlement.t_compute)


def test_fp8_double_row_needs_twice_the_rows():
    # trn2 fp8 runs at 2x by contracting over 256 rows; a K_t = 128 tile fills half of them, so the
    # combined ceiling is the bf16 rate and each instruction takes the bf16 time
    rep, c = _ceil("matmul", hw=TRN2, dtype="fp8")
    assert c["dtype"].factor == 2 and c["partition_fill"].factor == 0.5
    assert c["combined"].factor == 1 and rep.ceilings.instruction_s == pytest.approx(512 / 2.4e9)


def test_ragged_tiles_count_as_they_are():
    # M = 1000 with TM = 128: 7 full tiles and one of 104 rows; column fill = 1000 / (8 * 128)
    rep, c = _ceil("matmul", {"M": 1000})
    assert c["column_fill"].factor == pytest.approx(1000 / 1024)
    assert rep.entitlement.W == 2 * 1000 * 1024 * 1024


def _oracle(kernel, hw, cores_of=lambda env: 0, n_cores=1):
    """Brute force: walk every loop iteration in Python; per instruction real k, m, n and
    max(n, N_min) cycles, summed per core."""
    from loopsim.ir.tiles import matmul_roles
    busy = [0] * n_cores
    W = 0
    tm = kernel.tensor_map

    def extent(acc, axis, env, loops):
        t = tm[acc.tensor]
        terms = acc.index[axis]
        if not terms:
            return t.shape[axis]
        start = sum(env[v] for v in terms)
        return max(0, min(min(loops[v].step for v in terms), t.shape[axis] - start))

    def run(body, env, loops):
        nonlocal W
        for node in body:
            if hasattr(node, "var"):
                for v in range(0, node.extent, node.step):
                    run(node.body, {**env, node.var: v}, {**loops, node.var: node})
            elif isinstance(node, Matmul):
                r = matmul_roles(node, kernel)
                k = extent(node.stationary, r.k_stationary, env, loops)
                m = extent(node.stationary, r.m_stationary, env, loops)
                n = extent(node.moving, r.n_moving, env, loops)
                if k and m and n:
                    W += 2 * k * m * n
                    busy[cores_of(env)] += max(n, hw.mm_init_cycles)
    run(kernel.body, {}, {})
    return W, busy


@settings(deadline=None, max_examples=40)
@given(M=st.integers(1, 600), N=st.integers(1, 1200), K=st.integers(1, 600),
       TM=st.sampled_from([32, 64, 128]), TK=st.sampled_from([16, 64, 128]),
       TN=st.sampled_from([16, 48, 64, 512]), cores=st.sampled_from([1, 2, 3]))
def test_combined_matches_brute_force(M, N, K, TM, TK, TN, cores):
    k = spec.load_kernel("matmul", dict(M=M, N=N, K=K, TM=TM, TK=TK, TN=TN))
    if cores > 1:
        k = lnc.with_split(k, cores, "m")
    c = ceilings.compute(k, TRN1, dtype="bf16")
    trips = -(-M // TM)
    share = -(-trips // cores)
    W, busy = _oracle(k, TRN1, lambda env: (env["m"] // TM) // share, cores)
    got = {x.name: x for x in c.ceilings}
    assert c.W == W
    assert got["combined"].T == pytest.approx(max(busy) / 2.8e9, rel=1e-9)
    prod = math.prod(x.factor for x in c.ceilings if x.factor is not None and x.name != "combined")
    assert got["combined"].factor == pytest.approx(prod, rel=1e-9)
    assert all(0 < x.factor <= 1 for x in c.ceilings if x.factor is not None)


# --- LNC=2 scope ----------------------------------------------------------------------------------

def test_day6_lnc2_weights_count_twice():
    # projection, B = 256, D = F = 1024 bf16, token loop b split across the two cores of trn2-lnc2.
    # The nest loads x[:, :] once and each W panel once outside the b loop. SPMD: x has the split
    # dimension B, so each core loads its half; W has no B, so both cores load all of it:
    # Q = |x| + 2 |W| + |y| = 256*1024*2 + 2 * 1024*1024*2 + 256*1024*2 bytes
    sets = {"B": 256, "D": 1024, "F": 1024}
    x, w, y = 256 * 1024 * 2, 1024 * 1024 * 2, 256 * 1024 * 2
    one = analyze(spec.load_kernel("projection", sets), TRN2)
    assert one.counts.Q == x + w + y
    k2 = lnc.with_split(spec.load_kernel("projection", sets), 2)
    assert lnc.split_loop(k2).var == "b"  # the token loop is the default
    for policy in ("as-written", "lru"):
        two = analyze(k2, LNC2, policy=policy)
        t = two.counts.tensor_map
        assert (t["x"].read_bytes, t["W"].read_bytes, t["y"].write_bytes) == (x, 2 * w, y)
        assert two.counts.Q == x + 2 * w + y
        assert two.counts.flops == one.counts.flops
    assert two.entitlement.P == 2 * TRN2.P("bf16") and two.entitlement.BW == 2 * TRN2.bw


def test_lnc2_split_loads_are_not_doubled():
    # matmul split on m: A tiles are indexed by m (each core its own), B tiles are reloaded per m
    # either way: Q = |A| N/TN + |B| M/TM + |C| on one core and on two
    k = spec.load_kernel("matmul")
    qa = 1024 * 1024 * 2
    q = qa * (1024 // 512) + qa * (1024 // 128) + qa
    assert analyze(k, TRN2).counts.Q == q
    assert analyze(lnc.with_split(k, 2), LNC2).counts.Q == q


def test_core_balance_ragged_split():
    # M = 1152: 9 m-tiles over 2 cores = 5 + 4; the busiest core does 5/4.5 of the mean
    k = lnc.with_split(spec.load_kernel("matmul", {"M": 1152}), 2)
    c = {x.name: x for x in analyze(k, LNC2).ceilings.ceilings}
    assert c["core_balance"].factor == pytest.approx(4.5 / 5)


ON_CHIP_NEST = """
[kernel]
name = "mm_act"
[params]
M = 512
N = 512
K = 256
[tensors]
A = { shape = ["K", "M"] }
B = { shape = ["K", "N"] }
C = { shape = ["M", "N"] }
S = { shape = ["M", "N"] }
G = { shape = ["M", "N"], output = true }
[nest]
body = '''
for m in M by 128:
  for n in N by 512:
    for k in K by 128:
      load A[k, m]
      load B[k, n]
      matmul C[m, n] += A[k, m] @ B[k, n]
    gelu S[m, n] = C[m, n]
    add G[m, n] = S[m, n], C[m, n]
    store G[m, n]
'''
"""


@pytest.mark.parametrize("policy", ["lru", "opt"])
def test_lnc2_replay_of_a_kernel_with_an_on_chip_intermediate(policy, tmp_path):
    # S is made by an op and never stored: it lives on chip and is freed at its last use. Split on
    # m across two cores, each with a whole SBUF: each core fetches its own A tiles (|A| in all)
    # and all of B once (2 |B|), writes its G tiles (|G|); S and C (PSUM) never cross HBM
    p = tmp_path / "on_chip.toml"
    p.write_text(ON_CHIP_NEST)
    k2 = lnc.with_split(spec.load_kernel(str(p)), 2, "m")
    a, b, g = 256 * 512 * 2, 256 * 512 * 2, 512 * 512 * 2
    t = analyze(k2, LNC2, policy=policy).counts.tensor_map
    assert (t["A"].read_bytes, t["B"].read_bytes, t["G"].write_bytes) == (a, 2 * b, g)
    assert t["S"].read_bytes == t["S"].write_bytes == 0


def test_scope_errors(capsys):
    _fails(["entitle", "matmul", "--hardware", "trn2-lnc2"], capsys, "trn2-lnc2", "--lnc 2",
           "2x too high")
    _fails(["entitle", "projection", "--hardware", "trn2-device", "--lnc", "2"], capsys,
           "trn2-device", "4x too high")
    _fails(["entitle", "matmul", "--hardware", "trn2-core", "--lnc", "2"], capsys, "trn2-core",
           "splits loop m across 2")
    _fails(["entitle", "matmul", "--hardware", "trn2-core", "--lnc", "2", "--split", "zz"], capsys,
           "--split zz", "no loop")
    d = _json(["entitle", "matmul", "--hardware", "trn2-lnc2", "--allow-scope-mismatch"], capsys)
    assert d["lnc"] == {"cores": 1, "split": None, "sheet_physical_cores": 2}
    d = _json(["entitle", "matmul", "--hardware", "trn2-lnc2", "--lnc", "2"], capsys)
    assert d["lnc"]["cores"] == 2 and d["lnc"]["split"] == "m" and "LNC=2" in d["scope"]


def test_declared_split_must_name_a_loop(tmp_path, capsys):
    text = spec.locate("matmul").read_text() + '\n[lnc]\nsplit = "q"\n'
    p = tmp_path / "bad_split.toml"
    p.write_text(text)
    _fails(["entitle", str(p), "--hardware", "trn2-lnc2"], capsys, "lnc.split", "'q'")
    p.write_text(spec.locate("matmul").read_text() + '\n[lnc]\nsplit = "n"\n')
    d = _json(["entitle", str(p), "--hardware", "trn2-lnc2"], capsys)
    assert d["lnc"]["split"] == "n"


# --- PSUM ------------------------------------------------------------------------------------------

LIVE_NEST = """
[kernel]
name = "live"
[params]
M = 256
N = {N}
K = 512
[tensors]
A = {{ shape = ["K", "M"] }}
B = {{ shape = ["K", "N"] }}
C = {{ shape = ["M", "N"], output = true }}
[nest]
body = '''
for m in M by 128:
  for k in K by 128:
    load A[k, m]
    for n in N by 512:
      load B[k, n]
      matmul C[m, n] += A[k, m] @ B[k, n]
  for n2 in N by 512:
    store C[m, n2]
'''
"""


@pytest.mark.parametrize("N, fits", [(2048, True), (8192, False)])
def test_psum_live_accumulators(N, fits, tmp_path):
    # all N/512 output tiles of one m row accumulate across k before any is stored: N/512 banks
    p = tmp_path / "live.toml"
    p.write_text(LIVE_NEST.format(N=N))
    rep = analyze(spec.load_kernel(str(p)), TRN2)
    ps = rep.ceilings.psum
    assert ps.live == N // 512 and ps.tile_banks == 1 and ps.needed_banks == N // 512
    assert ps.fits is fits
    assert ("does not fit" in ps.verdict()) is (not fits)


def test_psum_one_tile_fills_one_bank_and_evacuation():
    # one 128 x 512 fp32 accumulator = 512 * 4 = 2 KiB per partition = one bank; the tutorial nest
    # keeps one open. Evacuation: every C element leaves PSUM once, M*N / (128 x 1.12e9) s
    rep = analyze(spec.load_kernel("matmul"), TRN1)
    ps = rep.ceilings.psum
    assert (ps.tile_banks, ps.live, ps.needed_banks, ps.banks) == (1, 1, 1, 8)
    assert ps.evacuated_elements == 1024 * 1024 and ps.engine == "vector"
    assert ps.T_evacuate == pytest.approx(1024 * 1024 / (128 * 1.12e9))
    assert analysis_dict(rep)["psum"]["evacuation_hbm_bytes"] == 0
    # k outermost stores each C tile K/TK times: 8 evacuations of every element
    ko = analyze(spec.load_kernel("matmul_kouter"), TRN1).ceilings.psum
    assert ko.evacuated_elements == 1024 * 1024 * (1024 // 128)


def _cannot_run(argv, capsys, *needles):
    """A kernel that cannot run: exit 3, the report printed, the reason in the headline."""
    assert main(argv) == 3
    out = capsys.readouterr().out
    assert "CANNOT RUN" in out
    for n in needles:
        assert n in out, out
    return out


def test_tile_larger_than_psum_cannot_run(tmp_path, capsys):
    # a sheet whose moving tile may reach 8192 fp32 values (32 KiB) but whose PSUM is 8 x 2 KiB
    trn2 = (hardware._bundled_dir() / "trn2-core.toml").read_text()
    assert 'moving_max = { value = 512,' in trn2
    sheet = tmp_path / "wide.toml"
    sheet.write_text(trn2.replace('moving_max = { value = 512,', 'moving_max = { value = 8192,'))
    _cannot_run(["ceilings", "matmul", "--hardware", str(sheet), "--set", "TN=8192", "--set", "N=8192"],
                capsys, "PSUM", "8 PSUM banks")
    # and the ordinary limit: N_t beyond the moving maximum (one PSUM bank on trn2)
    _cannot_run(["ceilings", "matmul", "--hardware", "trn2-core", "--set", "TN=1024"], capsys, "N_t=1024")


def test_sheet_without_engine_is_an_error_for_ceilings(tmp_path, capsys):
    trn2 = (hardware._bundled_dir() / "trn2-core.toml").read_text()
    i = trn2.index("[engines.vector]")  # the engines are the sheet's last tables
    sheet = tmp_path / "noengine.toml"
    sheet.write_text(trn2[:i])
    _fails(["ceilings", "matmul", "--hardware", str(sheet)], capsys, "engines.vector")
    # entitle still works and says the evacuation was not costed
    d = _json(["entitle", "matmul", "--hardware", str(sheet)], capsys)
    assert any("not costed" in n for n in d["ceiling_notes"])


# --- the interconnect roof --------------------------------------------------------------------------

def _parallel_spec(tmp_path, over, chips=2):
    p = tmp_path / f"tp_{over}.toml"
    p.write_text(spec.locate("matmul").read_text() + f'\n[parallel]\nchips = {chips}\nover = "{over}"\n')
    return str(p)


@pytest.mark.parametrize("over, chips", [("K", 2), ("K", 4), ("N", 2), ("N", 4)])
def test_link_roof(over, chips, tmp_path, capsys):
    # per chip: over K a ring all-reduce of C sends 2 (C-1)/C |C|; over N an all-gather (C-1) |C|
    c_bytes = 1024 * 1024 * 2
    want = 2 * (chips - 1) * c_bytes // chips if over == "K" else (chips - 1) * c_bytes
    d = _json(["entitle", _parallel_spec(tmp_path, over, chips), "--hardware", "toy"], capsys)
    assert d["link"]["bytes"] == want and d["link"]["bw"] == 50_000_000_000
    t_link = want / 50e9
    assert d["T_link"] == pytest.approx(t_link)
    times = {"compute": d["T_compute"], "memory": d["T_memory"], "link": t_link}
    assert d["T_best"] == pytest.approx(max(times.values()))
    assert d["T_worst"] == pytest.approx(sum(times.values()))
    assert d["binding_roof"] == max(times, key=times.get) == d["bound"]
    assert any(c["name"] == "link" and c["T"] == pytest.approx(t_link) for c in d["ceilings"])


def test_link_binds_with_a_slow_link(tmp_path, capsys):
    # 1 MB/s: the 2 MiB all-reduce takes ~2 s, far above W/P and Q/BW
    d = _json(["entitle", _parallel_spec(tmp_path, "K"), "--hardware", "toy", "--link-bw", "1000000"],
              capsys)
    assert d["binding_roof"] == "link" and d["T_best"] == pytest.approx(1024 * 1024 * 2 / 1e6)


def test_link_bad_input(tmp_path, capsys):
    _fails(["entitle", _parallel_spec(tmp_path, "K"), "--hardware", "trn2-core"], capsys,
           "trn2-core", "link.bw", "--link-bw")
    _fails(["entitle", _parallel_spec(tmp_path, "M"), "--hardware", "toy"], capsys,
           "parallel.over='M'")
    _fails(["entitle", _parallel_spec(tmp_path, "K", chips=1), "--hardware", "toy"], capsys,
           "parallel.chips=1")


# --- measured roofs and JSON/CLI shape ---------------------------------------------------------------

def test_measured_roofs(tmp_path, capsys):
    sheet = tmp_path / "measured.toml"
    sheet.write_text((hardware._bundled_dir() / "trn1-core.toml").read_text() + """
[measured]
bw = { value = 300000000000, where = "copy kernel, 64 MiB, test fixture" }
flops = { bf16 = { value = 85000000000000, where = "resident matmul loop, test fixture" } }
""")
    d = _json(["entitle", "--flops", "1e12", "--bytes", "1e9", "--hardware", str(sheet), "--roofs",
               "measured"], capsys)
    assert (d["P"], d["BW"], d["roofs"]) == (85e12, 300e9, "measured")
    d = _json(["entitle", "matmul", "--hardware", str(sheet), "--roofs", "measured"], capsys)
    assert d["roofs"] == "measured" and d["P"] == 85e12
    # ceilings stay fractions of the spec peak
    assert next(c for c in d["ceilings"] if c["name"] == "dtype")["P"] == TRN1.P("bf16")
    _fails(["entitle", "matmul", "--hardware", "trn1-core", "--roofs", "measured"], capsys,
           "[measured]")


def test_entitle_json_keys(capsys):
    d = _json(["entitle", "matmul_small_tiles", "--hardware", "trn1-core"], capsys)
    names = [c["name"] for c in d["ceilings"]]
    assert names[:5] == ["dtype", "partition_fill", "column_fill", "issue_rate", "combined"]
    assert "vector" in names
    assert all({"name", "P", "T"} <= set(c) for c in d["ceilings"])
    assert d["instruction_s"] == pytest.approx(128 / 2.8e9) and d["scope"] == TRN1.scope
    out = main(["ceilings", "matmul_small_tiles", "--hardware", "trn1-core"])
    text = capsys.readouterr().out
    assert out == 0 and "partition_fill" in text and "PSUM" in text


def test_ceilings_of_a_program_per_kernel(capsys):
    # SwiGLU MLP fused into one kernel: gate and up accumulate side by side before silu/mul drain
    # them, so two accumulator tiles (one bank each) are live at once
    d = _json(["ceilings", "swiglu_mlp", "--hardware", "trn2-core"], capsys)
    (st,) = d["stages"]
    assert st["psum"]["live_accumulators"] == 2 and st["psum"]["needed_banks"] == 2
    d = _json(["ceilings", "mlp_unfused", "--hardware", "trn2-core"], capsys)
    act = next(s for s in d["stages"] if s["matmul_instructions"] == 0)
    assert act["ceilings"] == [] and act["psum"]["needed_banks"] == 0
    _fails(["ceilings", "mlp_unfused", "--hardware", "trn2-core", "--lnc", "2"], capsys, "--lnc")


def test_psum_accumulator_open_across_a_loop_counts_in_every_iteration(capsys):
    # flash attention: o[i, e] accumulates over the key blocks j, and in every j iteration after the
    # first the score tile s[i, j] (128 x 512 fp32 = 2 KiB: one bank) is accumulated while o
    # (128 x 128 fp32 = 512 B: one bank) is still open: 2 tiles, 2 banks
    d = _json(["ceilings", "attention_fused", "--hardware", "trn2-core"], capsys)
    (st,) = d["stages"]
    assert st["psum"]["live_accumulators"] == 2 and st["psum"]["needed_banks"] == 2
