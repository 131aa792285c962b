"""DMA transfers and the DMA ceiling against hand counts of the bundled specs."""

import json

import pytest

from loopsim.base.errors import HardwareError

from loopsim.targets.neuron import dma
from loopsim.targets import hardware
from loopsim.model import pipeline
from loopsim.frontends import spec
from loopsim.targets.hardware import names

GB = 10**9


def test_matmul_transfers_by_hand():
    # matmul: m, n, k loops (1024/128, 1024/512, 1024/128 trips); A[k, m] and B[k, n] loaded in
    # every iteration, C[m, n] stored once per (m, n)
    r = dma.report(spec.load_kernel("matmul"), hardware.load("trn2-core"))
    iters = (1024 // 128) * (1024 // 512) * (1024 // 128)
    by = {s.text: s for s in r.statements}
    a, b, c = by["load A[k, m]"], by["load B[k, n]"], by["store C[m, n]"]
    assert (a.transfers, b.transfers, c.transfers) == (iters, iters, 8 * 2)
    assert a.bytes == iters * 128 * 128 * 2 and a.partition_bytes == ((128 * 2, iters),)
    assert b.bytes == iters * 128 * 512 * 2 and b.partition_bytes == ((512 * 2, iters),)
    assert c.bytes == 16 * 128 * 512 * 2 and c.partition_bytes == ((512 * 2, 16),)
    assert r.transfers == 2 * iters + 16
    assert r.bytes == a.bytes + b.bytes + c.bytes
    # every transfer is below 2 KiB per partition: A tiles in the < 2 KiB band too
    assert r.small_share == 1.0
    assert r.T == pytest.approx(r.bytes / (368 * GB))  # trn2: 23 B/ns x 16 engines [S10]


def test_ragged_tiles_have_their_real_size():
    # M = 1000: the last m tile is 1000 - 7*128 = 104 columns of A (free axis: 208 B/partition)
    r = dma.report(spec.load_kernel("matmul", {"M": 1000}), hardware.load("trn2-core"))
    a = next(s for s in r.statements if s.text == "load A[k, m]")
    assert dict(a.partition_bytes) == {256: 7 * 2 * 8, 208: 1 * 2 * 8}
    assert a.bytes == 2 * 1024 * 1000 * 2  # A read once per n (2 trips): K x M bf16
    c = next(s for s in r.statements if s.text == "store C[m, n]")
    assert c.bytes == 1000 * 1024 * 2  # rows of C on partitions: 104 rows, same 1024 B each
    assert dict(c.partition_bytes) == {1024: 16}


def test_whole_dimension_load_on_more_rows_than_partitions():
    # matmul_hoisted: load A[:, m] is K=1024 rows (8 partition passes) x 128 columns: each
    # partition receives 8 * 128 * 2 = 2048 bytes; B[:, n] 8 * 512 * 2 = 8192 bytes
    r = dma.report(spec.load_kernel("matmul_hoisted"), hardware.load("trn2-core"))
    by = {s.text: s for s in r.statements}
    assert by["load A[:, m]"].partition_bytes == ((2048, 8),)
    assert by["load B[:, n]"].partition_bytes == ((8192, 16),)
    bands = {n: (t, b) for n, _, t, b in r.band()}
    assert bands["2KiB-4KiB"] == (8, 8 * 1024 * 128 * 2)
    assert bands[">=4KiB"] == (16, 16 * 1024 * 512 * 2)
    assert sum(b for _, b in bands.values()) == r.bytes


def test_copy_is_four_kib_per_partition():
    r = dma.report(spec.load_kernel("copy"), hardware.load("trn1-core"))
    assert r.transfers == 2 * (4096 // 128) * (4096 // 2048)
    assert r.partition_bytes == ((2048 * 2, r.transfers, 2 * 4096 * 4096 * 2),)
    assert r.small_bytes == 0
    assert r.estimate_s == pytest.approx(r.T / 0.965)  # the [S10] figure's 4 KiB bar
    assert r.T == pytest.approx(r.bytes / (272 * GB))  # trn1: 17 B/ns x 16 [S10]


@pytest.mark.parametrize("name", ["copy", "matmul", "matmul_blocked", "matmul_kouter",
                                  "matmul_small_tiles", "projection"])
def test_dma_bytes_are_the_as_written_q(name):
    # independent count: the simulator's as-written Q (every executed load/store crosses; the
    # partial sums matmul_kouter reads back included)
    k, hw = spec.load_kernel(name), hardware.load("trn2-core")
    assert dma.report(k, hw).bytes == pipeline.analyze_kernel(k, hw).entitlement.Q


def test_kouter_reads_partial_sums_back():
    # k outermost, C[m, n] stored in every k iteration: from the second k on, each of the
    # 8 x 2 C tiles is read back once before it accumulates again
    r = dma.report(spec.load_kernel("matmul_kouter"), hardware.load("trn2-core"))
    back = next(s for s in r.statements if s.text.startswith("partial-sum"))
    k = spec.load_kernel("matmul_kouter")
    p = dict(k.params)
    tiles = (p["M"] // p["TM"]) * (p["N"] // p["TN"])
    assert back.transfers == (p["K"] // p["TK"] - 1) * tiles
    assert back.bytes == back.transfers * p["TM"] * p["TN"] * 2


def test_split_kernel_takes_the_busiest_core(split_projection):
    k = spec.load_kernel(split_projection)
    hw = hardware.load("trn2-lnc2")
    r = dma.report(k, hw)
    q = pipeline.analyze_kernel(k, hw).entitlement.Q
    assert r.bytes == q and r.cores == 2
    assert r.busiest_core_bytes == q // 2  # the token split is symmetric (2048 tokens, 16 tiles)
    assert r.T == pytest.approx((q // 2) / (368 * GB))  # one core's DMA engines


@pytest.mark.parametrize("name", [n for n in names() if hardware.load(n).family == "neuron"])
def test_every_sheet_has_a_sourced_dma_bandwidth(name):
    hw = hardware.load(name)
    core = hw.value("dma.core_bw")
    assert hw.dma_bw == core.value * hw.physical_cores == hw.value("dma.bw").value
    if not hw.illustrative:
        assert core.source.kind == "doc" and core.alternatives  # disagreeing sources kept


@pytest.mark.parametrize("name,per_core", [("trn1-core", 272), ("inf2-core", 272), ("trn2-core", 368),
                                           ("trn2-lnc2", 368), ("trn2-device", 368), ("trn3-core", 528)])
def test_dma_ceiling_is_the_per_core_table(name, per_core):
    # [S10]/[S11] "theoretical peak DMA bandwidth" per NeuronCore: 17 / 23 / 33 B/ns x 16 engines
    hw = hardware.load(name)
    assert hw.dma_bw == per_core * GB * hw.physical_cores
    # below the HBM share on every real sheet (the reason it is a ceiling of its own)
    assert hw.dma_bw < hw.bw


def test_relative_throughput_reads_the_sheets_curve():
    # the bundled sheets carry the [S10] figure's bar heights as [dma] throughput, in permille
    curve = hardware.load("trn2-core").dma_curve
    assert dma.relative_throughput(2048, curve) == pytest.approx(0.815)
    assert dma.relative_throughput(1 << 20, curve) == 1.0
    assert dma.relative_throughput(16, curve) == pytest.approx(0.016 / 2)
    # halfway between 1 KiB and 2 KiB in log2: halfway between the two bar heights
    assert dma.relative_throughput(2 ** 10.5, curve) == pytest.approx((0.423 + 0.815) / 2)


def test_the_curve_is_sourced_sheet_data(tmp_path):
    hw = hardware.load("trn1-core")
    v = hw.value("dma.throughput")
    assert dict(hw.dma_curve)[4096] == 0.965 and "4096 B 96.5%" in v.value
    assert v.source.kind == "doc" and v.source.doc == "S10"
    assert "[S10]" in hw.dma_curve_source
    text = (hardware._bundled_dir() / "trn1-core.toml").read_text(encoding="utf-8")
    # without the curve there is no estimate (the ceiling itself does not use it)
    start = text.index("throughput = {")
    bare = text[:start] + text[text.index("\n", start) + 1:]
    p = tmp_path / "bare.toml"
    p.write_text(bare, encoding="utf-8")
    r = dma.report(spec.load_kernel("copy"), hardware.load(str(p)))
    assert r.estimate_s is None and r.T == dma.report(spec.load_kernel("copy"), hw).T
    # a curve that does not end at the peak is refused, naming the point
    p.write_text(text.replace("[32768, 1000]", "[32768, 990]"), encoding="utf-8")
    with pytest.raises(HardwareError, match=r"dma\.throughput\.permille\[10\]\[1\]=990 must be 1000"):
        hardware.load(str(p))


def test_as_dict_round_numbers():
    r = dma.report(spec.load_kernel("matmul"), hardware.load("trn2-core"))
    d = r.as_dict()
    assert d["T_dma"] == r.T and d["transfers"] == 272 and d["small_share"] == 1.0
    assert sum(b["bytes"] for b in d["bands"]) == d["bytes"]


# --- the DMA ceiling in the verdict (loopsim.model.pipeline) ----------------------------------------


def test_verdict_carries_the_dma_ceiling():
    from loopsim.model import pipeline

    hw = hardware.load("trn1-core")  # DMA 272 GB/s < HBM share 410 GB/s: the DMA binds
    a = pipeline.analyze(pipeline.load("copy"), hw, model="roofline")
    q = 2 * 4096 * 4096 * 2
    assert a.times["dma"] == pytest.approx(q / (272 * GB)) and a.times["memory"] == pytest.approx(q / hw.bw)
    assert a.limit == "dma" and a.T == a.times["dma"]
    assert "128 transfers" in a.verdict.detail
    # lru counts no transfers as written: the ceiling is Q over the DMA bandwidth
    lru = pipeline.analyze(pipeline.load("matmul"), hw, policy="lru")
    assert lru.times["dma"] == pytest.approx(lru.Q / (272 * GB))
    # measured roofs already are the memory side as achieved: no DMA ceiling on top
    cal = hardware.loads(_calibrated("trn1-core"), "cal.toml")
    m = pipeline.analyze(pipeline.load("copy"), cal.with_roofs("measured"), model="roofline")
    assert "dma" not in m.times and m.limit == "memory"


def _calibrated(name: str) -> str:
    from loopsim.analyses import calibrate

    hw = hardware.load(name)
    fit = calibrate.fit([calibrate.Measurement("copy", 0, 2 * 4096 * 4096 * 2, "bf16", 300e-6)], hw)
    text, origin = calibrate.base_text(hw)
    return calibrate.sheet_text(fit, text, origin, "cal")


def test_dma_command(capsys, split_projection):
    from loopsim.cli.main import main

    assert main(["dma", "matmul", "-H", "trn2-core", "--json"]) == 0
    (k,) = json.loads(capsys.readouterr().out)["kernels"]
    assert (k["transfers"], k["bytes"]) == (272, 23068672)
    assert main(["dma", "matmul_hoisted", "-H", "trn2-core"]) == 0
    out = capsys.readouterr().out
    assert "load A[:, m]" in out and "8 x 2,048 B" in out and "16 x 8,192 B" in out
    assert main(["dma", split_projection, "-H", "trn2-lnc2"]) == 0
    out = capsys.readouterr().out
    assert "busiest core's" in out and "one core's DMA bandwidth 368 GB/s" in out
    assert main(["dma", "nope", "-H", "trn2-core"]) == 2


def test_byte_sums_stay_exact_past_int64():
    import numpy as np

    a = np.array([2**40, 3], dtype=np.int64)
    w = np.array([2**30, 5], dtype=np.int64)
    assert dma._dot(a, w) == 2**70 + 15  # Python ints where int64 would wrap
    assert dma._dot(a[1:], w[1:]) == 15 and dma._dot(a[:0], w[:0]) == 0


# -- a buffer filled by a loop of transfers (``load A[:, m] by TILE_K``) ---------------------------


def test_hoist_load_is_one_transfer_per_tile_the_tutorial_copies():
    """nki_matmul_hoist_load_ fills its lhsT column and rhs row with `for k: dma_copy(tile)`: at
    M=4096, K=1024, N=2048 (bf16) that is 32 m x 8 k lhsT tiles of 128 x 128 (256 B per partition),
    32 m x 4 n x 8 k rhs tiles of 128 x 512 (1 KiB) and 32 x 4 result stores of 128 x 512 (1 KiB):
    256 + 1024 + 128 = 1408 transfers, every byte below 2 KiB per partition. Q is unchanged."""
    k = spec.load_kernel(str(spec.locate("nki_tutorial/2_hoist_load")))
    r = dma.report(k, hardware.load("trn1-core"))
    assert r.transfers == 256 + 1024 + 128
    assert {s.text: s.partition_bytes for s in r.statements} == {
        "load lhsT[:, m] by 128": ((256, 256),), "load rhs[:, n] by 128": ((1024, 1024),),
        "store result[m, n]": ((1024, 128),)}
    assert r.small_share == 1.0
    assert r.bytes == 1024 * 4096 * 2 + 32 * 1024 * 2048 * 2 + 4096 * 2048 * 2


def test_fully_optimized_transfer_sizes_by_hand():
    """nki_matmul_fully_optimized_ at its defaults: per (n-block, k-block) 8 rhs transfers of
    128 x 1024 (2 KiB per partition); per (n, k, m-block) 8 lhsT transfers of 128 x 2048 (4 KiB);
    per (n-block, m-tile) one result store of 128 x 1024 (2 KiB): 16 + 32 + 64 = 112."""
    k = spec.load_kernel(str(spec.locate("nki_tutorial/4_fully_optimized")))
    r = dma.report(k, hardware.load("trn1-core"))
    assert r.partition_bytes == ((2048, 80, 80 * 128 * 2048), (4096, 32, 32 * 128 * 4096))


def test_chunks_on_both_axes_and_a_ragged_rest(tmp_path):
    """`load X[:, :] by 100, 48` of a 250 x 100 fp32 tensor: rows 100, 100, 50 by columns 48, 48,
    4 -> 9 transfers; per partition (128 partitions) 48*4 = 192 B or 4*4 = 16 B."""
    p = tmp_path / "c.toml"
    p.write_text('[kernel]\nname = "c"\n[tensors]\nX = { shape = [250, 100], dtype = "fp32" }\n'
                 'Y = { shape = [250, 100], dtype = "fp32", output = true }\n'
                 "[nest]\nbody = '''\nload X[:, :] by 100, 48\nstore Y[:, :]\n'''\n")
    r = dma.report(spec.load_kernel(str(p)), hardware.load("trn2-core"))
    ld = r.statements[0]
    assert ld.transfers == 9 and ld.bytes == 250 * 100 * 4
    assert ld.partition_bytes == ((16, 3), (192, 6))


def test_a_flat_machine_has_no_dma_ceiling(capsys):
    # toy is flat (P, BW, one memory): the verdict's times are W/P and Q/BW only
    import json

    from loopsim.cli.main import main

    assert main(["entitle", "matmul", "-H", "toy", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert set(d["times"]) == {"compute", "memory"}


@pytest.mark.parametrize("by,msg", [
    ("0", "by 0: extents per transfer must be > 0"),
    ("-4", "by -4: extents per transfer must be > 0"),
    ("ZZ", "by: 'ZZ': unknown name ZZ"),
    ("1, 2, 3", "give one extent (rows of the partition axis) or one per axis (2), not 3"),
])
def test_bad_transfer_extents_are_one_line_naming_file_and_line(tmp_path, capsys, by, msg):
    from loopsim.cli.main import main

    text = spec.locate("nki_tutorial/2_hoist_load").read_text(encoding="utf-8")
    p = tmp_path / "bad.toml"
    p.write_text(text.replace("load lhsT[:, m] by TILE_K", f"load lhsT[:, m] by {by}"), encoding="utf-8")
    assert main(["dma", str(p), "-H", "trn2-core"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "bad.toml: line 26:" in err and msg in err, err
