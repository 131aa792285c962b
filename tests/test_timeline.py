"""The engine timeline (loopsim.targets.neuron.timeline over loopsim.targets.schedule): makespans
derived by hand from the sheet's constants, single vs double buffering, an op on the critical
path, PSUM banks serialising groups, the extrapolation of cut runs, and the verdict's use of it.

Constants used by hand (trn2-core sheet): DMA fixed cost F = 1300 ns [S11]; 16 DMA engines at
368 GB/s / 16 = 23 GB/s each; DMA efficiency from the [S10] figure at the bytes per partition of
the transfer (256 B: 0.105, 1 KiB: 0.423, 2 KiB: 0.815, 4 KiB: 0.965); TensorE 2.4 GHz,
MM_INIT 64 cycles, fill 128 cycles; Vector fp32 256 lanes x 0.96 GHz; Scalar 128 x 1.2 GHz;
MIN_II 64 engine cycles.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings, strategies as st

from loopsim.cli.main import main
from loopsim.frontends import spec
from loopsim.model import pipeline
from loopsim.targets import schedule as tl
from loopsim.targets import hardware
from loopsim.targets.neuron import timeline as ntl

# the compiled walk is compiled in the background from the start of the session (tests/conftest.py)
pytestmark = pytest.mark.usefixtures("walk_warm")

HW = hardware.load("trn2-core")
F = 1300e-9
DMA = 368e9


def dma_s(nbytes: int, eff: float) -> float:
    return nbytes / (DMA * eff)


def predict(name_or_path, hw=HW, sets=None, buffers=None, **kw):
    prog = pipeline.load(str(name_or_path), sets or {}, buffers=buffers)
    a = pipeline.analyze(prog, hw)
    k = prog.stages[0].kernel
    return ntl.timeline(k, hw, dtype=a.dtype, W_P=a.W / hw.P(a.dtype), Q_BW=a.Q / hw.bw, Q=a.Q, **kw), a


def write_spec(tmp_path, name, tensors, body, params=""):
    p = tmp_path / f"{name}.toml"
    p.write_text(f'[kernel]\nname = "{name}"\n' + (f"[params]\n{params}\n" if params else "")
                 + "[tensors]\n" + tensors + "\n[nest]\nbody = '''\n" + body + "'''\n")
    return p


# -- the copy kernel: fixed cost + bytes at the rate its size reaches ------------------------------


@pytest.mark.parametrize("tc,ppb,eff", [(128, 256, 0.105), (512, 1024, 0.423), (2048, 4096, 0.965)])
def test_one_tile_copy_is_two_dependent_dmas(tc, ppb, eff):
    """One 128 x TC bf16 tile: the load (F + its bytes at eff), then the store of the same buffer
    (F + the same): T = 2 (F + 256 TC / (368 GB/s x eff))."""
    t, _ = predict("copy", sets=dict(R=128, C=tc, TR=128, TC=tc))
    assert t.T == pytest.approx(2 * (F + dma_s(128 * tc * 2, eff)), rel=1e-12)
    assert dict(t.instructions) == {"dma": 2} and t.exact


def test_copy_stream_single_vs_double_buffered():
    """8 tiles of 128 x 4096 bf16 (8 KiB per partition: d = 1 MiB / (368 GB/s x 0.983) = 2.9 us,
    more than F). One buffer: each load waits for the store of the tile before, which waits for
    its load: 8 x 2 (F + d). Two buffers: every wait (F after its producer) is hidden behind a
    transfer in flight but the last store's, so the DMA engines idle only for the first and the
    last F: 2F + 16 d."""
    d = dma_s(128 * 4096 * 2, 0.983)
    sets = dict(R=1024, C=4096, TR=128, TC=4096)
    one, _ = predict("copy", sets=sets, buffers=(("*", 1),))
    two, _ = predict("copy", sets=sets, buffers=(("*", 2),))
    assert one.T == pytest.approx(8 * 2 * (F + d), rel=1e-12)
    assert two.T == pytest.approx(2 * F + 16 * d, rel=1e-12)
    assert dict(two.gap)["fixed_cost"] == pytest.approx(2 * F, rel=1e-9)


# -- a matmul: serial sum with one buffer, the slowest stage with two --------------------------------


def matmul_spec(tmp_path, n):
    return write_spec(tmp_path, "mm", 'A = { shape = ["K", 128], dtype = "bf16" }\n'
                      'B = { shape = ["K", 512], dtype = "bf16" }\n'
                      'C = { shape = [128, 512], dtype = "bf16", output = true }',
                      "for k in K by 128:\n  load A[k, :]\n  load B[k, :]\n"
                      "  matmul C[:, :] += A[k, :] @ B[k, :]\nstore C[:, :]\n", f"K = {128 * n}")


@pytest.mark.parametrize("n", [1, 2, 6])
def test_matmul_single_buffered_is_the_serial_sum(tmp_path, n):
    """Per k: A (32 KiB, 256 B/partition) and B (128 KiB, 1 KiB) wait for the matmul before them
    (+F), share the DMA engines, then the matmul (512 cycles at 2.4 GHz); after the last: the PSUM
    copy (fill 128 cycles, then 65,536 fp32 elements on the Vector Engine at 256 x 0.96 GHz) and
    the store (F + 128 KiB at 0.423). T = n (F + dA + dB + t_mm) + fill + t_ev + F + dC."""
    dA, dB, dC = dma_s(32768, 0.105), dma_s(131072, 0.423), dma_s(131072, 0.423)
    t_mm, fill, t_ev = 512 / 2.4e9, 128 / 2.4e9, 65536 / (256 * 0.96e9)
    t, _ = predict(matmul_spec(tmp_path, n), buffers=(("*", 1),))
    assert t.T == pytest.approx(n * (F + dA + dB + t_mm) + fill + t_ev + F + dC, rel=1e-12)


def test_matmul_double_buffered_runs_at_the_dma_stage(tmp_path):
    """Two buffers: the load of tile k+1 waits only for the matmul of k-1; the DMA stage per k
    (dA + dB = 1.69 us) exceeds F + t_mm (1.51 us), so the DMA engines never idle after the first
    F: T = F + n (dA + dB) + t_mm + fill + t_ev + F + dC, the slowest stage, not the sum."""
    n = 6
    dA, dB, dC = dma_s(32768, 0.105), dma_s(131072, 0.423), dma_s(131072, 0.423)
    t_mm, fill, t_ev = 512 / 2.4e9, 128 / 2.4e9, 65536 / (256 * 0.96e9)
    assert dA + dB > F + t_mm
    t, _ = predict(matmul_spec(tmp_path, n), buffers=(("*", 2),))
    assert t.T == pytest.approx(F + n * (dA + dB) + t_mm + fill + t_ev + F + dC, rel=1e-12)
    one, _ = predict(matmul_spec(tmp_path, n), buffers=(("*", 1),))
    assert t.T < one.T


# -- an op on the critical path --------------------------------------------------------------------


def test_scalar_op_between_load_and_store(tmp_path):
    """load x (128 x 512 fp32: 2 KiB per partition, eff 0.815), exp on the Scalar Engine (65,536
    elements at 128 x 1.2 GHz, above MIN_II), store y: F + dX + t_exp + F + dY."""
    p = write_spec(tmp_path, "e", 'x = { shape = [128, 512], dtype = "fp32" }\n'
                   'y = { shape = [128, 512], dtype = "fp32", output = true }',
                   "load x[:, :]\nexp y[:, :] = x[:, :]\nstore y[:, :]\n")
    t, _ = predict(p)
    d = dma_s(262144, 0.815)
    assert t.T == pytest.approx(F + d + 65536 / (128 * 1.2e9) + F + d, rel=1e-12)
    assert dict(t.instructions) == {"dma": 2, "scalar": 1}


# -- PSUM banks ------------------------------------------------------------------------------------


def _fast_dma_sheet(banks: int):
    """trn2-core with no DMA fixed cost and DMA engines so fast that transfers take ~0 s."""
    text = hardware.locate_text("trn2-core") if hasattr(hardware, "locate_text") else \
        open(hardware.load("trn2-core").path, encoding="utf-8").read()
    text = text.replace("banks = { value = 8,", f"banks = {{ value = {banks},", 1)
    text = text.replace("core_bw = { value = 368000000000,", "core_bw = { value = 4000000000000000000,", 1)
    text = text.replace("dma_fixed_ns = { value = 1300,", "dma_fixed_ns = { value = 0,", 1)
    return hardware.loads(text, "fast.toml")


def test_psum_banks_serialise_groups(tmp_path):
    """16 accumulation groups of one matmul each (128 x 128 @ 128 x 512, 512 cycles), each read
    out of PSUM by the Vector Engine (65,536 fp32 elements, 0.267 us, slower than the matmul),
    DMA ~free, 16 staging buffers. With 8 banks the Tensor Engine runs ahead and the Vector
    Engine is the stage: t_mm + fill + 16 t_ev. With one bank each matmul waits for the previous
    group's copy: 16 (t_mm + fill + t_ev)."""
    p = write_spec(tmp_path, "g", 'A = { shape = ["K", "M"], dtype = "bf16" }\n'
                   'B = { shape = ["K", "N"], dtype = "bf16" }\n'
                   'C = { shape = ["M", "N"], dtype = "bf16", output = true }',
                   "load A[:, :]\nload B[:, :]\nfor n in N by 512:\n"
                   "  matmul C[:, n] += A[:, :] @ B[:, n]\n  store C[:, n]\n",
                   "K = 128\nM = 128\nN = 8192")
    t_mm, fill, t_ev = 512 / 2.4e9, 128 / 2.4e9, 65536 / (256 * 0.96e9)
    many, _ = predict(p, hw=_fast_dma_sheet(8), buffers=(("*", 16),))
    one, _ = predict(p, hw=_fast_dma_sheet(1), buffers=(("*", 16),))
    assert many.T == pytest.approx(t_mm + fill + 16 * t_ev, rel=1e-6)
    assert one.T == pytest.approx(16 * (t_mm + fill + t_ev), rel=1e-6)


