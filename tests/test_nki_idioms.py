"""Kernels as people write them: loop indices used as Python values (lists, dicts, ``%``
rotation, ``if k == 0``) trace concretely and re-roll; helper modules, package-relative
imports, config objects, range classes, launchers and stubbed imports work as Python runs them.
Every Q below is a hand count of the kernel's source (derivations beside each)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from loopsim.base.errors import SpecError
from loopsim.frontends import program
from loopsim.frontends.nki.load import DTypeName, load_kernel, parse_kwarg, parse_options, trace_kernel
from loopsim.ir import kernel as ir
from loopsim.model import pipeline
from loopsim.targets import hardware

HERE = Path(__file__).parent
KERNELS = HERE / "nki_kernels"
TRN2 = hardware.load("trn2-core")
TUTORIAL = Path("/work/ext/nki-samples/src/nki_samples/tutorials/matrix_multiplication/"
                "matrix_multiplication_nki_kernels.py")


def q_of(path, func, **kw):
    k, rec = trace_kernel(str(path), func, **kw)
    prog = k if isinstance(k, program.Program) else program.Program.single(k)
    return pipeline.analyze(prog, TRN2).counts.Q, k, rec


def loops(body):
    out = []
    for n in body:
        if isinstance(n, ir.Loop):
            out.append(n)
            out += loops(n.body)
    return out


def test_lists_and_dicts_of_tiles_reroll_into_hoisted_loads():
    """K=512, M=256, N=1024 bf16. lhsT's K x 128 column loaded once per m (r = 1), rhs's
    K x 512 column once per (m, n): r = M/128 = 2; result written once.
    Q = 2 B x (512*256 + 2*512*1024 + 256*1024) = 2 x 1,441,792 = 2,883,584."""
    q, k, rec = q_of(KERNELS / "idioms.py", "listed_matmul",
                     args={"lhsT": ((512, 256), "bf16"), "rhs": ((512, 1024), "bf16")})
    assert q == 2 * (512 * 256 + 2 * 512 * 1024 + 256 * 1024) == 2_883_584
    assert rec.concrete  # the k loops ran iteration by iteration
    # re-rolled: the IR has loops, not 4 x 2 x 4 unrolled statements
    assert len(list(k.statements())) <= 6


def test_buffer_rotation_by_modulo_is_one_streaming_loop():
    """x 512 x 1024 bf16 copied through bufs[k % 2]: each tile loaded and stored once:
    Q = 2 x 512 x 1024 x 2 B = 2,097,152; one loop of 4 trips in the IR."""
    q, k, rec = q_of(KERNELS / "idioms.py", "rotated_copy", args={"x": ((512, 1024), "bf16")})
    assert q == 2 * 512 * 1024 * 2
    assert [lp.extent // lp.step for lp in loops(k.body)] == [4]


def test_branch_on_the_loop_index_traces_with_an_assumed_note():
    """``if k == 0: t = exp(t)``: loads and stores are the same every iteration, so Q is exact
    (2 x 512 x 1024 x 2 B); the exp of iteration 0 only is noted as ASSUMED."""
    q, k, rec = q_of(KERNELS / "idioms.py", "first_tile_scaled", args={"x": ((512, 1024), "bf16")})
    assert q == 2 * 512 * 1024 * 2
    assert any("ASSUMED" in n and "loop k" in n for n in rec.notes)


def test_iterations_that_move_different_tiles_stay_as_fixed_offset_statements():
    """x 512 x 512 bf16; iteration 0 also loads x[128:256, :]. The four iterations do not re-roll
    into one loop, so they stay as statements at constant offsets (a run of three re-rolls):
    reads 4 row tiles + 1 extra = 5 x 128 x 512, writes 512 x 512:
    Q = 2 B x (5*128*512 + 512*512) = 1,179,648."""
    q, k, rec = q_of(KERNELS / "bad_data_branch.py", "loads_differ_by_index",
                     args={"x": ((512, 512), "bf16")})
    assert q == 2 * (5 * 128 * 512 + 512 * 512) == 1_179_648
    fixed = [s for s, ls in k.statements() if not ls]
    assert any(isinstance(s, ir.Load) and s.tile.offsets == (128, 0) for s in fixed)


def test_package_relative_imports_config_object_range_class_and_stubbed_torch():
    """tiledpkg/add.py imports ``.tiling`` (AddConfig, TileRange, an NKIObject subclass) and
    torch (not installed). a, b 256 x 1024 bf16: Q = 3 x 256 x 1024 x 2 B = 1,572,864."""
    before = set(sys.modules)
    q, k, rec = q_of(KERNELS / "tiledpkg" / "add.py", "tiled_add",
                     args={"a": ((256, 1024), "bf16"), "b": ((256, 1024), "bf16")})
    assert q == 3 * 256 * 1024 * 2
    assert any("torch is not installed: stubbed" in n for n in rec.notes)
    # the package's modules and the stub are gone afterwards
    assert not {m for m in set(sys.modules) - before if "tiledpkg" in m or m == "torch"}


@pytest.mark.parametrize("file,want", [("idioms.py", 2 * 512 * 1024 * 2),
                                       ("tiledpkg/add.py", 3 * 256 * 1024 * 2)])
def test_a_launcher_builds_the_inputs_and_calls_the_kernel(file, want):
    """``launch`` makes its HBM inputs with nl.ndarray(..., buffer=nl.shared_hbm) (and a config
    object) and calls the kernel: the same Q as tracing the kernel with --arg shapes."""
    q, _, _ = q_of(KERNELS / file, "launch")
    assert q == want


def test_kwarg_takes_nki_dtype_names_unquoted():
    assert parse_kwarg("dt=bfloat16") == ("dt", "bfloat16")
    assert isinstance(parse_kwarg("dt=nl.float32")[1], DTypeName)
    assert parse_kwarg("n=4") == ("n", 4)
    with pytest.raises(SpecError, match="neither a Python literal nor an NKI dtype"):
        parse_kwarg("dt=not_a_dtype")


def test_path_option_must_be_a_folder(tmp_path):
    assert parse_options(paths=[str(tmp_path)])["paths"] == (str(tmp_path.resolve()),)
    with pytest.raises(SpecError, match="--path .*: no such folder"):
        parse_options(paths=[str(tmp_path / "nope")])


def test_an_error_inside_a_helper_module_names_that_file(tmp_path):
    (tmp_path / "helper.py").write_text("def boom(n):\n    return [0][n]\n")
    (tmp_path / "k.py").write_text("import nki.language as nl\nfrom helper import boom\n\n"
                                   "def kern(x):\n    return boom(3)\n")
    with pytest.raises(SpecError) as e:
        load_kernel(str(tmp_path / "k.py"), "kern", args={"x": ((128, 128), "bf16")})
    assert "helper.py:2: kernel kern: IndexError" in str(e.value)


# The tutorial's five matmul kernels, as published. Hand counts (bf16, 2 B per element), with
# r the times a tensor is read: tiled reads lhsT N/512 times and rhs M/128 times; hoist_load
# lhsT once, rhs M/128 times; block_free_dimension lhsT once, rhs M/256 times (M-blocks of 256);
# fully_optimized lhsT N/1024 times (N-blocks of 1024), rhs once; the result written once.
#   K, M, N = 1024, 4096, 2048:  KM = 4Mi, KN = 2Mi, MN = 8Mi elements
#     tiled 2(4Mi*4 + 2Mi*32 + 8Mi) = 184,549,376    hoist 2(4Mi + 2Mi*32 + 8Mi) = 159,383,552
#     block 2(4Mi + 2Mi*16 + 8Mi) = 92,274,688       fully 2(4Mi*2 + 2Mi + 8Mi) = 37,748,736
#   K, M, N = 2048, 2048, 1024:  KM = 4Mi, KN = 2Mi, MN = 2Mi
#     tiled 2(4Mi*2 + 2Mi*16 + 2Mi) = 88,080,384     hoist 2(4Mi + 2Mi*16 + 2Mi) = 79,691,776
#     block 2(4Mi + 2Mi*8 + 2Mi) = 46,137,344        fully 2(4Mi + 2Mi + 2Mi) = 16,777,216
# basic asserts its one shape (K, M, N = 128, 64, 512): 2(128*64 + 128*512 + 64*512) = 212,992.
TUTORIAL_Q = {
    (1024, 4096, 2048): {"nki_matmul_tiled_": 184_549_376, "nki_matmul_hoist_load_": 159_383_552,
                         "nki_matmul_block_free_dimension_": 92_274_688,
                         "nki_matmul_fully_optimized_": 37_748_736},
    (2048, 2048, 1024): {"nki_matmul_tiled_": 88_080_384, "nki_matmul_hoist_load_": 79_691_776,
                         "nki_matmul_block_free_dimension_": 46_137_344,
                         "nki_matmul_fully_optimized_": 16_777_216},
    (128, 64, 512): {"nki_matmul_basic_": 212_992},
}


@pytest.mark.skipif(not TUTORIAL.is_file(), reason="the published nki-samples tutorial is not here")
@pytest.mark.parametrize("shape,func,want", [(s, f, q) for s, d in TUTORIAL_Q.items() for f, q in d.items()])
def test_published_tutorial_matmuls_match_hand_counts(shape, func, want):
    K, M, N = shape
    q, _, _ = q_of(TUTORIAL, func, args={"lhsT": ((K, M), "bf16"), "rhs": ((K, N), "bf16")})
    assert q == want
    # the formula in the comment, evaluated independently
    r = {"nki_matmul_tiled_": (N // 512, M // 128), "nki_matmul_hoist_load_": (1, M // 128),
         "nki_matmul_block_free_dimension_": (1, M // 256),
         "nki_matmul_fully_optimized_": (N // 1024, 1), "nki_matmul_basic_": (1, 1)}[func]
    assert want == 2 * (K * M * r[0] + K * N * r[1] + M * N)


def test_psum_accumulator_has_the_kernels_dtype_and_is_not_an_input(capsys):
    """matmul_isa.fully_optimized sums PSUM tiles ``ps`` (nl.float32) into SBUF: the traced
    ``ps`` is fp32 (M x N x 4 B = 4096 x 2048 x 4 = 33,554,432 bytes of footprint), never
    crosses the link, and the JSON calls it "on-chip", not "input"."""
    import json

    from loopsim.cli.main import main

    args = {"lhsT": ((1024, 4096), "bf16"), "rhs": ((1024, 2048), "bf16")}
    k = load_kernel(str(KERNELS / "matmul_isa.py"), "fully_optimized", args=args)
    assert k.tensor_map["ps"].dtype == "fp32" and k.tensor_map["lhsT"].dtype == "bf16"
    assert main(["entitle", f"{KERNELS / 'matmul_isa.py'}::fully_optimized", "--arg", "lhsT=1024x4096",
                 "--arg", "rhs=1024x2048", "-H", "trn2-core", "--json"]) == 0
    t = json.loads(capsys.readouterr().out)["tensors"]
    assert {n: v["role"] for n, v in t.items()} == {"lhsT": "input", "rhs": "input",
                                                   "result": "output", "ps": "on-chip"}
    assert t["ps"]["bytes"] == 4096 * 2048 * 4 and t["ps"]["read_bytes"] == 0


def test_dma_command_takes_a_kernel_reference(capsys):
    """rotated_copy of 512 x 1024 bf16: 4 loads and 4 stores of 128 x 1024 x 2 B, 2,097,152 B."""
    from loopsim.cli.main import main

    assert main(["dma", f"{KERNELS / 'idioms.py'}::rotated_copy", "--arg", "x=512x1024",
                 "-H", "trn2-core"]) == 0
    assert "DMA: 8 transfers, 2,097,152 bytes" in capsys.readouterr().out


def test_a_python_loop_over_a_tuple_of_tiles_rerolls_and_a_ones_matmul_broadcasts():
    """tiledpkg/add.py::scaled_rows iterates a tuple of 4 row tiles (no loop loopsim can see)
    and broadcasts gamma with a matmul against a ones column. x, out 512 x 1024 bf16, gamma
    1 x 1024: Q = 2 x 512 x 1024 x 2 + 1024 x 2 = 2,099,200. The four tiles' statements become
    one loop of 4 trips; the broadcast matmul is Tensor Engine work of 128 x 1024 outputs x
    K = 1 multiply-add each (exact, not assumed)."""
    q, k, rec = q_of(KERNELS / "tiledpkg" / "add.py", "scaled_rows",
                     args={"x": ((512, 1024), "bf16"), "gamma": ((1, 1024), "bf16")})
    assert q == 2 * 512 * 1024 * 2 + 1024 * 2 == 2_099_200
    kern = k.stages[0].kernel if isinstance(k, program.Program) else k
    assert [lp.extent // lp.step for lp in loops(kern.body)] == [4]
    (w,) = [w for w in rec.work if w.engine == "tensor"]
    assert (w.elements, w.passes, w.assumed) == (128 * 1024, 1, False)


@pytest.mark.parametrize("func,kw", [("launch", {}),
                                     ("residual_add", {"args": {"x": ((1024, 2048), "bf16"),
                                                                "residual": ((1024, 2048), "bf16")}})])
def test_production_style_package_kernel_with_config_object_and_access_patterns(func, kw):
    """prodlike/kernel.py: relative import of a config dataclass (nl.NKIObject) and a
    tile-iterator, .ap row patterns. x, residual, out 1024 x 2048 bf16, each once:
    Q = 3 x 1024 x 2048 x 2 = 12,582,912; the 8 row tiles are one loop of 8 trips."""
    q, k, _ = q_of(KERNELS / "prodlike" / "kernel.py", func, **kw)
    assert q == 3 * 1024 * 2048 * 2 == 12_582_912
    assert [lp.extent // lp.step for lp in loops(k.body)] == [8]


def test_a_search_loop_that_returns_from_inside_runs_concretely():
    """``_widest_tile(1536)`` returns 512 from inside its range loop (cols % w == 0 is a Python
    value). x 256 x 1536 bf16 copied in 128 x 512 tiles: Q = 2 x 256 x 1536 x 2 = 1,572,864; the
    copy is 2 x 3 loops."""
    q, k, rec = q_of(KERNELS / "idioms.py", "searched_copy", args={"x": ((256, 1536), "bf16")})
    assert q == 2 * 256 * 1536 * 2
    assert [lp.extent // lp.step for lp in loops(k.body)] == [2, 3]


@pytest.mark.parametrize("dt,out_bytes", [("float32", 4), ("nl.bfloat16", 2)])
def test_kwarg_dtype_name_reaches_the_kernel(dt, out_bytes, capsys):
    """cast_copy of x 256 x 512 bf16 into an output of ``dt``: Q = 256 x 512 x (2 + out_bytes)."""
    import json

    from loopsim.cli.main import main

    assert main(["entitle", f"{KERNELS / 'idioms.py'}::cast_copy", "--arg", "x=256x512",
                 "--kwarg", f"dt={dt}", "-H", "trn2-core", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["Q"] == 256 * 512 * (2 + out_bytes)


def test_a_branch_on_the_program_id_runs_the_grid_program_by_program():
    """Grid of 4 over x 1024 x 512 bf16: each program copies 256 rows in 2 tiles; program 0
    also exps (noted ASSUMED). Q = 2 x 1024 x 512 x 2 = 2,097,152; the shared output is one
    tensor; the IR has the grid loop (4) around the row loop (2)."""
    q, k, rec = q_of(KERNELS / "idioms.py", "first_program_exp", args={"x": ((1024, 512), "bf16")},
                     grid=(4,))
    assert q == 2 * 1024 * 512 * 2
    assert [t.name for t in k.tensors if t.output] == ["out"]
    assert [lp.extent // lp.step for lp in loops(k.body)] == [4, 2]
    assert any("ASSUMED" in n and "pid0" in n for n in rec.notes)


def test_an_optional_tile_compared_with_none_is_a_python_bool():
    """x 512 x 1024 bf16 scaled by s 128 x 1024 (loaded once) in a helper that tests
    ``scale != None``: x read once (1,048,576 B), s once (262,144 B), out written once
    (1,048,576 B): Q = 2,359,296."""
    q, k, rec = q_of(KERNELS / "idioms.py", "optionally_scaled",
                     args={"x": ((512, 1024), "bf16"), "s": ((128, 1024), "bf16")})
    assert q == 2 * (512 * 1024 + 128 * 1024 + 512 * 1024) == 2_359_296
