"""The general access form: tiles at constant offsets, fixed slices outside any loop, one loop
moving two tensors by different strides (coefficients), explicit extents (windows with a halo).
NKI kernels written for this project (tests/nki_kernels/offsets.py) against hand counts of Q and
r; the spec grammar that says the same; hypothesis properties against the plain-Python
interpreter (tests/naive_nest.py) and against today's spelling for coefficient 1 / offset 0."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import numpy as np

import pytest
from hypothesis import given, settings, strategies as st

from loopsim.base.errors import SpecError
from loopsim.count.counts import capacity_units, count
from loopsim.frontends import program, spec
from loopsim.frontends.nki.load import trace_kernel
from loopsim.ir.kernel import LOAD, STORE, Access, Kernel, Load, Loop, Matmul, Store, Tensor
from loopsim.ir.tiles import grids
from loopsim.model import pipeline
from loopsim.sim import trace
from loopsim.targets import hardware
from loopsim.targets.neuron import dma

from naive_nest import interpret, matmul_nests

KERNELS = Path(__file__).parent / "nki_kernels"
TRN2 = hardware.load("trn2-core")


def analyzed(func, **args):
    k, _ = trace_kernel(str(KERNELS / "offsets.py"), func,
                        args={n: (s, "bf16") for n, s in args.items()})
    prog = k if isinstance(k, program.Program) else program.Program.single(k)
    return pipeline.analyze(prog, TRN2).counts, k


def rw(counts):
    return {t.name: (t.read_bytes, t.write_bytes) for t in counts.tensors}


def test_attention_style_next_tile_offset():
    """q, k 128 x 1024 bf16; 7 tiles t: q[:, 128*t + 128 ...] and k[:, 128*t ...] read once each,
    out (128 x 896) written once: each 128 x 896 x 2 B = 229,376; Q = 3 x 229,376 = 688,128.
    r(q) = 896/1024 = 7/8 (its first tile is never read)."""
    c, k = analyzed("shifted_add", q=(128, 1024), k=(128, 1024))
    assert "load q[:, t + 128]" in [str(s) for s, _ in k.statements()]
    tile = 128 * 896 * 2
    assert rw(c)["q"] == (tile, 0) and rw(c)["k"] == (tile, 0) and rw(c)["out"] == (0, tile)
    assert c.Q == 3 * tile == 688_128
    assert Fraction(c.tensor_map["q"].read_bytes, c.tensor_map["q"].bytes) == Fraction(7, 8)


def test_fixed_slice_outside_any_loop_is_read_once():
    """x 4096 x 512, y 1024 x 512 bf16: x[128:256, :] loaded once (128 x 512 x 2 B = 131,072,
    r(x) = 128/4096 = 1/32), y read and out written once (1,048,576 each):
    Q = 131,072 + 2 x 1,048,576 = 2,228,224."""
    c, k = analyzed("fixed_slice_bias", x=(4096, 512), y=(1024, 512))
    assert str(k.body[0]) == "load x[128:256, :]"
    assert rw(c)["x"] == (128 * 512 * 2, 0)
    assert c.Q == 128 * 512 * 2 + 2 * 1024 * 512 * 2 == 2_228_224
    assert Fraction(c.tensor_map["x"].read_bytes, c.tensor_map["x"].bytes) == Fraction(1, 32)


def test_one_loop_moves_two_tensors_by_different_strides():
    """Loop b (8 trips) moves x by 128 rows and s by 1 row: the loop steps by gcd = 1 and x's
    index carries the coefficient 128. x 1024 x 512 and s 8 x 512 bf16 each read once, r = 1, and
    copied out: Q = 2 x (1,048,576 + 8,192) = 2,113,536. The DMA report moves the same bytes."""
    c, k = analyzed("two_strides", x=(1024, 512), s=(8, 512))
    (loop,) = k.body
    assert (loop.extent, loop.step) == (8, 1)
    assert [str(s) for s, _ in k.statements()][0] == "load x[128*b, :]"
    assert rw(c)["x"] == (1024 * 512 * 2, 0) and rw(c)["s"] == (8 * 512 * 2, 0)
    assert c.tensor_map["x"].r == c.tensor_map["s"].r == 1
    assert c.Q == 2 * (1024 * 512 * 2 + 8 * 512 * 2) == 2_113_536
    assert dma.report(k, TRN2).bytes == c.Q


def test_windows_with_a_halo_at_an_offset():
    """x 128 x 1027 bf16, 4 windows of 258 columns starting at 256*t + 1: each halo column read
    twice, 4 x 128 x 258 x 2 B = 264,192 read (r = 1032/1027), out 128 x 1032 written once
    (264,192): Q = 528,384. x's tiles step by 256 and out's by 258: loop step 2, coefficients
    128 and 129, x's extent 258 explicit."""
    c, k = analyzed("halo_windows", x=(128, 1027))
    (loop,) = k.body
    assert loop.step == 2
    assert [str(s) for s, _ in k.statements()] == ["load x[:, 128*t + 1:128*t + 259]",
                                                    "store out[:, 129*t]"]
    assert rw(c)["x"] == (4 * 128 * 258 * 2, 0) and rw(c)["out"] == (0, 128 * 1032 * 2)
    assert c.Q == 2 * 4 * 128 * 258 * 2 == 528_384
    assert Fraction(c.tensor_map["x"].read_bytes, c.tensor_map["x"].bytes) == Fraction(1032, 1027)
    # x's grid: gcd(256, 1, 258) = 1-column blocks, so every window is whole blocks
    assert grids(k)["x"].block == (128, 1)


