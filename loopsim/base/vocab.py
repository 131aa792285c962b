"""The vocabularies every layer shares, each written once: dtypes, engines, count policies, and the
one name of each quantity.

Quantities (units in the name's docs everywhere): ``W`` FLOPs; ``Q`` bytes across slow memory
(HBM), reads plus writes (``q_bytes`` where a longer name reads better, never another spelling);
``P`` FLOP/s; ``BW`` bytes/s; ``T`` seconds.

>>> ELEMENT_BYTES["bf16"], "tf32" in ELEMENT_BYTES, "tf32" in RATE_DTYPES
(2, False, True)
>>> POLICIES, REPLAY_POLICIES
(('as-written', 'lru', 'opt'), ('lru', 'opt'))
"""

from __future__ import annotations

from typing import NamedTuple


class Dtype(NamedTuple):
    """One dtype: bytes per element of a tensor stored in it (None: a compute format only, not a
    tensor dtype of a spec), and whether a sheet may give a Tensor Engine rate for it."""

    bytes: int | None
    rate: bool


#: every dtype loopsim names, one row each
DTYPES: dict[str, Dtype] = {
    "bf16": Dtype(2, True),
    "fp16": Dtype(2, True),
    "tf32": Dtype(None, True),   # an fp32 tensor multiplied in tf32
    "fp32": Dtype(4, True),
    "fp8": Dtype(1, True),
    "mxfp8": Dtype(None, True),  # block-scaled formats: rates on the newer sheets
    "mxfp4": Dtype(None, True),
    "int8": Dtype(1, False),     # no Tensor Engine rate: NKI nc_matmul takes no int8 inputs
}
#: tensor dtypes of a spec or kernel -> bytes per element
ELEMENT_BYTES: dict[str, int] = {n: d.bytes for n, d in DTYPES.items() if d.bytes is not None}
#: dtypes a sheet may give a rate for (``[tensor.dtypes]``, ``[measured.flops]``, engine widths)
RATE_DTYPES: tuple[str, ...] = tuple(n for n, d in DTYPES.items() if d.rate)
#: dtypes a matmul statement refuses as operands
MATMUL_REFUSED_DTYPES: tuple[str, ...] = tuple(n for n, d in DTYPES.items() if not d.rate)

#: engines an op may run on; "tensor" is the Tensor Engine (matmul only)
ENGINES: tuple[str, ...] = ("tensor", "vector", "scalar", "gpsimd")
#: the engines besides the Tensor Engine (a sheet's [engines.NAME], an op's engine override)
OTHER_ENGINES: tuple[str, ...] = ENGINES[1:]

#: how a count treats fast memory: the nest as written, or a replay under LRU / OPT
POLICIES: tuple[str, ...] = ("as-written", "lru", "opt")
#: the policies the simulator replays
REPLAY_POLICIES: tuple[str, ...] = POLICIES[1:]
