"""Capacity curve: its ends (working tiles, compulsory Q), LRU one-pass vs replay, CLI."""

import json
import os

import pytest

from loopsim.analyses import capacity
from loopsim.targets import hardware
from loopsim.frontends import spec
from loopsim.sim import trace
from loopsim.cli.main import main

TRN2 = hardware.load("trn2-core")


def test_curve_runs_from_working_tiles_to_compulsory_q():
    k = spec.load_kernel("matmul")
    cv = capacity.curve(k, TRN2, samples=8)
    # one instruction's tiles per partition: A tile 128 x 128 (K on partitions) = 128 * 2 bytes,
    # B tile 128 x 512 = 512 * 2 bytes; over 128 partitions
    assert cv.min_capacity_bytes == (128 * 2 + 512 * 2) * 128
    assert cv.compulsory_Q == 3 * 1024 * 1024 * 2
    for p in ("lru", "opt"):
        rows = [r for r in cv.rows if r.policy == p]
        assert rows[0].capacity_bytes == cv.min_capacity_bytes
        # at the working set alone nothing is reused across instructions: the as-written Q
        assert rows[0].Q == 2 * (2 * 1024**2 + 8 * 1024**2 + 1024**2)
        assert rows[-1].Q == cv.compulsory_Q and dict(rows[-1].r) == {"A": 1.0, "B": 1.0}
        assert all(r.Q >= cv.compulsory_Q for r in rows)
    assert cv.sheet_capacity_bytes == TRN2.sbuf_bytes


def test_lru_one_pass_equals_replay_at_every_capacity():
    k = spec.load_kernel("matmul_kouter")
    tr = trace.build(k)
    caps = [1280, 2048, 4096, 8192, 16384, 40000]
    one = capacity.points(k, "lru", caps, TRN2, tr)
    rep = capacity.sweep_policy(k, "lru", caps, TRN2, tr)
    assert [q for q, _ in one] == [c.Q for c in rep]
    assert [reads for _, reads in one] == [{t.name: t.read_bytes for t in c.tensors} for c in rep]


def test_cli_capacity(tmp_path, capsys):
    out = tmp_path / "cap.pdf"
    assert main(["capacity", "matmul", "--hardware", "trn2-core", "--samples", "6", "-o", str(out),
                 "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert out.stat().st_size > 5000
    assert d["reaches_compulsory_bytes"]["opt"] <= d["reaches_compulsory_bytes"]["lru"]
    assert main(["capacity", "matmul", "--hardware", "trn2-core", "-o", str(tmp_path / "c.gif")]) == 2
    assert "unsupported output format" in capsys.readouterr().err
    assert os.listdir(tmp_path) == ["cap.pdf"]


def test_program_specs_are_refused_by_name(capsys):
    assert main(["capacity", "mlp_fused", "--hardware", "trn2-core"]) == 2
    err = capsys.readouterr().err
    assert "a program of ops" in err and "nest.body: missing" not in err


def test_split_nest_counts_each_core_with_its_own_sbuf(split_projection):
    # projection with [lnc] split = "b" (B = 256, D = F = 1024, bf16) on trn2-lnc2, SPMD: each core
    # loads its half of x, all of W (no B dimension: the load sits outside the b loop) and writes
    # its half of y, so no capacity brings Q below |x| + 2|W| + |y|; one core running everything
    # would reach x + W + y.
    x, w, y = 256 * 1024 * 2, 1024 * 1024 * 2, 256 * 1024 * 2
    k = spec.load_kernel(split_projection, {"B": 256, "D": 1024, "F": 1024})
    cv = capacity.curve(k, hardware.load("trn2-lnc2"), samples=4)
    assert cv.compulsory_Q == x + w + y
    for pol in ("lru", "opt"):
        rows = [r for r in cv.rows if r.policy == pol]
        assert min(r.Q for r in rows) == rows[-1].Q == x + 2 * w + y
        assert cv.reaches_compulsory(pol) is None


def test_progress_counts_every_point_of_the_curve():
    # the command's progress bar is told how many points there are, then ticked once per point
    # (the LRU curve is one stack-distance pass: its ticks come together)
    from loopsim.analyses import capacity
    from loopsim.targets import hardware
    from loopsim.frontends import spec

    seen = {"total": None, "ticks": 0}

    def progress(total):
        seen["total"] = total

        def tick(n=1, note=None):
            seen["ticks"] += n
        return tick

    cv = capacity.curve(spec.load_kernel("matmul"), hardware.load("trn2-core"), samples=5,
                        progress=progress)
    assert seen["ticks"] == seen["total"] == 2 * len({c for c in capacity._samples(
        cv.min_capacity_bytes // 128, cv.footprint_bytes // 128, 5, cv.sheet_capacity_bytes // 128)})
