"""Roofline figure content, checked through the returned Figure (never pixels), and file output."""

import math
import os

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from loopsim import hardware, plot, spec
from loopsim.errors import InputError
from loopsim.report import analyze

TRN2 = hardware.load("trn2-core")
# trn2-core by hand: P = 128 x 128 PEs x 2 FLOPs x 2.4 GHz, BW = 3 TB/s shared by 8 cores
P_TRN2 = 128 * 128 * 2 * 2_400_000_000
BW_TRN2 = 3_000_000_000_000 // 8


def _line(fig, gid):
    (line,) = [l for l in fig.axes[0].lines if l.get_gid() == gid]
    return np.asarray(line.get_xdata(), float), np.asarray(line.get_ydata(), float)


def test_sheet_matches_hand_roofs():
    assert TRN2.P("bf16") == P_TRN2 and TRN2.bw == BW_TRN2


def test_memory_roof_has_slope_one_and_meets_compute_roof_at_the_ridge():
    fig = plot.roofline([plot.Point("k", 50.0, 50.0 * BW_TRN2)], TRN2)
    x, y = _line(fig, "memory-roof")
    slope = (math.log10(y[-1]) - math.log10(y[0])) / (math.log10(x[-1]) - math.log10(x[0]))
    assert slope == pytest.approx(1.0, rel=1e-12)
    assert y / x == pytest.approx(np.full(x.size, BW_TRN2), rel=1e-12)  # y = I * BW
    ridge = P_TRN2 / BW_TRN2  # 209.7152 FLOPs/byte
    rx, ry = _line(fig, "ridge")
    assert rx == pytest.approx([ridge, ridge]) and ry[1] == pytest.approx(P_TRN2)
    cx, cy = _line(fig, "compute-roof")
    assert cx[0] == pytest.approx(ridge) and set(cy) == {P_TRN2}  # flat at P from the ridge on
    assert x[-1] == pytest.approx(ridge)
    ax = fig.axes[0]
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    assert "FLOPs/byte" in ax.get_xlabel() and "FLOP/s" in ax.get_ylabel()
    assert "trn2-core" in ax.get_title()


def test_point_sits_at_the_matmul_intensity_and_entitled_rate():
    rep = analyze(spec.load_kernel("matmul"), TRN2)
    fig = plot.roofline([rep], TRN2)
    # the tutorial's tiled loop order, M = N = K = 1024: r_A = N/TN = 2, r_B = M/TM = 8, C once
    W = 2 * 1024**3
    Q = 2 * (2 * 1024**2 + 8 * 1024**2 + 1024**2)
    x, y = _line(fig, "point:matmul")
    assert x[0] == pytest.approx(W / Q) and y[0] == pytest.approx(min(P_TRN2, W / Q * BW_TRN2))


def test_measured_point_is_directly_below_its_entitlement_point():
    pt = plot.Point("k", 93.0, 93.0 * BW_TRN2, measured_rate=93.0 * BW_TRN2 * 0.6,
                    gap_s=1e-5, fraction=0.6)
    fig = plot.roofline([pt], TRN2)
    ex, ey = _line(fig, "point:k")
    mx, my = _line(fig, "measured:k")
    assert mx[0] == ex[0] and my[0] == pytest.approx(0.6 * ey[0])
    gx, _ = _line(fig, "gap:k")
    assert set(gx) == {ex[0]}
    texts = [t.get_text() for t in fig.axes[0].texts if str(t.get_gid()).startswith("measured-label")]
    assert texts and "60% of entitlement" in texts[0]


def test_ceiling_lines_are_drawn_dashed_and_labelled():
    c = plot.Ceiling("partition_fill", P_TRN2 / 2)
    fig = plot.roofline([plot.Point("k", 300.0, P_TRN2)], TRN2, ceilings=[c])
    (line,) = [l for l in fig.axes[0].lines if l.get_gid() == "ceiling:partition_fill"]
    assert line.get_linestyle() == "--" and set(line.get_ydata()) == {P_TRN2 / 2}
    # it starts where the memory roof reaches it: I = (P/2) / BW
    assert line.get_xdata()[0] == pytest.approx(P_TRN2 / 2 / BW_TRN2)


