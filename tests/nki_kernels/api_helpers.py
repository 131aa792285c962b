"""A helper module the api_2026 kernels import (a sibling file, as kernels' helpers are)."""

import nki.isa as nisa
import nki.language as nl


def top8(t):
    """The 8 largest values per partition: nisa.max8, not modelled (costed as assumed work)."""
    top = nl.ndarray((t.shape[0], 8), dtype=t.dtype, buffer=nl.sbuf)
    nisa.max8(dst=top, src=t)
    return top


def find8(t):
    """nisa.nc_find_index8 without dst=: its output shape is not known (the trace stops here)."""
    return nisa.nc_find_index8(data=t, vals=t[:, 0:8])
