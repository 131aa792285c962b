"""Read an NKI kernel's own Python source (``PATH.py::FUNCTION``) into loopsim's IR.

The file is EXECUTED with loopsim's recording stand-in for the NKI modules (:mod:`.shim`); loop
bodies run once with symbolic indices (:mod:`.symbolic`), what they do is recorded
(:mod:`.record`) and lowered to an :class:`loopsim.ir.kernel.Kernel` or a one-kernel
:class:`loopsim.frontends.program.Program` (:mod:`.lower`). Entry point: :func:`loopsim.frontends.nki.load.load_kernel`.
"""
