"""TuttiError and one subclass per status of tutti.h.

Every non-OK status from the library becomes the subclass for that status, carrying
the status (an int, as in tutti.h) and the message tutti_last_error() gave for it.
Input the binding itself refuses before calling the library (a non-contiguous array,
an unsupported dtype) raises the same classes with the same message form, so a
caller catches one family. Where a Python built-in means the same thing, the class
derives from it too (TuttiTimeout is a TimeoutError, TuttiInvalidArgument a
ValueError), so code written against the built-ins keeps working.
"""
from . import _capi


class TuttiError(Exception):
    """A tutti call failed. `status` is the tutti_status value, `message` what failed,
    where, and how to fix it."""

    def __init__(self, status, message):
        super().__init__(message)
        self.status = status
        self.message = message

    def __reduce__(self):  # pickles with both arguments (torch pickles future values)
        return (type(self), (self.status, self.message))

    @property
    def status_name(self):
        """The status's name in tutti.h, e.g. "TUTTI_ERR_TIMEOUT"."""
        return _capi.STATUS_NAMES.get(self.status, "TUTTI_ERR_UNKNOWN")


class TuttiInvalidArgument(TuttiError, ValueError):
    """Bad input: the message names the argument and how to fix it."""


class TuttiTimeout(TuttiError, TimeoutError):
    """An operation or a wait ran past its bound; the message names the missing ranks."""


class TuttiPeerLost(TuttiError):
    """A rank (or the rendezvous store) was lost; the communicator is unusable."""


class TuttiMismatch(TuttiError):
    """Ranks called different collectives, or with different shapes."""


class TuttiAborted(TuttiError):
    """The communicator was aborted."""


class TuttiTransportError(TuttiError):
    """A network or transport failure; the message names the address."""


class TuttiUnsupported(TuttiError):
    """Not supported by this build or on this communicator (e.g. a CUDA tensor where
    libtutti finds no CUDA, or a tensor on another kind of device)."""


class TuttiNoMemory(TuttiError, MemoryError):
    """Out of memory."""


class TuttiDenied(TuttiError, PermissionError):
    """Authentication failed: the job secret (TUTTI_SECRET) did not match."""


class TuttiInternal(TuttiError):
    """A bug in tutti: please report it with the message."""


_BY_STATUS = {
    _capi.ERR_INVALID_ARGUMENT: TuttiInvalidArgument,
    _capi.ERR_TIMEOUT: TuttiTimeout,
    _capi.ERR_PEER_LOST: TuttiPeerLost,
    _capi.ERR_MISMATCH: TuttiMismatch,
    _capi.ERR_ABORTED: TuttiAborted,
    _capi.ERR_TRANSPORT: TuttiTransportError,
    _capi.ERR_UNSUPPORTED: TuttiUnsupported,
    _capi.ERR_NO_MEMORY: TuttiNoMemory,
    _capi.ERR_DENIED: TuttiDenied,
    _capi.ERR_INTERNAL: TuttiInternal,
}


def error_for(status, message):
    """The exception for a status: its subclass, or TuttiError for an unknown value."""
    return _BY_STATUS.get(status, TuttiError)(status, message)


def check(status):
    """Raises the status's exception, with this thread's tutti_last_error(), unless OK."""
    if status != _capi.OK:
        message = _capi.last_error() or _capi.lib.tutti_status_string(status).decode()
        raise error_for(status, message)


def invalid(message):
    """The exception for input the binding refuses itself."""
    return TuttiInvalidArgument(_capi.ERR_INVALID_ARGUMENT, message)


def unsupported(message):
    return TuttiUnsupported(_capi.ERR_UNSUPPORTED, message)
