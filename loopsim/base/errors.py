"""The error family. Every error a user can cause is one of these, and the CLI prints it on one line."""


class LoopsimError(Exception):
    """Base of every error loopsim raises on purpose."""


class SpecError(LoopsimError, ValueError):
    """A kernel spec (TOML or IR) is malformed or inconsistent. Message: `where: what, expected`."""


class TraceTooLarge(SpecError):
    """The nest expands to more tile accesses than loopsim replays."""


class HardwareError(LoopsimError, ValueError):
    """A hardware sheet is malformed, unknown, or lacks a number that was asked of it."""


class CapacityError(LoopsimError, ValueError):
    """SBUF (or PSUM) capacity cannot hold what the kernel needs at one instant."""


class InputError(LoopsimError, ValueError):
    """Bad command-line or file input that is not a spec or a sheet (traces, measured files, formulas)."""


class InternalError(LoopsimError, RuntimeError):
    """Two independent counts that must agree did not: a bug in loopsim, never the user's fault."""


class FlagError(LoopsimError):
    """A flag's value outside its documented bound (loopsim.base.limits.bounded). Raised while
    argparse parses, so deliberately not a ValueError (argparse would reword it)."""
