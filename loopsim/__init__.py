"""loopsim: how fast a tiled Trainium kernel can run, with Q counted from its loop nest.

Importing this package compiles nothing and imports neither numba nor matplotlib; those load on
first use.
"""

__version__ = "0.1.0"