def test_matmul_contracting_over_a_fixed_slice_of_k():
    """lhsT 512 x 128, rhs 512 x 512 bf16; one matmul over rows 128..256 of both (K_t = 128):
    W = 2 x 128 x 128 x 512 = 16,777,216 (the slice, not K = 512); lhsT's slice 128 x 128 and
    rhs's 128 x 512 read once (r = 1/4 each), out 128 x 512 written:
    Q = 2 B x (16,384 + 65,536 + 65,536) = 294,912."""
    c, k = analyzed("sliced_contraction", lhsT=(512, 128), rhs=(512, 512))
    mm = next(s for s, _ in k.statements() if isinstance(s, Matmul))
    assert mm.stationary.offsets[0] == mm.moving.offsets[0] == 128
    assert c.flops == 2 * 128 * 128 * 512 == 16_777_216
    assert c.Q == 2 * (128 * 128 + 2 * 128 * 512) == 294_912
    assert c.tensor_map["lhsT"].r == c.tensor_map["rhs"].r == 0.25


# ---------------------------------------------------------------------------------------------
# the spec grammar


def write(tmp_path, tensors: str, body: str) -> str:
    p = tmp_path / "t.toml"
    p.write_text(f'[kernel]\nname = "t"\n[tensors]\n{tensors}\n[nest]\nbody = \'\'\'\n{body}\n\'\'\'\n')
    return str(p)


@pytest.mark.parametrize("text", ["A[k, m]", "A[kb + kt, :]", "q[:, 128*t + 128]", "x[128:256, :]",
                                  "x[k:k + 130, 2*m]", "x[384:, :]"])
def test_accesses_print_as_they_parse(text):
    a = spec.parse_access(text, "t.toml: nest line 1")
    assert str(a) == text and spec.parse_access(str(a), "x") == a


def test_default_spelling_equals_the_plain_access():
    assert spec.parse_access("A[1*k + 0, m]", "w") == Access("A", (("k",), ("m",)))
    assert Access("A", (("k",),), ((1,),), (0,), (0,)) == Access("A", (("k",),))


@pytest.mark.parametrize("text,what", [("A[1.5]", "must be ':'"), ("A[k:j + 3]", "the stop must be"),
                                       ("A[k:]", "needs its stop"), ("A[t + 2*t]", "appears twice")])
def test_bad_indices_are_one_line_errors(text, what):
    with pytest.raises(SpecError) as e:
        spec.parse_access(text, "t.toml: nest line 4")
    assert str(e.value).startswith("t.toml: nest line 4: ") and what in str(e.value)
    assert "\n" not in str(e.value)


def test_a_tile_outside_its_tensor_is_refused(tmp_path):
    p = write(tmp_path, "x = { shape = [256, 64] }\ny = { shape = [128, 64], output = true }",
              "load x[192:320, :]\nstore y[:, :]")
    with pytest.raises(SpecError, match=r"x\[192:320, :\] dimension 0: the tile .* lies outside"):
        spec.load_kernel(p)


def test_a_traced_kernel_written_back_as_a_spec_counts_the_same(tmp_path):
    """The halo kernel's IR printed as a nest, read back from TOML: the same Q (528,384)."""
    c, k = analyzed("halo_windows", x=(128, 1027))
    tensors = "\n".join(f"{t.name} = {{ shape = [{', '.join(map(str, t.shape))}]"
                        f"{', output = true' if t.output else ''} }}" for t in k.tensors)
    body = "for t in 8 by 2:\n  " + "\n  ".join(str(s) for s, _ in k.statements())
    back = spec.load_kernel(write(tmp_path, tensors, body))
    prog = program.Program.single(back)
    assert pipeline.analyze(prog, TRN2).counts.Q == c.Q == 528_384


# ---------------------------------------------------------------------------------------------
# properties


def _as_coefficients(kernel: Kernel) -> Kernel:
    """Every loop ``for v in E by S`` rewritten as ``for v in trips by 1`` with S as the
    coefficient of v in every index, and every extent spelled out: the same tiles, by the
    general form."""
    steps = {n.var: n.step for n, _ in _loops(kernel.body)}

    def acc(a: Access, loops) -> Access:
        ext = tuple(min(steps[v] for v in ix) if ix else 0 for ix in a.index)
        return Access(a.tensor, a.index, tuple(tuple(steps[v] for v in ix) for ix in a.index),
                      (), ext)

    def node(n):
        if isinstance(n, Loop):
            return Loop(n.var, n.trips, 1, tuple(node(m) for m in n.body))
        if isinstance(n, Load):
            return Load(acc(n.tile, ()))
        if isinstance(n, Store):
            return Store(acc(n.tile, ()))
        return Matmul(acc(n.out, ()), acc(n.stationary, ()), acc(n.moving, ()))

    return Kernel(kernel.name, kernel.tensors, tuple(node(n) for n in kernel.body))


