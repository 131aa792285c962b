"""A package of kernels for loopsim's tests: relative imports, a config object, a range class
in a helper module, a module-level import of a package that is not installed."""
