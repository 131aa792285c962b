"""Constants of the namespace-package test kernel (util/ has no __init__.py)."""

COLS = 256