def _loops(body):
    for n in body:
        if isinstance(n, Loop):
            yield n, None
            yield from _loops(n.body)


def _q(kernel: Kernel) -> int:
    return count(kernel, capacity=capacity_units(TRN2, None), target=TRN2).Q


@settings(max_examples=40, deadline=None)
@given(matmul_nests(max_dim=200))
def test_coefficient_spelling_gives_todays_trace_and_counts(kernel):
    """Offset 0 / coefficient 1 is today's IR; the same tiles spelled with coefficients (loops of
    step 1) and explicit extents give the same grids, trace, FLOPs and Q."""
    general = _as_coefficients(kernel)
    assert any(not a.plain for s, _ in general.statements() for a, _ in s.accesses())
    a, b = trace.build(kernel), trace.build(general)
    assert {n: g.block for n, g in grids(kernel).items()} == {n: g.block for n, g in grids(general).items()}
    assert a.obj.tolist() == b.obj.tolist() and a.kind.tolist() == b.kind.tolist()
    assert (a.flops, a.instructions) == (b.flops, b.instructions)
    assert _q(kernel) == _q(general)


@st.composite
def general_copies(draw):
    """A 2-D copy nest: ``for t in n*s by s: load x[c*t + o : ... + e, :]; store y[t, :]``
    with random offsets, coefficients and extents (ragged and past-the-edge tiles included)."""
    D = draw(st.integers(1, 200))
    s = draw(st.integers(1, 8))
    n = draw(st.integers(1, 12))
    c = draw(st.integers(1, 16))
    o = draw(st.integers(0, D - 1))
    e = draw(st.sampled_from([0, 1, 3, 16, 40]))
    C = draw(st.integers(1, 40))
    fixed = draw(st.booleans())
    x = Tensor("x", (D, C))
    y = Tensor("y", (n * s, C), output=True)
    ld = Load(Access("x", (("t",), ()), ((c,), ()), (o, 0), (e, 0)))
    body = [Loop("t", n * s, s, (ld, Store(Access("y", (("t",), ())))))]
    if fixed:  # a fixed slice outside the loop, at an offset, of a random extent
        lo = draw(st.integers(0, D - 1))
        body.insert(0, Load(Access("x", ((), ()), (), (lo, 0), (draw(st.integers(1, D - lo)), 0))))
    return Kernel("g", (x, y), tuple(body))


@settings(max_examples=60, deadline=None)
@given(general_copies())
def test_general_form_trace_matches_the_interpreter(kernel):
    """The walker's trace equals the plain interpreter's, request for request, and Q (from the
    trace) and the DMA report's bytes (from the executions) equal the interpreter's bytes."""
    tr = trace.build(kernel)
    events, _, _ = interpret(kernel)
    assert list(zip(tr.obj.tolist(), tr.kind.tolist())) == events
    moved = sum(int(tr.obj_bytes[o]) for o, k in events if k in (LOAD, STORE))
    assert _q(kernel) == moved == dma.report(kernel, TRN2).bytes


@settings(max_examples=40, deadline=None)
@given(general_copies())
def test_general_form_walker_paths_agree(kernel):
    """The compiled walker (tests/conftest.py), its plain-Python twin and the statement-by-
    statement path (no fast loops) emit the same requests for offsets, coefficients and extents."""
    from loopsim.sim import _jit

    tr = trace.build(kernel)
    slow = trace.build(kernel, trace.compile_nest(kernel, fast=False))
    assert slow.obj.tolist() == tr.obj.tolist() and slow.kind.tolist() == tr.kind.tolist()
    nest = trace.compile_nest(kernel)
    w = trace.Walker(nest)
    w._gen = _jit.plain("loopsim.sim._gen")
    obj = np.empty(nest.slots + nest.max_events, nest.id_dtype)
    kind = np.empty(obj.size, np.int8)
    m = w.fill(obj, kind)
    assert obj[:m].tolist() == tr.obj.tolist() and kind[:m].tolist() == tr.kind.tolist()


def test_closed_form_declines_a_loop_past_one_tensors_edge():
    """Found by hypothesis: ``for t in 2 by 1: load x[t]; store y[t]`` with x of 1 row and y of 2.
    The walker skips iteration t = 1 (its first tile, x[1], starts past x's edge), so only y[0] is
    stored: Q = 2 (x[0], bf16) + 2 (y[0]) = 4 bytes. The per-access closed form counted y's two
    rows (6); it now declines such a nest and the trace counts it."""
    x, y = Tensor("x", (1, 1)), Tensor("y", (2, 1), output=True)
    k = Kernel("g", (x, y), (Loop("t", 2, 1, (Load(Access("x", (("t",), ()))),
                                              Store(Access("y", (("t",), ()))))),))
    assert _q(k) == 4 == count(k, capacity=capacity_units(TRN2, None), target=TRN2, replay=True).Q