def _overlaps(a, b):
    return min(a.x1, b.x1) > max(a.x0, b.x0) and min(a.y1, b.y1) > max(a.y0, b.y0)


@settings(max_examples=8, deadline=None)
@given(st.lists(st.floats(20, 400), min_size=8, max_size=8))
def test_eight_labels_never_overlap(intensities):
    from matplotlib.text import Text

    pts = [plot.Point(f"tiling_{i}", I, min(P_TRN2, I * BW_TRN2)) for i, I in enumerate(intensities)]
    fig = plot.roofline(pts, TRN2)
    r = fig.canvas.get_renderer()
    boxes = [Text.get_window_extent(t, r) for t in fig.axes[0].texts
             if str(t.get_gid()).startswith("label:")]
    assert len(boxes) == 8
    for i in range(8):
        for j in range(i):
            assert not _overlaps(boxes[i], boxes[j])


def test_kernel_without_flops_is_named_not_drawn():
    rep = analyze(spec.load_kernel("copy"), TRN2)
    fig = plot.roofline([rep], TRN2)
    assert not [l for l in fig.axes[0].lines if str(l.get_gid()).startswith("point:")]
    assert any("copy" in t.get_text() for t in fig.axes[0].texts if t.get_gid() == "skipped")


@pytest.mark.parametrize("ext,magic", [("png", b"\x89PNG"), ("svg", b"<?xml"), ("pdf", b"%PDF")])
def test_save_writes_each_format(tmp_path, ext, magic):
    fig = plot.roofline([plot.Point("k", 100.0, 100.0 * BW_TRN2)], TRN2)
    out = tmp_path / f"r.{ext}"
    plot.save(fig, str(out))
    assert out.read_bytes()[:len(magic)] == magic and out.stat().st_size > 5000
    assert os.listdir(tmp_path) == [f"r.{ext}"]  # no temporary file left


@pytest.mark.parametrize("name", ["r.xyz", "r", "missing_dir/r.png"])
def test_save_refuses_bad_paths_and_leaves_nothing(tmp_path, name):
    fig = plot.roofline([plot.Point("k", 100.0, 100.0 * BW_TRN2)], TRN2)
    with pytest.raises(InputError, match="-o"):
        plot.save(fig, str(tmp_path / name))
    assert os.listdir(tmp_path) == []


def test_cli_plot_and_its_errors(tmp_path, capsys):
    from loopsim.cli import main

    out = tmp_path / "nki.svg"
    tut = sorted(str(p) for p in spec._bundled_dir().glob("nki_tutorial/*.toml"))
    assert main(["plot", *tut, "--hardware", "trn1-core", "-o", str(out)]) == 0
    assert out.stat().st_size > 5000
    assert main(["plot", "matmul", "--hardware", "trn2-core", "-o", str(tmp_path / "x.jpg")]) == 2
    assert "unsupported output format" in capsys.readouterr().err
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        if not os.access(ro, os.W_OK):  # (root can write anywhere)
            assert main(["plot", "matmul", "--hardware", "trn2-core", "-o", str(ro / "r.png")]) == 2
            assert "cannot write" in capsys.readouterr().err and os.listdir(ro) == []
    finally:
        ro.chmod(0o700)


def test_cli_plot_names_the_tilings_that_cannot_run(tmp_path, capsys):
    from loopsim.cli import main

    # 163,840 bytes = 1,280 per partition: matmul's working tiles fit, copy's 128 x 2048 bf16
    # tile (4,096 bytes per partition) does not, so copy has no point; the summary says so
    out = tmp_path / "r.png"
    assert main(["plot", "matmul", "copy", "--hardware", "trn2-core", "--sbuf-bytes", "163840",
                 "-o", str(out)]) == 0
    msg = capsys.readouterr().out
    assert "1 point(s)" in msg and "copy" in msg and "cannot run" in msg
