"""loopsim: how fast a tiled Trainium kernel can run, with Q counted from its loop nest.

The Python API (docs/api.md): :func:`analyze`, :func:`search`, :func:`compare`, :func:`calibrate`
(:mod:`loopsim.api`), each returning a frozen result with ``.to_dict()`` (the command's JSON),
``_repr_html_`` and ``.plot()``. Importing this package compiles nothing and imports neither numba
nor matplotlib; those load on first use.
"""

__version__ = "0.1.0"
__all__ = ["analyze", "search", "compare", "calibrate"]


def __getattr__(name: str):
    if name in __all__:
        from loopsim import api

        return getattr(api, name)
    raise AttributeError(f"module 'loopsim' has no attribute {name!r}")


def __dir__():
    return sorted(list(globals()) + __all__)
