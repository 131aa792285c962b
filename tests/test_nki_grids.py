"""The late-2026 NKI language surface (tests/nki_kernels/grids_2026.py, kernels written for
loopsim): tile grids, block grids and stream buffers traced with the bytes a hand count of the
source gives, a stream pool's slot count reaching the timeline's buffer rotation (makespans by
hand, one slot vs two), nl.fori_loop / nl.if_else as loops and branches, nl.while_loop refused in
one line, and @nki.jit(compile_config=...) accepted with its note.

Timeline constants by hand (trn2-core sheet, as tests/test_timeline.py): DMA fixed cost
F = 1300 ns [S11]; 16 DMA engines sharing 368 GB/s; a transfer of 8 KiB per partition runs at
0.983 of it (the [S10] efficiency figure)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from loopsim.base.errors import SpecError
from loopsim.cli.main import main
from loopsim.count.counts import live_buffers
from loopsim.frontends.nki import grids
from loopsim.frontends.nki.errors import TraceError
from loopsim.frontends.nki.load import load_kernel
from loopsim.frontends.nki.views import DS
from loopsim.ir.ops import OpStatement
from loopsim.model import pipeline
from loopsim.targets import hardware
from tests import nki_counts
from tests.nki_counts import bytes_of
from loopsim.targets.neuron import timeline as ntl

HERE = Path(__file__).parent
K = HERE / "nki_kernels" / "grids_2026.py"
TRN2 = hardware.load("trn2-core")
F = 1300e-9
DMA = 368e9


def line_of(text: str) -> int:
    return nki_counts.line_of(K, text)


def traced(func, args, **kw):
    return load_kernel(str(K), func, args=args, **kw)


def op_kinds(k) -> list:
    return [s.kind for s, _ in k.statements() if isinstance(s, OpStatement)]


# -- grid geometry against numpy slicing ---------------------------------------------------------


class _Array:
    """A stand-in tensor: indexing with ints and nl.ds gives the numpy view (the reference)."""

    def __init__(self, a):
        self.a, self.shape, self.dtype = a, a.shape, "int64"

    def __getitem__(self, key):
        return self.a[tuple(slice(k.start, k.start + k.size) if isinstance(k, DS) else k
                            for k in key)]


@settings(max_examples=20, deadline=None)
@given(st.integers(1, 3), st.integers(1, 300), st.integers(1, 300), st.integers(1, 130),
       st.integers(1, 130), st.integers(1, 3), st.integers(1, 3))
def test_tiles_and_blocks_cover_each_element_once(lead, rows, cols, tr, tc, br, bc):
    """Property: the tiles of nl.tiles (and the tiles of every block of nl.blocks) of a
    [lead, rows, cols] tensor name each element exactly once, partial last tiles clamped; each
    selection's element_shape is the shape of the numpy slice it names."""
    a = np.arange(lead * rows * cols).reshape(lead, rows, cols)
    seen = np.zeros(a.size, dtype=int)
    g = grids.grid(_Array(a), (tr, tc))
    assert g.shape == (lead, -(-rows // tr), -(-cols // tc))
    for s in range(g.shape[0]):
        for i in range(g.shape[1]):
            for j in range(g.shape[2]):
                t = g[s, i, j]
                assert t.element_shape == t.data.shape
                seen[t.data.ravel()] += 1
    assert (seen == 1).all()
    seen[:] = 0
    b = grids.grid(_Array(a), (tr, tc), (br, bc))
    assert b.shape == (lead, -(-rows // (tr * br)), -(-cols // (tc * bc)))
    for s in range(b.shape[0]):
        for i in range(b.shape[1]):
            for j in range(b.shape[2]):
                inner = grids.grid(b[s, i, j], b.tile_shape)  # the block's own tiles
                assert inner.shape[0] <= br and inner.shape[1] <= bc
                for p in range(inner.shape[0]):
                    for q in range(inner.shape[1]):
                        seen[inner[p, q].data.ravel()] += 1
    assert (seen == 1).all()


def test_grid_slices_keep_coordinates_and_bad_indices_are_refused():
    g = grids.grid(_Array(np.zeros((512, 1024))), (128, 256))
    row = g[1]  # one tile row: its column coordinates remain
    assert row.shape == (4,) and row.element_shape == (128, 1024)
    part = g[1:3, 2:]
    assert part.shape == (2, 2) and part.element_shape == (256, 512)
    with pytest.raises(TraceError, match=r"grid index 4 out of range for 4 coordinates"):
        g[0, 4]
    with pytest.raises(TraceError, match=r"tile_shape \(128,\) must be at least two"):
        grids.grid(_Array(np.zeros((512, 1024))), (128,))


# -- tile and block grids traced ------------------------------------------------------------------


def test_tile_grid_scale_reads_and_writes_each_byte_once():
    k = traced("grid_scale", {"x": ((512, 1024), "bf16")})
    b = bytes_of(k)
    # 4 x 4 tiles of 128 x 256 bf16 = 65,536 B each, read once and written once: 1,048,576 B each
    # way; the multiply by a constant is one Vector op statement (a chain of one scalar op), no
    # Tensor Engine FLOPs
    assert b["x"] == (1_048_576, 0) and b["out"] == (0, 1_048_576) and b["W"] == 0
    assert op_kinds(k) == ["chain1"]


def test_block_grid_with_partial_blocks_counts_the_clamped_extents():
    # 300 x 640 bf16 in blocks of 2 x 1 tiles of 128 x 256: block rows of 256 and 44 rows, block
    # columns of 256, 256 and 128: every element once each way, 300 x 640 x 2 = 384,000 B
    b = bytes_of(traced("block_copy", {"x": ((300, 640), "bf16")}))
    assert b["x"] == (384_000, 0) and b["out"] == (0, 384_000)


def test_grid_matmul_through_alloc_tiles_psum():
    b = bytes_of(traced("grid_matmul", {"lhs_t": ((512, 128), "bf16"), "rhs": ((512, 512), "bf16")}))
    # W = 2 M N K = 2 x 128 x 512 x 512; lhs_t 512 x 128 x 2 B, rhs 512 x 512 x 2 B read once; the
    # 128 x 512 bf16 result written once
    assert b["W"] == 2 * 128 * 512 * 512 == 67_108_864
    assert b["lhs_t"] == (131_072, 0) and b["rhs"] == (524_288, 0) and b["out"] == (0, 131_072)


# -- stream buffers: the slot count is the timeline's buffer rotation --------------------------


def _timeline(k):
    a = pipeline.analyze_kernel(k, TRN2)
    return ntl.timeline(k, TRN2, dtype=a.dtype, W_P=a.W / TRN2.P(a.dtype), Q_BW=a.Q / TRN2.bw, Q=a.Q)


def test_stream_copy_one_slot_vs_two_makespans_by_hand():
    """8 row bands of 128 x 4096 bf16 (8 KiB per partition: d = 1 MiB / (368 GB/s x 0.983)).
    One slot: each load waits for the store of the band before, which waits for its load:
    8 x 2 (F + d). Two slots: every wait is hidden behind a transfer in flight but the first
    and the last: 2F + 16 d."""
    d = 128 * 4096 * 2 / (DMA * 0.983)
    one = traced("stream_copy", {"x": ((1024, 4096), "bf16")}, kwargs={"slots": 1})
    two = traced("stream_copy", {"x": ((1024, 4096), "bf16")}, kwargs={"slots": 2})
    assert one.buffers == (("x", 1),) and two.buffers == (("x", 2),)
    assert _timeline(one).T == pytest.approx(8 * 2 * (F + d), rel=1e-12)
    assert _timeline(two).T == pytest.approx(2 * F + 16 * d, rel=1e-12)
    # the pool's slots are live SBUF: 2 x 4096 x 2 B per partition for x (the store's staging of
    # out one band more)
    assert dict(live_buffers(two, TRN2)[1])["x"] == 2 * 8192
    assert dict(live_buffers(one, TRN2)[1])["x"] == 8192
    b = bytes_of(two)
    assert b["x"] == (8_388_608, 0) and b["out"] == (0, 8_388_608)  # 1024 x 4096 x 2 B each way


def test_stream_slabs_of_a_tensor_view_rotate_three_slots():
    k = traced("stream_slabs", {"x": ((4, 128, 512), "bf16")})
    # 4 slabs of 128 x 512 bf16 = 131,072 B, in and out once; the exp is one Scalar op per slab
    assert k.buffers == (("x", 3),)
    b = bytes_of(k)
    assert b["x"] == (524_288, 0) and b["out"] == (0, 524_288)
    assert op_kinds(k) == ["exp"]
    assert any(f"grids_2026.py:{line_of('num_slots=3')}: stream buffers of x" in n and "3 slots" in n
               for n in k.notes)


def test_software_pipeline_prefetching_the_next_slot():
    k = traced("stream_prefetch", {"x": ((512, 1024), "bf16")})
    # 4 bands of 128 x 1024 bf16 (262,144 B): each loaded once (the prologue's band 0, then
    # band s + 1 in iteration s), exp'd and stored once
    b = bytes_of(k)
    assert b["x"] == (1_048_576, 0) and b["out"] == (0, 1_048_576)
    assert k.buffers == (("x", 2),)


def test_stream_buffers_refuse_what_nki_refuses():
    pool = grids.NkiStreamBuffers(lambda slot: slot, 2, "x")
    assert (pool[0], pool[3], pool[4]) == (0, 1, 0)  # slot k % num_slots
    with pytest.raises(TraceError, match="negative index"):
        pool[-1]
    with pytest.raises(TraceError, match="iterating over stream buffers"):
        iter(pool)


# -- compiled loops and branches -------------------------------------------------------------------


def test_fori_loop_with_integer_bounds_is_a_loop():
    k = traced("fori_rows", {"x": ((512, 256), "bf16")})
    # 4 bands of 128 x 256 bf16 = 65,536 B, in and out: 262,144 B each way, in one loop of 4
    b = bytes_of(k)
    assert b["x"] == (262_144, 0) and b["out"] == (0, 262_144)
    (loop,) = k.body
    assert loop.trips == 4


def test_fori_loop_bound_in_a_register_moved_in():
    # the register holds 3 (register_move): 3 bands of 128 x 256 bf16 = 196,608 B each way
    b = bytes_of(traced("fori_register_bound", {"x": ((384, 256), "bf16")}))
    assert b["x"] == (196_608, 0) and b["out"] == (0, 196_608)


@pytest.mark.parametrize("double,kind", [(True, "chain1"), (False, "exp")])
def test_if_else_on_a_python_value_runs_one_branch(double, kind):
    k = traced("if_else_scale", {"x": ((128, 256), "bf16")}, kwargs={"double": double})
    assert op_kinds(k) == [kind]
    b = bytes_of(k)
    assert b["x"] == (65_536, 0) and b["out"] == (0, 65_536)  # 128 x 256 x 2 B


def _while(*stated):
    from loopsim.frontends.nki import registers

    return traced("while_flag", {"flag": ((1, 1), "int32"), "x": ((128, 256), "bf16")},
                  registers=registers.parse(list(stated)))


def test_while_loop_runs_while_the_stated_condition_holds():
    first, nxt = line_of("go = nisa.register_alloc(f)"), line_of("return nisa.register_alloc(f)")
    once = _while(f"grids_2026.py:{first}=1", f"grids_2026.py:{nxt}=0")
    never = _while(f"grids_2026.py:{first}=0")
    # the flag's 4 bytes and x's 128 x 256 x 2 B in, the tile out, whatever the trips; the body's
    # exp once (condition 1, then 0) or never (0)
    for k in (once, never):
        b = bytes_of(k)
        assert b["flag"] == (4, 0) and b["x"] == (65_536, 0) and b["out"] == (0, 65_536)
    assert op_kinds(once) == ["exp"] and op_kinds(never) == []
    assert sum("nl.while_loop tests" in n and "ASSUMED" in n for n in once.notes) == 2


def test_while_loop_refusals_name_the_option_or_the_endless_loop(capsys):
    first, nxt = line_of("go = nisa.register_alloc(f)"), line_of("return nisa.register_alloc(f)")
    rc = main(["entitle", f"{K}::while_flag", "--arg", "flag=1x1:int32", "--arg", "x=128x256",
               "-H", "trn2-core"])
    err = capsys.readouterr().err.strip()
    assert rc != 0 and "\n" not in err and "Traceback" not in err
    assert f"grids_2026.py:{line_of('nl.while_loop(go')}" in err
    assert f"--register-value grids_2026.py:{first}=N" in err
    with pytest.raises(SpecError, match="never ends"):
        _while(f"grids_2026.py:{first}=1", f"grids_2026.py:{nxt}=1")


# -- compile configuration ---------------------------------------------------------------------------


def test_compile_config_is_accepted_and_noted():
    k = traced("configured_copy", {"x": ((256, 256), "bf16")})
    # 2 bands of 128 x 256 bf16 in and out: 131,072 B each way, as without the config
    b = bytes_of(k)
    assert b["x"] == (131_072, 0) and b["out"] == (0, 131_072) and k.buffers == ()
    (note,) = [n for n in k.notes if "CompileConfig" in n]
    assert "allocation=Allocation.LINEAR" in note and "prefetch_auto=True" in note
    assert "ASSUMED" in note


def test_an_unlisted_compiler_option_class_is_a_config_not_a_crash(tmp_path):
    f = tmp_path / "opts.py"
    f.write_text("import nki\nimport nki.isa as nisa\nimport nki.language as nl\n"
                 "from nki.compiler import CompileConfig, OptLevel, FutureKnob\n\n\n"
                 "@nki.jit(compile_config=CompileConfig(opt_level=OptLevel.O2, knob=FutureKnob(depth=3)))\n"
                 "def k(x):\n"
                 "    t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)\n"
                 "    nisa.dma_copy(dst=t, src=x)\n"
                 "    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)\n"
                 "    nisa.dma_copy(dst=out, src=t)\n"
                 "    return out\n")
    k = load_kernel(str(f), "k", args={"x": ((128, 64), "bf16")})
    assert bytes_of(k)["Q"] == 2 * 128 * 64 * 2  # in and out once
    assert any("opt_level=OptLevel.O2" in n and "FutureKnob(depth=3)" in n for n in k.notes)


# -- NkiTensor's per-dimension views ---------------------------------------------------------------


def test_select_slice_and_expand_dim_views_count_their_boxes():
    k = traced("view_methods", {"x": ((4, 128, 512), "bf16")})
    b = bytes_of(k)
    # per slab s: x[s] read twice (select, then slice(0, s, s + 1) into a (1, 128, 512) view of u):
    # 2 x 4 x 128 x 512 x 2 B = 1,048,576 B; the first 256 columns of each slab written once:
    # 4 x 128 x 256 x 2 B = 262,144 B
    assert b["x"] == (1_048_576, 0) and b["out"] == (0, 262_144)


@pytest.mark.parametrize("body,match", [
    ("x.squeeze_dim(0)", r"squeeze_dim\(0\) of a tensor of shape \(128, 512\): that dimension is "
                         r"not of size 1"),
    ("x.select(2, 0)", r"select: dim 2 is not a dimension of a 2-D tensor"),
    ("x.expand_dims(0).assert_shape((128, 512))",
     r"assert_shape: the tensor's shape is \(1, 128, 512\), not \(128, 512\)"),
    ("nl.alloc_stream_buffers(x, buffer=nl.sbuf, dim=0, num_slots=0)",
     r"num_slots=0 must be a positive integer"),
    ("nl.alloc_stream_buffers(x, buffer=nl.shared_hbm, dim=0)", r"slots live in SBUF or PSUM"),
    ("nl.tiles(x, tile_shape=(128,))", r"tile_shape \(128,\) must be at least two"),
    ("nisa.dma_copy(dst=nl.ndarray((128, 256), dtype=x.dtype, buffer=nl.sbuf), "
     "src=nl.tiles(x, tile_shape=(128, 256))[0, 1])",
     r"nisa.dma_copy given NkiTileGrid\(shape=\(\), element_shape=\(128, 256\)\): instructions "
     r"take tensors; pass its .data"),
])
def test_bad_view_use_is_one_line_with_the_kernel_line(tmp_path, body, match):
    f = tmp_path / "bad_view.py"
    f.write_text("import nki.isa as nisa\nimport nki.language as nl\n\n\n"
                 f"def k(x):\n    y = {body}\n    return x\n")
    with pytest.raises(SpecError) as e:
        load_kernel(str(f), "k", args={"x": ((128, 512), "bf16")})
    msg = str(e.value)
    assert "\n" not in msg and f"{f}:6: kernel k: " in msg
    assert __import__("re").search(match, msg), msg


@pytest.mark.parametrize("value,kind", [(1, "chain1"), (0, "exp")])
def test_if_else_on_a_scalar_load_takes_the_stated_value(value, kind):
    from loopsim.frontends.nki import registers

    line = line_of("nl.if_else(nisa.scalar_load(")
    k = traced("branch_on_flag", {"flag": ((1, 1), "int32"), "x": ((128, 256), "bf16")},
               registers=registers.parse([f"grids_2026.py:{line}={value}"]))
    assert op_kinds(k) == [kind]
    b = bytes_of(k)
    # the flag's 4 bytes, x's 128 x 256 x 2 B in, the result out
    assert b["flag"] == (4, 0) and b["x"] == (65_536, 0) and b["out"] == (0, 65_536)
    assert any(f"!= 0 is {bool(value)}" in n and "ASSUMED" in n for n in k.notes)


def test_if_else_on_an_unstated_scalar_load_is_refused_naming_the_option():
    line = line_of("nl.if_else(nisa.scalar_load(")
    with pytest.raises(SpecError, match=rf"grids_2026.py:{line}: kernel branch_on_flag: a "
                                        rf"comparison \(!= 0\): its left side is the register read "
                                        rf"at .*grids_2026.py:{line}, a value known only at run "
                                        rf"time .* --register-value grids_2026.py:{line}=N"):
        traced("branch_on_flag", {"flag": ((1, 1), "int32"), "x": ((128, 256), "bf16")})


def test_stream_slots_of_a_tensor_view_take_transpose_axes(tmp_path):
    f = tmp_path / "tslots.py"
    f.write_text("import nki.isa as nisa\nimport nki.language as nl\n\n\n"
                 "def k(x):\n"
                 "    pool = nl.alloc_stream_buffers(x, buffer=nl.sbuf, dim=0, num_slots=2,\n"
                 "                                   transpose_axes=(1, 0))\n"
                 "    assert tuple(pool[0].shape) == (256, 128), pool[0].shape\n"
                 "    assert pool[2] is pool[0] and pool[3] is not pool[0]\n"
                 "    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)\n"
                 "    for s in range(x.shape[0]):\n"
                 "        t = nl.ndarray(x.shape[1:], dtype=x.dtype, buffer=nl.sbuf)\n"
                 "        nisa.dma_copy(dst=t, src=x[s])\n"
                 "        nisa.dma_copy(dst=out[s], src=t)\n"
                 "    return out\n")
    k = load_kernel(str(f), "k", args={"x": ((4, 128, 256), "bf16")})
    # slabs of 128 x 256 bf16 in and out: 4 x 65,536 B each way; the pool rotates x's loads
    assert bytes_of(k)["Q"] == 2 * 4 * 65_536 and k.buffers == (("x", 2),)


def test_language_transpose_load_broadcast_and_expand_dims():
    k = traced("language_views", {"x": ((256, 128), "bf16"), "col": ((128, 1), "bf16")})
    b = bytes_of(k)
    # x 256 x 128 x 2 B read once, landing (128, 256); the column's 128 x 2 B read once and
    # broadcast on chip; the (128, 256) sum stored once through a (1, 128, 256) view of out
    assert b["x"] == (65_536, 0) and b["col"] == (256, 0) and b["out"] == (0, 65_536)
    assert [s.transpose for s, _ in k.statements() if type(s).__name__ == "Load"
            and s.tile.tensor == "x"] == [True]


def test_reduce_scatter_and_all_to_all_are_link_bytes():
    k = traced("scatter_then_exchange", {"x": ((512, 256), "bf16")})
    w = {x.call: x for x in k.work}
    # C = 4 ranks. Ring reduce-scatter: (C - 1) / C of the 512 x 256 x 2 B source = 196,608 B;
    # all-to-all: (C - 1) / C of the 128 x 256 x 2 B quarter = 49,152 B
    assert w["nki.collectives.reduce_scatter"].link_bytes == 3 * 512 * 256 * 2 // 4 == 196_608
    assert w["nki.collectives.all_to_all"].link_bytes == 3 * 128 * 256 * 2 // 4 == 49_152
    b = bytes_of(k)
    assert b["x"] == (262_144, 0) and b["out"] == (0, 65_536)  # x in once, the quarter out


@pytest.mark.parametrize("slots", [1, 2])
def test_streamed_matmul_timeline_is_the_specs_by_hand(slots):
    """n = 6 K tiles: lhs_t (128 x 128 bf16, 32 KiB at 256 B per partition: efficiency 0.105)
    and rhs (128 x 512, 128 KiB at 1 KiB: 0.423) streamed through pools of `slots`; the matmul
    512 cycles at 2.4 GHz; after the last: the PSUM copy (fill 128 cycles, 65,536 fp32 elements
    on the Vector Engine at 256 x 0.96 GHz) and the store (F + 128 KiB at 0.423), as
    tests/test_timeline.py's matmul spec. One slot: each load waits for the matmul before it,
    n (F + dA + dB + t_mm) + fill + t_ev + F + dC; two: the DMA stage (dA + dB = 1.69 us > F +
    t_mm = 1.51 us) sets the pace, F + n (dA + dB) + t_mm + fill + t_ev + F + dC."""
    n = 6
    dA, dB, dC = (128 * 128 * 2 / (DMA * 0.105), 128 * 512 * 2 / (DMA * 0.423),
                  128 * 512 * 2 / (DMA * 0.423))
    t_mm, fill, t_ev = 512 / 2.4e9, 128 / 2.4e9, 65536 / (256 * 0.96e9)
    k = traced("streamed_matmul", {"lhs_t": ((128 * n, 128), "bf16"), "rhs": ((128 * n, 512), "bf16")},
               kwargs={"slots": slots})
    assert k.buffers == (("lhs_t", slots), ("rhs", slots))
    want = (n * (F + dA + dB + t_mm) if slots == 1 else F + n * (dA + dB) + t_mm) \
        + fill + t_ev + F + dC
    assert _timeline(k).T == pytest.approx(want, rel=1e-12)
    b = bytes_of(k)
    # W = 2 x 128 x 512 x 768; each operand read once, the 128 x 512 bf16 result written once
    assert b["W"] == 100_663_296
    assert b["lhs_t"] == (196_608, 0) and b["rhs"] == (786_432, 0) and b["out"] == (0, 131_072)


def test_block_stream_loads_a_block_per_dma_and_keeps_two_block_slots():
    k = traced("block_stream", {"x": ((1024, 512), "bf16")})
    b = bytes_of(k)
    assert b["x"] == (1_048_576, 0) and b["out"] == (0, 1_048_576)  # 1024 x 512 x 2 B each way
    loads = [(s, loops) for s, loops in k.statements() if type(s).__name__ == "Load"]
    # one DMA per block of 2 tiles: 4 blocks of 256 rows
    assert [[lp.trips for lp in loops] for _, loops in loads] == [[4]]
    # a slot holds a 256 x 512 bf16 block: 2 rows of 128 partitions x 1,024 B = 2,048 B per
    # partition; two slots: 4,096 B
    assert k.buffers == (("x", 2),) and dict(live_buffers(k, TRN2)[1])["x"] == 4096


def test_pipeline_with_prologue_and_epilogue_keeps_each_steps_slot():
    """pool[s + 1] loaded beside pool[s] computed (and integers beside the loop index) name
    different slots in one iteration: the loop runs iteration by iteration and re-rolls, so the
    exp of step s reads x's band s (not the band s + 1 loaded just before it)."""
    k = traced("stream_pipeline_epilogue", {"x": ((512, 1024), "bf16")})
    b = bytes_of(k)
    # 4 bands of 128 x 1024 bf16 = 262,144 B: each read once and written once
    assert b["x"] == (1_048_576, 0) and b["out"] == (0, 1_048_576)
    ops = [(s, loops) for s, loops in k.statements() if isinstance(s, OpStatement)]
    loads = [(s, loops) for s, loops in k.statements() if type(s).__name__ == "Load"]
    (looped,) = [(s, lp) for s, lp in ops if lp]
    (lload,) = [(s, lp) for s, lp in loads if lp]
    # in the loop: the load is of band s + 1 (offset 128 rows), the exp reads band s (offset 0)
    assert str(lload[0].tile) == "x[s + 128, :]" and str(looped[0].inputs[0]) == "x[s:s + 128, :]"
    assert k.buffers == (("x", 2),)


def test_experimental_while_loop_is_nl_while_loop(tmp_path):
    f = tmp_path / "xwhile.py"
    f.write_text("import nki.isa as nisa\nimport nki.language as nl\n"
                 "from nki.experimental import while_loop\n\n\n"
                 "def k(x):\n"
                 "    t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)\n"
                 "    nisa.dma_copy(dst=t, src=x)\n"
                 "    def body(r):\n"
                 "        nisa.activation(dst=t, op=nl.exp, data=t)\n"
                 "        return nisa.register_alloc(0)\n"
                 "    while_loop(nisa.register_alloc(1), body)\n"
                 "    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)\n"
                 "    nisa.dma_copy(dst=out, src=t)\n"
                 "    return out\n")
    k = load_kernel(str(f), "k", args={"x": ((128, 64), "bf16")})
    # registers moved in: 1, then 0 from the body: the exp once, nothing assumed; 128 x 64 x 2 B
    # in and out
    assert op_kinds(k) == ["exp"] and bytes_of(k)["Q"] == 2 * 128 * 64 * 2
    assert not any("ASSUMED" in n for n in k.notes if "while_loop" in n)
