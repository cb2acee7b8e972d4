"""Exceptions with messages that name the limit a caller ran into."""


class GpulabError(Exception):
    """Base class of every error gpulab raises on purpose."""


class ShapeError(GpulabError, ValueError):
    """An array has the wrong number of dimensions, or shapes that do not fit together."""


class DtypeError(GpulabError, TypeError):
    """An array has a dtype the kernel was not written for."""


class LimitError(GpulabError, ValueError):
    """A problem does not fit a hardware or algorithmic limit (shared/constant memory, k > n ...)."""


class BackendUnavailable(GpulabError, RuntimeError):
    """A backend (e.g. CUDA C through pycuda) cannot run here; the message says why."""
