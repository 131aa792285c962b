"""A kernel module that probes for an optional package (``importlib.util.find_spec``), as model
code does before choosing a standalone or a bundled helper library."""

import importlib.util

import nki
import nki.isa as nisa
import nki.language as nl

if importlib.util.find_spec("loopsim_test_fastcopy_missing") is not None:
    from loopsim_test_fastcopy_missing import copy as _copy  # never taken: not installed
else:
    def _copy(dst, src):
        nisa.dma_copy(dst=dst, src=src)


@nki.jit
def probed_copy(x):
    """x through SBUF into out with the helper the probe chose. x: [128, 512]."""
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    _copy(t, x)
    _copy(out, t)
    return out
