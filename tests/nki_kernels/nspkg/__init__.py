"""A package whose kernel folder has no __init__.py (a namespace package below a regular one),
for loopsim's import tests."""