# -- the scheduler ---------------------------------------------------------------------------------


def test_pipe_fills_earlier_gaps():
    """Two queues sharing a pipe: A (0-1 s) and a later-ready B (3-4 s) leave 1-3 free; C, ready
    at 1 on another queue and lasting 1.5 s, takes it rather than going after B."""
    s = tl.Scheduler()
    q1, q2, q3 = s.queue_id("a", "dma"), s.queue_id("b", "dma"), s.queue_id("c", "dma")
    s.add(q1, 1.0, pipe="p")
    s.add(q2, 1.0, [(-1, 3.0)], pipe="p")  # (by, lag): from 3 s on
    i = s.add(q3, 1.5, [(-1, 1.0)], pipe="p")
    assert (s.start[i], s.end[i]) == (1.0, 2.5)
    assert s.pipe_busy("p") == [(0.0, 2.5), (3.0, 4.0)]


@given(st.lists(st.tuples(st.integers(0, 2), st.floats(0.0, 2.0), st.integers(-1, 30)), max_size=30))
@settings(max_examples=80, deadline=None)
def test_schedule_respects_every_wait_and_queue_order(ops):
    """Whatever the instructions: each starts after what it waits for and after its queue's last
    end; the makespan is at most the sum of the durations and waits' latencies (serial)."""
    s = tl.Scheduler()
    qs = [s.queue_id(str(i), "dma" if i else "tensor") for i in range(3)]
    for q, d, dep in ops:
        waits = [(dep, 0.5)] if 0 <= dep < len(s.start) else []
        i = s.add(qs[q], d, waits, pipe="p" if q else None)
        for b, lag in waits:
            assert s.start[i] >= s.end[b] + lag
    for q in qs:
        mine = [i for i in range(len(s.start)) if s.queue[i] == q]
        assert all(s.start[b] >= s.end[a] for a, b in zip(mine, mine[1:]))
    assert s.makespan <= sum(d for _, d, _ in ops) + 0.5 * len(ops) + 1e-9


