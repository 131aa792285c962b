"""The 2026 NKI surface the shim models (tests/nki_kernels/api_2026.py, kernels written for
loopsim): each call traced against a hand count of the bytes, FLOPs or engine element-ops it moves
or does, and unmodelled calls costed as ASSUMED work listed with their FILE:LINE."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from loopsim.base.errors import SpecError
from loopsim.cli.main import main
from loopsim.frontends.nki import access, dtypes
from loopsim.frontends.nki.errors import TraceError
from loopsim.frontends.nki.load import load_kernel, parse_arg
from loopsim.frontends.nki.record import Recorder
from loopsim.frontends.nki.shim import installed
from loopsim.frontends.nki.symbolic import LoopVar, Sym
from loopsim.model import pipeline
from loopsim.targets import hardware
from tests import nki_counts
from tests.nki_counts import bytes_of

HERE = Path(__file__).parent
API = HERE / "nki_kernels" / "api_2026.py"
TRN2 = hardware.load("trn2-core")


def line_of(text: str) -> int:
    return nki_counts.line_of(API, text)


def traced(func, args, **kw):
    return load_kernel(str(API), func, args=args, **kw)


# -- dtypes ------------------------------------------------------------------------------------


def test_dtypes_compare_and_print_as_nki_names():
    d = dtypes.all_dtypes()
    assert d["bfloat16"] == "bfloat16" and str(d["bfloat16"]) == "bfloat16"
    assert d["float8_e4m3fn_x4"] != d["float8_e5m2_x4"]
    assert d["float8_e4m3"] == dtypes.NkiDType("float8_e4m3")
    # packed MX: 4 fp8 values in 4 bytes, 4 fp4 values in 2 bytes
    assert (d["float8_e4m3fn_x4"].itemsize, d["float4_e2m1fn_x4"].itemsize) == (4, 2)
    assert {d["float8_e4m3fn_x4"]: 1}[dtypes.NkiDType("float8_e4m3fn_x4")] == 1  # hashable as str


def test_packed_mx_argument_keeps_its_nki_name_and_counts_four_bytes():
    assert parse_arg("w=128x512:float8_e4m3fn_x4") == ("w", ((128, 512), "float8_e4m3fn_x4"))
    assert parse_arg("w=128x512:bfloat16") == ("w", ((128, 512), "bf16"))
    b = bytes_of(traced("mx_dtypes", {"w": ((128, 512), "float8_e4m3fn_x4")}))
    # 128 x 512 packed elements x 4 bytes, read once and written once
    assert b["w"] == (262_144, 0) and b["out"] == (0, 262_144)


# -- access patterns, reshapes, broadcasts -------------------------------------------------------


def test_ap_access_pattern_blocks_count_each_byte_once():
    b = bytes_of(traced("ap_copy", {"x": ((256, 512), "bf16")}))
    # two [[512, 128], [1, 512]] blocks at offsets 0 and 128*512: 256 x 512 x 2 B each way
    assert b["x"] == (262_144, 0) and b["out"] == (0, 262_144)


def test_ap_pattern_that_is_not_a_box_is_one_line_naming_it():
    with installed(Recorder(str(API), "t")) as mods:
        rec = Recorder(str(API), "t")
        x = rec.hbm("x", (256, 512), "bf16")
        # every other column: no box; a DMA runs it as 256 DMAs of one column [128, 1] (the
        # pieces along its second entry); used otherwise it is refused in one line naming it
        split = x.ap(pattern=[[512, 128], [2, 256]])
        assert split.shape == (128, 256) and split.axis == 1 and len(split.parts) == 256
        assert [(a.const, n) for a, n, _ in split.parts[3].dims] == [(0, 128), (6, 1)]
        with pytest.raises(TraceError, match=r"\[2, 256\].*not a run along one axis"):
            split[0]
        with pytest.raises(TraceError, match="wraps into the next row"):
            x.ap(pattern=[[512, 128], [1, 512]], offset=64)
        rec.notes = []
        v = x.ap(pattern=[[512, 128], [1, 512]], vector_offset=object())  # rows chosen by data
        assert v.shape == (128, 512) and v.indirect[:2] == ("vector_offset", 0)
        assert x.ap(pattern=[[512, 128], [1, 512]], scalar_offset=3).indirect is None  # a known row
        assert mods["nki.isa.constants"].oob_mode.error != mods["nki.isa.constants"].oob_mode.skip
        one = x.ap(pattern=[[512, 1], [1, 1]], offset=3 * 512 + 7)  # a single element
        assert one.shape == () and [(a.const, n) for a, n, _ in one.dims] == [(3, 1), (7, 1)]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 6), min_size=1, max_size=4), st.data())
def test_decompose_returns_the_box_a_pattern_walks(shape, data):
    """Property: any box of a row-major tensor, written as an access pattern, decomposes back
    into that box."""
    sizes = [data.draw(st.integers(1, d)) for d in shape]
    starts = [data.draw(st.integers(0, d - n)) for d, n in zip(shape, sizes)]
    strides = access.row_major(shape)
    pattern = [[s, n] for s, n in zip(strides, sizes)]
    offset = sum(a * s for a, s in zip(starts, strides))
    dims, view, order = access.decompose(shape, pattern, offset, "t")
    assert order == sorted(order) and view == tuple(sizes)
    for (a, n, kept), want_a, want_n in zip(dims, starts, sizes):
        assert a.const == want_a and (n == want_n or (want_n == 1 and not kept))


def test_decompose_offset_with_a_loop_index():
    i = LoopVar("i", 2, "affine_range", 0)
    dims, _, _ = access.decompose((256, 512), [[512, 128], [1, 512]], Sym({i: 128 * 512}, 0), "t")
    assert str(dims[0][0]) == "128*i" and dims[0][1] == 128 and dims[1][1] == 512


def test_hbm_reshape_before_use_and_sbuf_reshape_of_the_tile():
    k = traced("reshape_store", {"x": ((128, 4, 256), "bf16")})
    assert [t.shape for t in k.tensors] == [(128, 1024), (128, 4, 256)]
    b = bytes_of(k)
    assert b["x"] == (262_144, 0) and b["out"] == (0, 262_144)  # 128 x 1024 x 2 B each way


def test_reshape_groups_and_binding_split_and_merge():
    assert access.reshape_groups((128, 1024), (128, 4, 256), "t") == [([0], [0]), ([1], [1, 2])]
    assert access.reshape_groups((128, 4, 256), (128, 1024), "t") == [([0], [0]), ([1, 2], [1])]
    from loopsim.frontends.nki.events import Binding, DimMap, Logical

    b = Binding(Logical("hbm", "x", "bf16", (128, 1024)),
                (DimMap(Sym({}, 0), 128, ((0, 1),)), DimMap(Sym({}, 0), 1024, ((1, 1),))))
    split = access.reshape_binding(b, (128, 1024), (128, 4, 256), "t")
    assert split.dims[1].axes == ((1, 256), (2, 1))  # axis 1 steps 256 elements of x's dim 1
    back = access.reshape_binding(split, (128, 4, 256), (128, 1024), "t")
    assert back.dims[1].axes == ((1, 1),)
    two = Binding(b.logical, (DimMap(Sym({}, 0), 128, ((1, 1),)), DimMap(Sym({}, 0), 4, ((2, 1),))))
    with pytest.raises(TraceError, match="mixes dimensions"):
        access.reshape_binding(two, (1, 128, 4), (1, 512), "t")
    # the reshaped view then holds the whole tile: the merged axis runs along no dimension
    held = access.collapsed_binding(two, (1, 128, 4), (1, 512))
    assert [dm.axes for dm in held.dims] == [(), ()] and [dm.size for dm in held.dims] == [128, 4]


def test_broadcast_column_is_read_once_and_the_add_counts_the_big_tile():
    k = traced("bias_broadcast", {"x": ((128, 512), "bf16"), "bias": ((128, 1), "bf16")})
    b = bytes_of(k)
    # x 128*512*2, bias 128*1*2 = 256, out 128*512*2
    assert b["Q"] == 131_072 + 256 + 131_072
    (op,) = [s for s, _ in k.statements() if hasattr(s, "kind")]
    assert (op.kind, [a.tensor for a in op.inputs]) == ("add", ["x", "bias"])


def test_strided_and_window_index_tiles():
    traced("strided_view", {"x": ((128, 512), "bf16")})  # the kernel asserts its (128, 256) view
    # overlapping rows straight from HBM: one DMA per window row offset (3 of 128 x 64 x 2 B)
    assert bytes_of(traced("hbm_window", {"x": ((130, 64), "bf16")}))["x"] == (3 * 16_384, 0)
    i_k = access.Index.axis_of(1, 3)
    win = access.Index.axis_of(0, 4) * 2 + i_k
    # a stride-2 run of 4 plus a window of 3: indices 0 .. 2*3 + 2 = 8, 9 of them
    assert (win.extent, win.simple, win.low.const) == (9, False, 0)


# -- configuration, versions, grid ----------------------------------------------------------------


def test_nkiobject_config_and_nc_version_choose_the_tile():
    k = traced("config_copy", {"x": ((256, 1024), "bf16")})
    loops = [n for n in k.body]
    # gen3 (Trainium2) -> tile_f 512: the j loop steps 512 elements, the i loop 128
    assert (loops[0].step, loops[0].body[0].step) == (128, 512)
    assert bytes_of(k)["Q"] == 2 * 256 * 1024 * 2


def test_nkiobject_wrong_call_names_class_and_line():
    with pytest.raises(SpecError) as e:
        traced("bad_config", {"x": ((256, 1024), "bf16")})
    msg = str(e.value)
    assert "\n" not in msg and "kernel bad_config:" in msg
    assert "CopyCfg(nl.NKIObject, defined at " in msg and "api_2026.py:14)" in msg


def test_num_programs_axes_keyword():
    rec = Recorder(str(API), "t")
    with installed(rec) as mods:
        rec.grid_var(0, 2)
        rec.grid_var(1, 3)
        nl = mods["nki.language"]
        assert (nl.num_programs(axes=0), nl.num_programs(axes=1), nl.num_programs(axes=(0, 1)),
                nl.num_programs()) == (2, 3, 6, 6)
        isa = mods["nki.isa"]
        assert isa.get_nc_version() == isa.nc_version.gen3 == 3 and isa.nc_version.gen4 > 3


# -- instructions ----------------------------------------------------------------------------------


def test_shared_constant_identity_is_an_hbm_input():
    b = bytes_of(traced("identity_matmul", {"x": ((128, 512), "bf16")}))
    # W = 2 * 128 (M) * 512 (N) * 128 (K); identity 128 x 128 x 2 B read once
    assert b["W"] == 2 * 128 * 512 * 128
    assert b["ident"] == (32_768, 0) and b["x"] == (131_072, 0) and b["out"] == (0, 131_072)


def test_loop_reduce_sums_k_blocks_in_sbuf():
    k = traced("loop_reduce_matmul", {"a": ((512, 128), "bf16"), "b": ((512, 512), "bf16")})
    b = bytes_of(k)
    # W = 2 M N K = 2 * 128 * 512 * 512; A and B read once; Z written once
    assert b["W"] == 67_108_864
    assert (b["a"], b["b"], b["z"]) == ((131_072, 0), (524_288, 0), (0, 131_072))
    assert "acc " in str(k.body) or any("Accumulate" in type(s).__name__ for s, _ in k.statements())


def test_tensor_reduce_into_a_column_and_tensor_scalar_reduce():
    k = traced("row_softmax", {"x": ((128, 2048), "bf16")})
    rep = pipeline.analyze_kernel(k, TRN2)
    assert rep.counts.Q == 2 * 128 * 2048 * 2
    ops = [s for s, _ in k.statements() if hasattr(s, "kind")]
    # max (tensor_reduce into row_max[:, i]) and exp (activation with that bias) of one tile
    assert [o.kind for o in ops] in (["softmax"], ["online_softmax"])
    assert [a.tensor for a in ops[0].inputs] == ["x"]


def test_tensor_reduce_shapes_follow_keepdims():
    rec = Recorder(str(API), "t")
    with installed(rec) as mods:
        nl, isa = mods["nki.language"], mods["nki.isa"]
        rec.running = True
        x = rec.hbm("x", (128, 4, 64), "bf16")
        t = nl.load(x)
        assert isa.tensor_reduce(nl.maximum, t, axis=2).shape == (128, 4)
        assert isa.tensor_reduce(nl.maximum, t, axis=(1, 2)).shape == (128,)
        assert isa.tensor_reduce(nl.maximum, t, axis=-1, keepdims=True).shape == (128, 4, 1)


def test_dma_transpose_reads_the_source_once():
    b = bytes_of(traced("transpose_load", {"x": ((256, 128), "bf16")}))
    assert b["x"] == (65_536, 0) and b["out"] == (0, 65_536)  # 256 x 128 x 2 B


def test_iota_and_affine_select_are_gpsimd_work():
    k = traced("masked_copy", {"x": ((256, 512), "bf16")})
    w = {x.call: x for x in k.work}
    # each: one element-op per element of a 128 x 512 tile, 2 row blocks
    assert w["nki.isa.iota"].element_ops == w["nki.isa.affine_select"].element_ops == 2 * 128 * 512
    assert {x.engine for x in k.work} == {"gpsimd"} and not any(x.assumed for x in k.work)
    # trn2-core documents no GpSimd width: the work is listed, not costed, and says so
    notes = pipeline.analyze_kernel(k, TRN2).ceilings.notes
    assert any(n.startswith("nki.isa.iota at ") and "not costed" in n for n in notes)
    assert bytes_of(k)["Q"] == 2 * 256 * 512 * 2


def test_sendrecv_and_all_gather_are_link_bytes():
    k = traced("exchange", {"x": ((128, 256), "bf16")}, grid=(2,))
    w = {x.call: x for x in k.work}
    tile = 128 * 256 * 2  # bytes of the tile each program sends
    # sendrecv: the tile once per program (2 programs); all_gather over C = 512/256 = 2 ranks:
    # (C - 1) x the tile per program
    assert w["nki.isa.sendrecv"].link_bytes * w["nki.isa.sendrecv"].executions == 2 * tile
    assert w["nki.collectives.all_gather"].link_bytes * 2 == 2 * tile
    rep = pipeline.analyze_kernel(k, TRN2, link_bw=100_000_000_000)
    assert dict(rep.verdict.times)["link"] == pytest.approx(4 * tile / 1e11)
    # the gathered (128, 512) tile is stored: its bytes written once per program (the grid's
    # two programs write the same tile: 2 x 128 x 512 x 2 B as written)
    assert bytes_of(k)["both"] == (0, 2 * 128 * 512 * 2)


# -- point 4: unmodelled calls are costed, listed as assumed ---------------------------------------


def test_unmodelled_calls_are_costed_as_assumed_vector_work():
    k = traced("unmodelled_calls", {"x": ((256, 512), "bf16")})
    w = {x.call: x for x in k.work}
    # dropout keeps its input's shape: 128 x 512 per block; max8 writes a 128 x 8 dst; 2 blocks
    assert w["nki.isa.dropout"].element_ops == 2 * 128 * 512
    assert w["nki.isa.max8"].element_ops == 2 * 128 * 8
    assert all(x.assumed and x.engine == "vector" for x in k.work)
    assert w["nki.isa.dropout"].where.endswith(f"api_2026.py:{line_of('nisa.dropout(')}")
    assert bytes_of(k)["Q"] == 2 * 256 * 512 * 2  # the data still flows: out holds x's tiles
    rep = pipeline.analyze_kernel(k, TRN2)
    assert dict(rep.verdict.times)["vector"] == pytest.approx(
        2 * 128 * (512 + 8) / TRN2.engine_roof("vector", "fp32"))


def test_assumed_work_is_listed_in_text_and_json(capsys):
    ref = f"{API}::unmodelled_calls"
    assert main(["entitle", ref, "--arg", "x=256x512", "-H", "trn2-core"]) == 0
    out = capsys.readouterr().out
    assert "assumed: nki.isa.dropout at " in out and f"api_2026.py:{line_of('nisa.dropout(')}" in out
    assert main(["entitle", ref, "--arg", "x=256x512", "-H", "trn2-core", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    text = json.dumps(d)
    assert '"assumed": [' in text and f"api_2026.py:{line_of('nisa.max8(')}" in text


def test_unmodelled_mx_matmul_is_tensor_engine_multiply_adds():
    args = {"st_x4": ((128, 128), "float8_e4m3fn_x4"), "mv_x4": ((128, 512), "float8_e4m3fn_x4"),
            "st_scale": ((16, 128), "uint8"), "mv_scale": ((16, 512), "uint8")}
    k = traced("mx_matmul", args)
    (w,) = k.work
    # 128 x 512 outputs, each 4 * 128 = 512 multiply-adds (K packed 4 per x4 element)
    assert (w.engine, w.assumed, w.element_ops) == ("tensor", True, 128 * 512 * 512)
    rep = pipeline.analyze_kernel(k, TRN2)
    assert dict(rep.verdict.times)["tensor_engine"] == pytest.approx(
        2 * 128 * 512 * 512 / TRN2.P("fp8"))
    b = bytes_of(k)
    # data: 4 bytes per x4 element; scales 1 byte; out 128 x 512 bf16
    assert b["Q"] == 128 * 128 * 4 + 128 * 512 * 4 + 16 * 128 + 16 * 512 + 128 * 512 * 2


def test_dma_compute_reads_its_hbm_source_and_size_one_dims_squeeze():
    k = traced("dma_combine", {"x": ((256, 512), "bf16"), "y": ((256, 512), "bf16")})
    b = bytes_of(k)
    # x and y each read once (256 x 512 x 2 B), out written once
    assert b["x"] == b["y"] == (262_144, 0) and b["out"] == (0, 262_144)
    (op,) = [s for s, _ in k.statements() if hasattr(s, "kind")]
    assert op.kind == "add" and sorted(a.tensor for a in op.inputs) == ["x", "y"]


def test_dma_compute_into_hbm_reads_each_source_and_writes_dst_once():
    k = traced("dma_combine_hbm", {"x": ((2, 256, 512), "bf16")})
    b = bytes_of(k)
    # both halves of x read once (2 x 256 x 512 x 2 B), out (256 x 512 x 2 B) written once
    assert b["x"] == (524_288, 0) and b["out"] == (0, 262_144)
    (op,) = [s for s, _ in k.statements() if hasattr(s, "kind")]
    assert op.kind == "add"


def test_register_trip_count_is_data_dependent():
    with pytest.raises(SpecError, match=r"api_2026.py:\d+: kernel register_loop: nl.dynamic_range"
                                        r"\(0, <register>, 1\): its stop is the register read at "
                                        r".*api_2026.py:\d+, a value known only at run time"):
        traced("register_loop", {"x": ((128, 512), "bf16"), "n_tiles": ((1, 1), "int32")})


def test_unmodelled_call_in_a_helper_module_names_the_helper_line():
    helper = HERE / "nki_kernels" / "api_helpers.py"
    line = lambda text: next(i for i, ln in enumerate(helper.read_text().splitlines(), 1) if text in ln)
    k = traced("helper_calls", {"x": ((128, 512), "bf16")})
    (w,) = k.work
    assert w.where.endswith(f"api_helpers.py:{line('nisa.max8(')}") and w.element_ops == 128 * 8
    with pytest.raises(SpecError) as e:
        traced("helper_calls", {"x": ((128, 512), "bf16")}, kwargs={"refuse": True})
    msg = str(e.value)
    assert "\n" not in msg and f"api_helpers.py:{line('nisa.nc_find_index8(')}: kernel helper_calls: " in msg
    assert "nki.isa.nc_find_index8 is not modelled" in msg and "pass dst=" in msg


def test_sbuf_access_pattern_allocators_static_cast_and_all_reduce():
    k = traced("misc_calls", {"x": ((128, 512), "bf16")})
    b = bytes_of(k)
    # two halves of 128 x 256 x 2 B read, the same written
    assert b["x"] == (131_072, 0) and b["out"] == (0, 131_072)
    (w,) = k.work
    # ring all-reduce over C = 4 ranks: 2 (C - 1) / C x 128 x 256 x 4 B (fp32) = 1.5 x 131,072
    # per half, 2 halves
    assert w.call == "nki.collectives.all_reduce" and w.link_bytes == 196_608
    assert w.executions == 2


def test_run_of_runs_scalar_offset_and_stride_zero_patterns():
    k = traced("ap_forms", {"x": ((256, 512), "bf16"), "bias": ((128, 1), "bf16")})
    b = bytes_of(k)
    # x read once (a [[512, 128], [128, 4], [1, 128]] pattern is the 128 x 512 row block), bias
    # 128 x 2 B once, out written once
    assert b["x"] == (262_144, 0) and b["bias"] == (256, 0) and b["out"] == (0, 262_144)
    (op,) = [s for s, _ in k.statements() if hasattr(s, "kind")]
    assert op.kind == "add" and [a.tensor for a in op.inputs] == ["x", "bias"]


def test_pe_transpose_identity_and_collective_permute():
    k = traced("pe_transpose", {"x": ((128, 64), "bf16")})
    b = bytes_of(k)
    # x 128 x 64 x 2 B in, its transpose out; the identity 128 x 128 x 2 B loaded once; no matmul
    assert b["W"] == 0 and b["x"] == (16_384, 0) and b["out"] == (0, 16_384)
    assert b["ident"] == (32_768, 0)
    (w,) = [x for x in k.work if x.engine == "link"]
    assert w.call == "nki.collectives.collective_permute_implicit" and w.link_bytes == 16_384


def test_flat_vector_dma_unit_dim_reshape_and_reinterpreting_pattern():
    k = traced("reshaping_dmas", {"vec": ((1024,), "bf16"), "col": ((1, 128), "bf16")})
    b = bytes_of(k)
    # vec: 1024 x 2 B read once, out the same written; col: 128 x 2 B read twice (two DMAs)
    assert b["vec"] == (2_048, 0) and b["out"] == (0, 2_048)
    assert b["col"] == (512, 0)
    assert [t.shape for t in k.tensors if t.name == "vec"] == [(128, 8)]


def test_shuffling_reshape_holds_the_whole_tile_and_says_so():
    from loopsim.frontends.nki.load import trace_kernel

    k, rec = trace_kernel(str(API), "shuffled_store", args={"x": ((128, 4, 64), "bf16")})
    b = bytes_of(k)
    # x 128 x 256 x 2 B read once, out the same written once
    assert b["x"] == (65_536, 0) and b["out"] == (0, 65_536)
    assert any("merges axes holding different dimensions of x" in n and "ASSUMED" in n
               for n in rec.notes)


def test_trace_notes_reach_the_report(capsys):
    ref = f"{API}::shuffled_store"
    assert main(["entitle", ref, "--arg", "x=128x4x64", "-H", "trn2-core", "--json"]) == 0
    text = capsys.readouterr().out
    assert "merges axes holding different dimensions of x" in json.dumps(json.loads(text))


def test_pattern_walking_an_axis_in_pieces_reads_the_box_once():
    k = traced("split_rows", {"x": ((512, 128), "bf16")})
    b = bytes_of(k)
    # the whole 512 x 128 x 2 B tensor, read once; the (128, 4, 128) tile stored once
    assert b["x"] == (131_072, 0) and b["out"] == (0, 131_072)
    dims, view, order = access.decompose((512, 128), [[128, 128], [16384, 4], [1, 128]], 0, "t")
    assert view == (128, 4, 128) and order == [(0, 1), (0, 128), (1, 1)]
    assert [(n, kept) for _, n, kept in dims] == [(512, True), (128, True)]
    with pytest.raises(access.NotABox):  # rows 0, 2, 4, ...: a stride, no box
        access.decompose((512, 128), [[256, 128], [1, 128]], 0, "t")


def test_vector_read_again_into_a_tile_of_its_size():
    b = bytes_of(traced("vector_twice", {"vec": ((1024,), "bf16")}))
    # 1024 x 2 B read twice (two DMAs), the (128, 8) tile stored once
    assert b["vec"] == (4_096, 0) and b["out"] == (0, 2_048)


@pytest.mark.parametrize("body,match", [
    ("x.ap(pattern=[[512, 0]])", r"non-positive count"),
    ("x.ap(pattern=5)", r"must be a list of \[stride, num\] pairs"),
    ("x.reshape((3, 5))", r"reshape of HBM tensor x \(65536 elements\) to \[3, 5\]"),
    ("nl.load(x).broadcast_to((128, 3))", r"only size-1 dimensions repeat"),
    ("nl.arange(0, 8, 0)", r"nl.arange step 0 must be a positive integer"),
    ("nisa.dma_transpose(dst=nl.ndarray((4, 4, 4), dtype=x.dtype, buffer=nl.sbuf), "
     "src=nl.ndarray((4, 4, 4), dtype=x.dtype, buffer=nl.sbuf))", r"3-D access .* is not modelled"),
])
def test_bad_api_use_is_one_line_with_the_kernel_line(tmp_path, body, match):
    f = tmp_path / "bad_api.py"
    f.write_text("import nki.isa as nisa\nimport nki.language as nl\n\n\n"
                 f"def k(x):\n    y = {body}\n    return x\n")
    with pytest.raises(SpecError) as e:
        load_kernel(str(f), "k", args={"x": ((128, 512), "bf16")})
    msg = str(e.value)
    assert "\n" not in msg and f"{f}:6: kernel k: " in msg
    assert __import__("re").search(match, msg), msg


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(2, 4), min_size=1, max_size=3), st.integers(1, 8), st.randoms())
def test_an_axis_walked_in_pieces_in_any_order_is_the_whole_axis(pieces, cols, rnd):
    """Property: split a row axis into pieces (mixed radix), walk them in any order: the pattern
    decomposes into the whole [rows, cols] box, each run stepping its piece's scale."""
    rows = 1
    runs = []
    for n in reversed(pieces):
        runs.append((rows * cols, n))  # stride in elements, count
        rows *= n
    rnd.shuffle(runs)
    pattern = [list(r) for r in runs] + [[1, cols]]
    dims, view, order = access.decompose((rows, cols), pattern, 0, "t")
    assert [(n, k) for _, n, k in dims][0] == (rows, True)
    if order and isinstance(order[0], tuple):  # walked in pieces (not merged into one run)
        assert sorted(sc for a, sc in order if a == 0) == sorted(s // cols for s, _ in runs)


def test_indirect_gather_counts_its_rows_bytes_assumed(capsys):
    k = traced("gather_rows", {"table": ((256, 256), "bf16"), "idx": ((256, 1), "int32")})
    b = bytes_of(k)
    # 2 blocks of 128 gathered rows of 256 x 2 B, each row a fresh read: 2 x 128 x 512 B of
    # table's rows, a tensor of their own (table_gathered); the index tiles 256 x 4 B; out once
    assert b["table_gathered"] == (131_072, 0) and b["idx"] == (1_024, 0)
    assert b["out"] == (0, 131_072) and "table" not in b
    assert any("vector_offset= reads 128 rows of table" in n and "ASSUMED" in n for n in k.notes)


def test_an_op_on_a_window_view_follows_the_views_steps():
    k = traced("window_scale", {"x": ((128, 512), "bf16")})
    b = bytes_of(k)
    # x 128 x 512 x 2 B read once; the (128, 256, 2) result (the same elements) written once
    assert b["x"] == (131_072, 0) and b["out"] == (0, 131_072)
    (op,) = [s for s, _ in k.statements() if hasattr(s, "kind")]
    assert op.kind == "exp" and [a.tensor for a in op.inputs] == ["x"]


def test_an_unmodelled_language_call_is_elementwise_assumed_work():
    k = traced("language_unknown", {"x": ((128, 512), "bf16"), "y": ((128, 512), "bf16")})
    (w,) = [x for x in k.work if x.assumed]
    # one element-op per output element: 128 x 512
    assert (w.call, w.engine, w.element_ops) == ("nki.language.where", "vector", 128 * 512)
    b = bytes_of(k)
    assert b["x"] == b["y"] == (131_072, 0) and b["out"] == (0, 131_072)


def test_op_output_with_an_extra_unit_axis_holds_its_input_column():
    # column_scale: x [128, 512] bf16 read once (128*512*2 = 131,072 B), each column scaled into a
    # [128, 1] tile (input t[0:128, j] has one axis fewer) and written to its column of out:
    # 131,072 B written; Q = 262,144 B
    b = bytes_of(traced("column_scale", {"x": ((128, 512), "bf16")}))
    assert b["Q"] == 262_144
    assert b["x"] == (131_072, 0) and b["out"] == (0, 131_072)


def test_stride_zero_pattern_broadcasts_into_an_output_of_its_rank():
    # repeated_columns: x [128, 64] bf16 read once (128*64*2 = 16,384 B); out [128, 64, 4]
    # written once (128*64*4*2 = 65,536 B); Q = 81,920 B
    b = bytes_of(traced("repeated_columns", {"x": ((128, 64), "bf16")}))
    assert b["Q"] == 16_384 + 65_536 == 81_920
    assert b["x"] == (16_384, 0) and b["out"] == (0, 65_536)


def test_tile_view_reinterprets_its_bytes():
    # viewed_copies: x [128, 512] bf16 read once (131,072 B); out16 [128, 512] fp16 and out32
    # [128, 256] int32 written once each (131,072 B each): Q = 393,216 B
    b = bytes_of(traced("viewed_copies", {"x": ((128, 512), "bf16")}))
    assert b["Q"] == 3 * 131_072 == 393_216
    assert b["x"] == (131_072, 0) and b["out16"] == (0, 131_072) and b["out32"] == (0, 131_072)


def test_store_through_a_pattern_walking_rows_in_pieces():
    # rows_in_pieces: x [512, 64] bf16 read once (65,536 B) and out written once (65,536 B)
    # through the same [[64, 128], [8192, 4], [1, 64]] pattern: Q = 131,072 B
    b = bytes_of(traced("rows_in_pieces", {"x": ((512, 64), "bf16")}))
    assert b["Q"] == 2 * 512 * 64 * 2 == 131_072
    assert b["x"] == (65_536, 0) and b["out"] == (0, 65_536)
