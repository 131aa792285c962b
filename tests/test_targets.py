"""The Target protocol: both families answer every member, with numbers derived by hand."""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from loopsim.frontends import spec
from loopsim.ir.kernel import Tensor
from loopsim.model import pipeline
from loopsim.targets import hardware
from loopsim.targets.base import FAMILIES, Target

TRN2, TOY = hardware.load("trn2-core"), hardware.load("toy")
MEMBERS = ("name", "family", "scope", "physical_cores", "roofs", "with_roofs", "P", "dtypes", "bw",
           "sbuf_bytes", "accumulator_bytes", "lanes", "tile_cost", "tile_limits", "cannot_run",
           "ceilings", "steps", "dma_time", "transfer_bw", "matmul_floor", "dma_efficiency",
           "transfer_lines", "engine_lines", "predict")


@pytest.mark.parametrize("name", hardware.names())
def test_every_sheet_is_a_target_of_a_known_family(name):
    hw = hardware.load(name)
    assert isinstance(hw, Target) and hw.family in FAMILIES
    assert all(hasattr(hw, m) for m in MEMBERS), [m for m in MEMBERS if not hasattr(hw, m)]


def test_tile_cost_by_hand():
    a = Tensor("A", (1024, 1024), "bf16")  # rows on the partitions
    # trn2: 64 rows use ceil(64/128) = 1 row of every partition: 512 free elements x 2 bytes
    assert TRN2.tile_cost((64, 512), a) == 1 * 512 * 2
    assert TRN2.tile_cost((300, 512), a) == 3 * 512 * 2  # ceil(300/128) = 3
    # flat: a tile costs its bytes
    assert TOY.tile_cost((64, 512), a) == 64 * 512 * 2
    t = Tensor("T", (8, 256, 64), "fp32", partition_axis=1)
    assert TRN2.tile_cost((2, 256, 64), t) == 2 * 2 * 64 * 4  # ceil(256/128) = 2 on axis 1


@given(st.lists(st.integers(1, 700), min_size=1, max_size=3), st.integers(0, 2), st.data())
def test_tile_cost_of_broadcast_extents_is_the_cost_of_each(dims, axis, data):
    # the trace prices every block at once: a mesh of extents must give each block's own cost
    axis = axis % len(dims)
    t = Tensor("X", tuple(dims), "bf16", partition_axis=axis)
    ext = [np.array(data.draw(st.lists(st.integers(1, d), min_size=1, max_size=3)), dtype=np.int64)
           for d in dims]
    mesh = [e.reshape((1,) * a + (-1,) + (1,) * (len(ext) - a - 1)) for a, e in enumerate(ext)]
    for hw in (TRN2, TOY):
        got = np.broadcast_to(hw.tile_cost(mesh, t), tuple(e.size for e in ext))
        for idx in np.ndindex(got.shape):
            shape = tuple(int(ext[a][i]) for a, i in enumerate(idx))
            assert got[idx] == hw.tile_cost(shape, t)


def test_tile_limits_and_cannot_run():
    assert TRN2.tile_limits() == {"K": 128, "M": 128, "N": 512}  # partitions/PE rows, PE columns, moving
    assert TOY.tile_limits() == {}
    k = spec.load_kernel("matmul", {"TK": 512})
    assert any("K_t=512 exceeds trn2-core's limit of 128" in r for r in TRN2.cannot_run(k))
    assert TOY.cannot_run(k) == []


def test_the_flat_machine_is_its_roofs():
    # matmul 1024^3 bf16 on toy: W = 2^31 FLOPs at 1e12, Q = 23,068,672 bytes at 1e11
    a = pipeline.analyze(pipeline.load("matmul"), TOY)
    assert a.times == {"compute": 2**31 / 10**12, "memory": 23_068_672 / 10**11}
    assert a.T == max(a.times.values()) == a.entitlement.T_best
    c = a.ceilings
    assert c.ceilings == () and c.psum.fits and c.psum.banks == 0 and c.link is None
    assert TOY.dma_time(a.program.stages[0].kernel, a.counts, exact=True) is None
    assert TOY.transfer_bw is None and TOY.matmul_floor("bf16", 8, 8, 8, 1, 1, 1) == 0.0
    assert TOY.accumulator_bytes == 0 and TOY.lanes is None


def test_neuron_accumulator_and_floor_by_hand():
    # PSUM: 8 banks x 2 KiB per partition x 128 partitions = 2 MiB
    assert TRN2.accumulator_bytes == 8 * 2048 * 128 == 2 * 2**20
    # 1024^3 bf16 with 128 x 128 x 512 tiles: 1024^3 / (128 * 128) = 65,536 cycles of 1/2.4 GHz
    # (max(N_t = 512, N_min = 64) per instruction: the 128 x 128 x 512 instructions are full)
    t = TRN2.matmul_floor("bf16", 1024, 1024, 1024, 128, 128, 512)
    assert math.isclose(t, 65_536 / 2.4e9, rel_tol=1e-12)