# the compiled walk (loopsim/targets/neuron/walk.py) against the Python walk, on kernels with ragged
# edges, chunked loads, ops reading PSUM, accumulations, several buffers, LNC cores and cut runs
_WALKED = ("matmul", "copy", "gqa_decode", "nki_tutorial/4_fully_optimized", "matmul_small_tiles",
           "matmul_kouter", "projection")


@given(st.sampled_from(_WALKED), st.lists(st.integers(1, 700), min_size=3, max_size=3),
       st.integers(1, 3), st.sampled_from([0, 2]), st.sampled_from([200, 3000, 10**6]),
       st.sampled_from(["trn2-core", "trn1-core"]))
@settings(max_examples=25, deadline=None)
def test_the_compiled_walk_schedules_as_the_python_walk(name, sizes, b, lnc, budget, sheet):
    """Every instruction's queue, statement, start, end, pred, why and lag, the pipe's stretches
    and every figure: the same from both walks (the reference: the Python walk), exactly."""
    from loopsim.base.errors import LoopsimError

    ref = name
    params = pipeline.read(ref).params
    big = [k for k, v in params.items() if isinstance(v, int) and not k.startswith("T") and
           not k.startswith("TILE")][:3]
    sets = {k: max(1, params[k] * n // 256) for k, n in zip(big, sizes)}  # ragged sizes too
    try:
        prog = pipeline.load(ref, sets, buffers=(("*", b),), **({"lnc_cores": lnc} if lnc else {}))
    except LoopsimError:
        return
    hw = hardware.load(sheet)
    for stage in prog.stages:
        runs = {}
        for compiled in (False, True):
            try:
                runs[compiled] = ntl.timeline(stage.kernel, hw, dtype="bf16", W_P=1e-6, Q_BW=2e-6,
                                              Q=1000, budget=budget, compiled=compiled)
            except LoopsimError:  # sizes an LNC split refuses (both walks: before either runs)
                assert not runs
                return
        a, c = runs[False], runs[True]
        assert c.sched.arrays is not None and a.sched.arrays is None  # each walk ran
        sa, sc = a.sched, c.sched
        assert (sa.queues, sa.kinds, sa.queue, sa.label) == (sc.queues, sc.kinds, sc.queue, sc.label)
        assert (sa.start, sa.end, sa.pred, sa.why, sa.lag) == (sc.start, sc.end, sc.pred, sc.why, sc.lag)
        assert {k: sa.pipe_busy(k) for k in sa._pipes} == {k: sc.pipe_busy(k) for k in sc._pipes}
        assert sa.shared == sc.shared
        _same(c.as_dict(), a.as_dict(), f"{name} {sets} buffers {b} lnc {lnc} budget {budget} {sheet}")


def test_the_compiled_walk_runs_past_its_threshold(monkeypatch):
    # below ntl.COMPILED_FROM instructions a run walks in Python (numba not imported for it),
    # from it compiled; the same answer
    k = spec.load_kernel("matmul", dict(M=512, N=512, K=512))
    hw = hardware.load("trn2-core")
    small = ntl.timeline(k, hw, dtype="bf16", W_P=1e-6, Q_BW=2e-6, Q=1000)
    assert small.sched.arrays is None and ntl._size(k, {}) < ntl.COMPILED_FROM
    monkeypatch.setattr(ntl, "COMPILED_FROM", 0)
    big = ntl.timeline(k, hw, dtype="bf16", W_P=1e-6, Q_BW=2e-6, Q=1000)
    assert big.sched.arrays is not None and (big.T, big.busy, big.gap) == (small.T, small.busy, small.gap)


def test_multilinear_is_exact_on_multilinear_values():
    f = lambda x, y: 3 + 2 * x - y + 0.5 * x * y  # noqa: E731
    samples = {(a, b): {"v": f(a, b)} for a in (4, 5) for b in (4, 5)}
    assert tl.multilinear(samples, (4, 4), (1000, 37))["v"] == pytest.approx(f(1000, 37))


# -- extrapolation ---------------------------------------------------------------------------------


@pytest.mark.parametrize("name,sets,b,budget", [
    ("matmul", {}, 2, 200), ("matmul", {}, 1, 200), ("copy", dict(R=2048, C=4096, TC=512), 2, 200),
    ("nki_tutorial/4_fully_optimized", dict(N=16384), 2, 6000)])
def test_cut_runs_extrapolate_to_the_exact_run(name, sets, b, budget):
    """A small budget cuts the outermost long loop to a few iterations (run at 4 and 5); the
    extrapolated figures agree with the whole run's."""
    ref = spec.locate(name) if "/" in name else name
    exact, _ = predict(ref, sets=sets, buffers=(("*", b),), budget=10**6)
    cut, _ = predict(ref, sets=sets, buffers=(("*", b),), budget=budget)
    assert exact.exact and not cut.exact and len(cut.sched) < len(exact.sched)
    assert cut.T == pytest.approx(exact.T, rel=1e-3)
    for (k1, v1), (k2, v2) in zip(exact.busy, cut.busy):
        assert k1 == k2 and v2 == pytest.approx(v1, rel=1e-3)
    assert dict(cut.instructions) == dict(exact.instructions)


def test_a_cut_inner_loop_never_predicts_below_an_engines_busy_time():
    """Cutting the fully optimized kernel's inner m-tile loop keeps its block loads whole while its
    matmuls shrink: the cut runs are DMA-bound, the whole kernel is not. T is floored at the
    Tensor Engine's busy time (exact: a sum of instruction times)."""
    ref = spec.locate("nki_tutorial/4_fully_optimized")
    t, _ = predict(ref, budget=200)
    assert not t.exact and t.T >= dict(t.busy)["tensor"] * (1 - 1e-12)


def test_a_huge_kernel_runs_in_seconds():
    """matmul at M = N = K = 65,536 is 2^24 matmul and 2^25 load instructions: the cut runs stay
    within the budget, and the counts are the hand counts."""
    t, _ = predict("matmul", sets=dict(M=65536, N=65536, K=65536))
    m = 512 * 128 * 512
    assert dict(t.instructions) == {"dma": 2 * m + 512 * 128, "tensor": m, "vector": 512 * 128}
    assert t.simulated <= ntl.BUDGET and not t.exact


# -- the verdict and the command -------------------------------------------------------------------


@pytest.mark.parametrize("name", ["matmul", "copy", "nki_tutorial/2_hoist_load", "layernorm",
                                  "mlp_fused"])
def test_verdict_T_is_the_timeline_never_below_the_roofline(name):
    ref = str(spec.locate(name)) if "/" in name else name
    a = pipeline.analyze(pipeline.load(ref), HW)
    r = pipeline.analyze(pipeline.load(ref), HW, model="roofline")
    assert "timeline" not in r.times and r.T >= a.entitlement.T_best * (1 - 1e-12)
    assert a.T == max(r.T, a.times["timeline"])
    for st_ in a.stages:
        assert st_.timeline.T <= st_.timeline.serial * (1 + 1e-12)


def test_decode_rmsnorm_takes_microseconds(tmp_path):
    """A decode-time RMSNorm, 4 tokens of width 4096 (bf16): Q = 32,768 (x) + 8,192 (gamma) +
    32,768 (y) = 73,728 bytes, Q/BW = 197 ns. As a timeline: gamma (4096 rows of 2 B on 128
    partitions: 64 B per partition, eff 0.029, 16 engines) and x (4 rows of 8 KiB: eff 0.983, on
    4 engines) share the DMA engines after F; the Vector Engine's 2 passes over 16,384 elements
    (512 lanes x 0.96 GHz: 66.7 ns), the Scalar Engine's 1 (128 x 1.2 GHz: 106.7 ns); the store
    (F + like x). T = F + d_g + d_x + t_v + t_s + F + d_x: microseconds."""
    p = write_spec(tmp_path, "rms", 'x = { shape = ["B", "D"], dtype = "bf16" }\n'
                   'gamma = { shape = ["D"], dtype = "bf16" }\n'
                   'y = { shape = ["B", "D"], dtype = "bf16", output = true }',
                   "load gamma[:]\nload x[:, :]\nrmsnorm y[:, :] = x[:, :], gamma[:]\nstore y[:, :]\n",
                   "B = 4\nD = 4096")
    t, a = predict(p)
    assert a.Q == 73728 and a.Q / HW.bw < 200e-9
    d_g = 8192 / (DMA * 0.029)
    d_x = 32768 / (4 * DMA / 16 * 0.983)
    t_v, t_s = 2 * 16384 / (512 * 0.96e9), 16384 / (128 * 1.2e9)
    assert t.T == pytest.approx(F + d_g + d_x + t_v + t_s + F + d_x, rel=1e-9)
    assert pipeline.analyze(pipeline.load(str(p)), HW).T == pytest.approx(t.T, rel=1e-11) and t.T > 2 * F


def test_timeline_command_json_and_png(tmp_path, capsys):
    png = tmp_path / "t.png"
    assert main(["timeline", "matmul", "--hardware", "trn2-core", "--json", "-o", str(png)]) == 0
    d = json.loads(capsys.readouterr().out)
    s = d["stages"][0]
    assert d["T"] == pytest.approx(s["T"]) and d["limit"] == "timeline"
    assert set(s["engines"]) == {"dma", "tensor", "vector"}
    assert s["instructions"] == {"dma": 272, "tensor": 128, "vector": 16}
    assert sum(s["gap"].values()) == pytest.approx(s["gap_total"], rel=1e-9)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_timeline_command_text(capsys):
    assert main(["timeline", "copy", "--hardware", "trn2-core"]) == 0
    out = capsys.readouterr().out
    assert "T (predicted)" in out and "gap T - T_best" in out and "dma_fixed_ns 1300 ns" in out


def test_timeline_refuses_a_policy(capsys):
    assert main(["timeline", "matmul", "--hardware", "trn2-core", "--policy", "lru"]) == 2
    assert "--policy lru" in capsys.readouterr().err


def test_an_lnc2_pair_runs_each_half_on_its_own_engines():
    """matmul at M = 2048 split over the two physical cores of trn2-lnc2 (--lnc 2, the m loop):
    each core runs the M = 1024 kernel on its own DMA engines, Tensor Engine and PSUM, with the
    same per-core constants as trn2-core, so T is the single core's T at M = 1024; the pair runs
    twice the instructions."""
    pair = pipeline.analyze(pipeline.load("matmul", {"M": 2048}, lnc_cores=2), hardware.load("trn2-lnc2"))
    one = pipeline.analyze(pipeline.load("matmul", {"M": 1024}), HW)
    tp, t1 = pair.stages[0].timeline, one.stages[0].timeline
    assert tp.T == pytest.approx(t1.T, rel=1e-12)
    assert {k: 2 * n for k, n in t1.instructions} == dict(tp.instructions)


# -- engine ceilings and the timeline: one formula -------------------------------------------------


def test_a_reduction_stored_keeps_the_timeline_at_its_vector_ceiling():
    """row_mean (tests/nki_kernels/reductions.py) on x = 128 x 16384 bf16: the sum and the divide
    have no op statement (EngineWork charged at the store): 2 passes x 2,097,152 elements on the
    Vector Engine at 256 lanes x 0.96 GHz (fp32 width) = 17.07 us, more than the load and store
    (4 MiB at 368 GB/s x eff, ~12 us). The vector ceiling and the timeline both say
    4,194,304 / 245.76e9 s, and T is that (the timeline used to leave the work out)."""
    from loopsim.frontends import program
    from loopsim.frontends.nki.load import trace_kernel

    path = str(__import__("pathlib").Path(__file__).parent / "nki_kernels" / "reductions.py")
    k, _ = trace_kernel(path, "row_mean", args={"x": ((128, 16384), "bf16")})
    a = pipeline.analyze(program.Program.single(k), HW)
    vec = 2 * 128 * 16384 / (256 * 0.96e9)
    assert a.times["vector"] == pytest.approx(vec, rel=1e-12)
    assert a.times["timeline"] == pytest.approx(vec, rel=1e-11)
    t = a.stages[0].timeline
    assert dict(t.busy)["vector"] == pytest.approx(vec, rel=1e-12)
    assert t.T == pytest.approx(vec, rel=1e-12) and t.T >= a.times["dma_transfers"]
    assert dict(t.gap)["slower_engine"] > 0  # T - T_best is the Vector Engine's, on the DMA's time


@pytest.mark.parametrize("name", spec.bundled_names())
def test_the_timeline_is_never_below_an_engine_ceiling(name):
    """Every bundled spec on trn2-core and trn1-core: the timeline's T is at least each engine's
    busy time the verdict lists (Vector, Scalar, GpSimd, the Tensor Engine's instruction time),
    as its instructions cost what the ceilings count (one formula), each at least once."""
    for hw in (HW, hardware.load("trn1-core")):
        a = pipeline.analyze(pipeline.load(name), hw)
        for e in ("vector", "scalar", "gpsimd", "tensor_engine"):
            if e in a.times:
                assert a.times["timeline"] >= a.times[e] * (1 - 1e-12), (hw.name, e)


def test_engine_seconds_is_the_roof():
    """engine_seconds: element-ops / (width x clock x cores), per core / (width x clock)."""
    from loopsim.targets.neuron.engines import engine_seconds

    assert engine_seconds(HW, "vector", 245_760, "fp32") == pytest.approx(245_760 / (256 * 0.96e9), rel=1e-15)
    assert engine_seconds(HW, "scalar", 1536, "fp32", per_core=True) == pytest.approx(1536 / (128 * 1.2e9), rel=1e-15)


# -- DMA transpose ---------------------------------------------------------------------------------


def _traced(func, shape, dtype="bf16", hw=HW):
    from loopsim.frontends import program
    from loopsim.frontends.nki.load import trace_kernel

    path = str(__import__("pathlib").Path(__file__).parent / "nki_kernels" / "reductions.py")
    k, rec = trace_kernel(path, func, args={"x": (shape, dtype)})
    return pipeline.analyze(program.Program.single(k), hw), k


def test_a_dma_transpose_moves_its_bytes_at_90_percent_of_the_dma_rate():
    """transposed_copy of x = 2048 x 128 bf16 (B = 524,288 bytes) on trn2-core, beside plain_copy
    of the same bytes. [S2]: "DMA transpose on Trainium2 can achieve up to 90% DMA throughput
    utilization ... compared to up to 100% ... for a DMA copy" (dma.transpose = 900 per mille).
    DMA ceiling: plain 2B / 368 GB/s; transposed (B x 1000/900 + B) / 368 GB/s. Timeline: both
    transfers have 4,096 B per partition (eff 0.965, 16 engines): plain 2 (F + d), transposed
    2F + d + d x 1000/900, d = B / (368 GB/s x 0.965). No engine touches the tile (no vector work)."""
    B = 2048 * 128 * 2
    d = dma_s(B, 0.965)
    a, k = _traced("transposed_copy", (2048, 128))
    p, _ = _traced("plain_copy", (128, 2048))
    assert [getattr(s, "transpose", False) for s, _ in k.statements()] == [True, False]
    assert a.counts.Q == p.counts.Q == 2 * B  # the same bytes
    assert p.times["dma"] == pytest.approx(2 * B / DMA, rel=1e-12)
    assert a.times["dma"] == pytest.approx((B * 1000 / 900 + B) / DMA, rel=1e-12)
    assert p.stages[0].timeline.T == pytest.approx(2 * (F + d), rel=1e-12)
    assert a.stages[0].timeline.T == pytest.approx(2 * F + d + d * 1000 / 900, rel=1e-12)
    compiled = ntl.timeline(k, HW, dtype="bf16", W_P=1e-6, Q_BW=2e-6, Q=1000, compiled=True)
    assert compiled.sched.arrays is not None and compiled.T == pytest.approx(2 * F + d + d * 1000 / 900, rel=1e-12)
    assert "vector" not in a.times
    secs, line = HW.dma_time(k, a.counts, exact=True)
    assert secs == a.times["dma"] and f"{B:,} bytes by DMA transpose at 90% of the DMA rate" in line


def test_a_sheet_without_a_transpose_rate_moves_a_transpose_at_the_copy_rate():
    """trn1-core gives no dma.transpose (the [S2] figure is Trainium2's): the transposed copy's
    DMA ceiling is the plain copy's, 2B / 272 GB/s."""
    trn1 = hardware.load("trn1-core")
    a, _ = _traced("transposed_copy", (2048, 128), hw=trn1)
    assert trn1.dma_transpose_permille is None
    assert a.times["dma"] == pytest.approx(2 * 2048 * 128 * 2 / 272e9, rel=1e-12)


# -- the DMA fixed cost is a latency: independent transfers overlap it --------------------------------


def test_independent_transfers_overlap_their_fixed_costs(tmp_path):
    """Two loads of different tensors that wait for nothing (128 x 2048 bf16 each: 4 KiB per
    partition, eff 0.965): each starts F after 0 [S11's "semaphore-to-start latency"], and the
    DMA engines move their bytes one after the other: T = F + 2d (not 2F + 2d, which an engine
    occupancy of F per transfer would give), d = 524,288 / (368 GB/s x 0.965)."""
    p = write_spec(tmp_path, "two", 'a = { shape = [128, 2048], dtype = "bf16" }\n'
                   'b = { shape = [128, 2048], dtype = "bf16" }',
                   "load a[:, :]\nload b[:, :]\n")
    t, _ = predict(p)
    assert t.T == pytest.approx(F + 2 * dma_s(128 * 2048 * 2, 0.965), rel=1e-12)


def test_a_transpose_rate_above_the_dma_rate_is_refused():
    """dma.transpose is per mille of the DMA throughput: 1200 is refused naming the field."""
    from loopsim.base.errors import HardwareError

    text = open(HW.path, encoding="utf-8").read().replace("transpose = { value = 900,", "transpose = { value = 1200,", 1)
    with pytest.raises(HardwareError, match=r"dma\.transpose\.value.*1200.*at most 1000"):
        hardware.loads(text, "bad.toml")


# -- the same schedule, faster: figures of main's walker kept in tests/data (tests/timeline_golden.py)

_GOLDEN = None


def _golden() -> list:
    global _GOLDEN
    if _GOLDEN is None:
        from tests import timeline_golden as g
        _GOLDEN = json.loads(g.FILE.read_text())
    return _GOLDEN


def _same(got, want, where):
    if isinstance(want, dict):
        assert sorted(got) == sorted(want), where
        for k in want:
            _same(got[k], want[k], f"{where}.{k}")
    elif isinstance(want, float):
        assert got == pytest.approx(want, rel=1e-12, abs=1e-300), where
    else:
        assert got == want, where


@pytest.mark.parametrize("compiled", [False, True], ids=["python", "compiled"])
@pytest.mark.parametrize("name", spec.bundled_names() + ["random"])
def test_the_timeline_gives_main_walkers_schedule(name, compiled, monkeypatch):
    # every bundled spec on two sheets and two budgets (cut runs too), two buffers, LNC 2, and
    # seeded random sizes (ragged edges, 1-3 buffers): makespan, serial sum, busy per engine and
    # per queue, counts, gap causes, the critical path (length, per queue, CRC of its sequence)
    # as the walker of main at 8610324 computed them (tests/timeline_golden.py), to 1e-12; both
    # the Python walk and the compiled walk (numba; past ntl.COMPILED_FROM by default)
    from tests import timeline_golden as g
    from loopsim.targets.neuron import walk
    ran = []  # whether each run walked compiled (none may fall back to Python)
    real = walk.run_compiled
    monkeypatch.setattr(walk, "run_compiled", lambda run, geom: ran.append(real(run, geom)) or ran[-1])
    rows = [r for r in _golden() if (r["case"]["sets"] != {}) == (name == "random")
            and (name == "random" or r["case"]["name"] == name)]
    assert rows
    for r in rows:
        hw = hardware.load(r["case"]["sheet"])
        k = g.kernels(r["case"])[r["stage"]]
        _same(g.figures(k, hw, r["case"]["budget"], compiled), r["figures"],
              f"{r['case']} stage {r['stage']} (a bundled spec or the timeline's model changed on "
              "purpose? `python -m tests.timeline_golden --write`, and say so in the commit)")
    assert all(ran) and bool(ran) == compiled


def test_the_golden_cases_are_the_generators():
    # the file holds exactly the cases tests/timeline_golden.py lists (none silently dropped)
    from tests import timeline_golden as g
    want = [c for c in g.cases() if g.kernels(c)]
    got = [r["case"] for r in _golden() if r["stage"] == 0]
    assert got == want and len(got) >= len(spec.bundled_names()) * 5


@given(st.lists(st.tuples(st.lists(st.tuples(st.sampled_from("mnk"), st.integers(1, 512)), max_size=3),
                          st.integers(0, 300), st.integers(1, 600), st.integers(1, 2000)), min_size=1, max_size=4),
       st.fixed_dictionaries({v: st.integers(0, 3000) for v in "mnk"}))
def test_a_written_out_region_is_the_general_one(geom, env):
    # the region function written for a geometry (ntl._regioner) against the general loop
    # (ntl._region): starts, ends clipped at the tensor's edge, None past it
    geom = tuple((tuple(terms), off, ext, dim) for terms, off, ext, dim in geom)
    assert ntl._regioner(geom)(env) == ntl._region(geom, env)


def test_model_exact_walks_every_instruction(capsys):
    """`--model exact`: the timeline with no loop cut. The bundled matmul at 4096^3 has 25,088
    instructions, over BUDGET = 24,000: the default cuts loops and extrapolates (its summary says
    so); exact walks them all: the T of the timeline called with no budget limit."""
    k = pipeline.load("matmul", {"M": 4096, "N": 4096, "K": 4096}).stages[0].kernel
    assert ntl._size(k, {}) == 25_088 > ntl.BUDGET
    full = ntl.timeline(k, HW, dtype="bf16", W_P=0.0, Q_BW=0.0, Q=0, budget=ntl.EXACT)
    argv = ["entitle", "matmul", "-H", "trn2-core", "--set", "M=4096", "--set", "N=4096",
            "--set", "K=4096", "--json"]
    assert main(argv + ["--model", "exact"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["times"]["timeline"] == pytest.approx(full.T, rel=1e-12)
    assert d["limit"] == "timeline" and "extrapolated" not in d["limit_detail"]
    assert main(argv) == 0
    assert "extrapolated from" in json.loads(capsys.readouterr().out)["limit_detail"]
    assert main(["timeline", "matmul", "-H", "trn2-core", "--set", "M=4096", "--model", "exact",
                 "--json"]) == 0


@settings(max_examples=25)
@given(name=st.sampled_from(["matmul", "copy", "projection", "layernorm", "mlp_fused"]),
       budget=st.integers(50, 30_000))
def test_the_cut_runs_never_cost_more_than_the_whole_nest(name, budget):
    """Each cut doubles the corner runs: the plan takes one only where the 2^j runs' instructions
    stay within the whole nest's (a loop of 6 or 7 trips cut to 4 and 5 would cost more; a
    library MoE kernel of many short loops ran 164 corner runs for 10+ minutes)."""
    k = pipeline.load(name).stages[0].kernel
    cut = ntl._plan(k, budget)
    keep = {id(l): ntl.KEEP for l in cut}
    assert ntl._size(k, keep) * 2 ** len(cut) <= ntl._size(k, {})
