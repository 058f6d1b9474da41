"""Errors a job can end with; the server maps each to one gRPC status."""


class InputError(ValueError):
    """The job's input is wrong (INVALID_ARGUMENT): retrying cannot help."""


class UnsupportedModelError(RuntimeError):
    """This base model cannot be trained or reached by this trainer (FAILED_PRECONDITION)."""


class CancelledError(RuntimeError):
    """The client went away or cancelled (CANCELLED)."""


class NotFoundError(LookupError):
    """No live adapter of that id on this trainer (NOT_FOUND)."""


class AlreadyExistsError(RuntimeError):
    """CREATE of an adapter id that is live already (ALREADY_EXISTS)."""
