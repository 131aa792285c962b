"""Roofline figure content, checked through the returned Figure (never pixels), and file output."""

import math
import os

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from loopsim.targets import hardware
from loopsim.render import plot
from loopsim.frontends import spec
from loopsim.base.errors import InputError
from loopsim.model.pipeline import analyze_kernel as analyze

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


def test_point_sits_at_the_matmul_intensity_and_attainable_rate():
    rep = analyze(spec.load_kernel("matmul"), TRN2)
    fig = plot.roofline([rep], TRN2)
    # the tutorial's tiled loop order, M = N = K = 1024: r_A = N/TN = 2, r_B = M/TM = 8, C once
    W = 2 * 1024**3
    Q = 2 * (2 * 1024**2 + 8 * 1024**2 + 1024**2)
    x, y = _line(fig, "point:matmul")
    # an Analysis is drawn at its attainable rate W/T: on the roofline min(P, I*BW), or below it
    # where a lower ceiling (here the DMA engines) sets T
    assert x[0] == pytest.approx(W / Q) and y[0] == pytest.approx(W / rep.T)
    assert y[0] <= min(P_TRN2, W / Q * BW_TRN2) * (1 + 1e-12)


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
    assert texts == ["1: 60%"]  # key 1, 60% of its entitlement
    (row,) = [t.get_text() for t in fig.axes[1].texts if t.get_gid() == "key"]
    assert row.split()[:2] == ["1", "k"] and "(60%)" in row


def test_ceiling_lines_are_drawn_dashed_and_labelled_only_where_they_bind():
    half = plot.Ceiling("partition_fill", P_TRN2 / 2)
    only_b = plot.Ceiling("column_fill", P_TRN2 / 4, kernels=("b",))
    above = plot.Ceiling("issue_rate", P_TRN2 / 3, kernels=("c",))  # c's roofline is below it
    pts = [plot.Point("a", 300.0, P_TRN2), plot.Point("b", 2000.0, P_TRN2),
           plot.Point("c", 50.0, 50.0 * BW_TRN2)]
    fig = plot.roofline(pts, TRN2, ceilings=[half, only_b, above])
    lines = {l.get_gid(): l for l in fig.axes[0].lines}
    line = lines["ceiling:partition_fill"]
    assert line.get_linestyle() == "--" and set(line.get_ydata()) == {P_TRN2 / 2}
    # it starts where the memory roof reaches it, I = (P/2) / BW = 104.9 (a's I / 1.6 = 187.5 is
    # further right: it spans a and b, the kernels whose roofline min(P, I*BW) lies above it)
    assert list(line.get_xdata()) == pytest.approx([300.0 / 1.6, 2000.0 * 1.6])
    # column_fill holds for b only: drawn around b's intensity, not across the axes
    assert list(lines["ceiling:column_fill"].get_xdata()) == pytest.approx([2000 / 1.6, 2000 * 1.6])
    # issue_rate holds for c only, whose roofline (memory-bound, 18.75 TFLOP/s) is below it: not drawn
    assert "ceiling:issue_rate" not in lines
    labels = {t.get_gid() for t in fig.axes[0].texts}
    assert {"ceiling-label:partition_fill", "ceiling-label:column_fill"} <= labels


def _overlaps(a, b):
    return min(a.x1, b.x1) > max(a.x0, b.x0) and min(a.y1, b.y1) > max(a.y0, b.y0)


def _geometry(fig):
    """Check a roofline Figure's layout with the renderer's own text boxes: the figure keeps its
    fixed size, every text is inside the figure, labels inside the axes, no two texts overlap."""
    from matplotlib.text import Text

    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    w, h = fig.get_size_inches() * fig.dpi
    assert (round(w), round(h)) == (1800, 1050)  # plot.FIGSIZE at plot.DPI, whatever the points
    ax = fig.axes[0]
    frame = ax.get_window_extent(r)
    texts = [t for a in fig.axes for t in a.texts if t.get_visible() and t.get_text()]
    texts += [t for a in fig.axes for t in (a.title, a.xaxis.label, a.yaxis.label) if t.get_text()]
    texts += [t for a in fig.axes if a.get_legend() for t in a.get_legend().get_texts()]
    texts += [a.get_legend().get_title() for a in fig.axes if a.get_legend()]
    texts += [t.label1 for t in ax.yaxis.get_major_ticks() + ax.xaxis.get_major_ticks()
              if t.label1.get_visible() and ax.get_ylim()[0] <= t.get_loc() <= ax.get_ylim()[1] * 1.0001
              and t.label1.get_text()]
    boxes = []
    for t in texts:
        bb = Text.get_window_extent(t, r)  # the text alone, not a leader line
        assert bb.x0 >= 0 and bb.y0 >= 0 and bb.x1 <= w and bb.y1 <= h, (t.get_text(), bb)
        if t in ax.texts:
            assert frame.contains(bb.x0, bb.y0) and frame.contains(bb.x1, bb.y1), t.get_text()
        boxes.append((t.get_text(), bb))
    for i in range(len(boxes)):
        for j in range(i):
            assert not _overlaps(boxes[i][1], boxes[j][1]), (boxes[i][0], boxes[j][0])
    return texts


