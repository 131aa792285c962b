"""The one error the NKI front end raises while tracing (a SpecError: the CLI prints one line)."""

from __future__ import annotations

from loopsim.base.errors import SpecError


class TraceError(SpecError):
    """The kernel does something the shim does not model, or branches on data. Raised inside the
    shim without a location; :func:`loopsim.frontends.nki.load.load_kernel` prefixes ``FILE:LINE: kernel F``."""