def _roofline_points(n, seed=0):
    rng = np.random.default_rng(seed)
    I = np.exp(rng.uniform(math.log(2), math.log(4000), n))
    return [plot.Point(f"tiling_{i} TM={2 ** (i % 8)} TN={i}", float(x), min(P_TRN2, float(x) * BW_TRN2))
            for i, x in enumerate(I)]


@pytest.mark.parametrize("n", [1, 8, 27, 100])
def test_roofline_layout_at_1_8_27_100_points(n):
    pts = _roofline_points(n)
    pts[-1] = plot.Point(pts[-1].label, pts[-1].I, pts[-1].rate, pts[-1].rate / 3, 1e-5, 1 / 3)
    if n > 1:
        pts.append(plot.Point("same as 0", pts[0].I, pts[0].rate))  # coincident: one label
    ceilings = [plot.Ceiling("column_fill", P_TRN2 / 8), plot.Ceiling("issue_rate", P_TRN2 / 2)]
    fig = plot.roofline(pts, TRN2, ceilings=ceilings)
    texts = _geometry(fig)
    marks = [t.get_text() for t in fig.axes[0].texts if str(t.get_gid()).startswith("label:")]
    keys = [t.get_text().split()[0] for t in fig.axes[1].texts if t.get_gid() == "key"]
    # every point has one row in the key table, keys 1..n in order of intensity
    assert keys == [str(k) for k in range(1, len(pts) + 1)]
    # every key appears on exactly one mark label ("3", "3,4" or "3–5")
    shown = []
    for m in marks:
        for part in m.split(","):
            a, _, b = part.partition("–")
            shown += range(int(a), int(b or a) + 1)
    assert sorted(shown) == list(range(1, len(pts) + 1))
    if n > 1:  # the two coincident points share one mark label
        gids = [str(t.get_gid()) for t in fig.axes[0].texts if str(t.get_gid()).startswith("label:")]
        assert [g for g in gids if "same as 0" in g and pts[0].label in g]
    assert len(texts) < 250


@settings(max_examples=4, deadline=None)
@given(st.lists(st.floats(20, 400), min_size=8, max_size=8))
def test_eight_points_anywhere_keep_the_layout(intensities):
    pts = [plot.Point(f"tiling_{i}", I, min(P_TRN2, I * BW_TRN2)) for i, I in enumerate(intensities)]
    _geometry(plot.roofline(pts, TRN2))


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
    from loopsim.cli.main import main

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
    from loopsim.cli.main import main

    # 163,840 bytes = 1,280 per partition: matmul's working tiles fit, copy's 128 x 2048 bf16
    # tile (4,096 bytes per partition) does not, so copy has no point; the summary says so
    out = tmp_path / "r.png"
    assert main(["plot", "matmul", "copy", "--hardware", "trn2-core", "--sbuf-bytes", "163840",
                 "-o", str(out)]) == 0
    msg = capsys.readouterr().out
    assert "1 point(s)" in msg and "copy" in msg and "cannot run" in msg


def _curve(Qs, compulsory, caps):
    from loopsim.analyses.capacity import CapacityCurve, CapacityRow

    rows = [CapacityRow(c, "lru", q, (("A", q / compulsory),), compulsory) for c, q in zip(caps, Qs)]
    return CapacityCurve("k", "trn2-core", 128, compulsory, caps[0], caps[-1], 29360128,
                         ("lru",), ("A",), tuple(rows))


def test_capacity_curve_steps_iec_units_and_a_visible_compulsory_q():
    from matplotlib.text import Text

    MiB = 1 << 20
    caps = [256 * 1024 * 2 ** i for i in range(6)]
    # a range within 8x: linear from 0, the 0.4 GB compulsory Q well above the axis' foot
    cv = _curve([1600 * MiB, 1600 * MiB, 1200 * MiB, 800 * MiB, 400 * MiB, 400 * MiB], 400 * MiB, caps)
    fig = plot.capacity_curve(cv)
    ax_q = fig.axes[0]
    (q,) = [l for l in ax_q.lines if l.get_gid() == "Q:lru"]
    assert q.get_drawstyle() == "steps-post"
    assert ax_q.get_yscale() == "linear" and ax_q.get_ylim()[0] == 0
    assert ax_q.get_ylim()[1] > 1600 * MiB
    fig.canvas.draw()
    lo, hi = ax_q.get_ylim()
    yt = [t.get_text() for t in ax_q.get_yticklabels() if t.get_text() and lo <= t.get_position()[1] <= hi]
    xt = [t.get_text() for t in fig.axes[1].get_xticklabels() if t.get_text()]
    assert yt == ["0 B", "512 MiB", "1 GiB", "1.5 GiB"] and all(t.endswith(("MiB", "GiB", "KiB", " B")) for t in yt + xt)
    assert "1 MiB" in xt and "256 KiB" in xt  # powers of 4 in bytes
    labels = [t.get_text() for t in ax_q.get_legend().get_texts()]
    assert "compulsory Q = 400 MiB" in labels and "trn2-core SBUF = 28 MiB" in labels
    # more than 8x: a log axis
    cv = _curve([6400 * MiB, 3200 * MiB, 800 * MiB, 200 * MiB, 100 * MiB, 100 * MiB], 100 * MiB, caps)
    assert plot.capacity_curve(cv).axes[0].get_yscale() == "log"
    assert plot.iec(29360128) == "28 MiB" and plot.iec(1536) == "1.5 KiB" and plot.iec(512) == "512 B"
