"""TuttiError and one subclass per status of tutti.h.

Every non-OK status from the library becomes the subclass for that status, carrying
the status (an int, as in tutti.h) and the message tutti_last_error() gave for it.
Input the binding itself refuses before calling the library (a non-contiguous array,
an unsupported dtype) raises the same classes with the same message form, so a
caller catches one family. Where a Python built-in means the same thing, the class
derives from it too (TuttiTimeout is a TimeoutError, TuttiInvalidArgument a
ValueError), so code written against the built-ins keeps working.
"""
import re

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


# The C API's names, as a Python caller knows them: the library's messages name the C
# function that failed ("tutti_comm_shrink: ...") and the config fields to change
# ("raise config.init_timeout_ms").
_C_NAME = re.compile(r"\btutti_(comm_|work_)?([a-z0-9_]+)\b")
_CONFIG_FIELD = re.compile(r"\bconfig\.(init_timeout_ms|op_timeout_ms|rank|world_size|init_method|name)\b")
_INIT_ARGUMENT = {"init_timeout_ms": "init_timeout", "op_timeout_ms": "timeout"}


def _python_name(match):
    kind, name = match.group(1), match.group(2)
    if kind == "comm_":
        return f"tutti.{name}" if name in ("init", "join") else f"Comm.{name}"
    if kind == "work_":
        return f"Work.{name}"
    return f"tutti.{name}"


def in_python_terms(message):
    """message with tutti.h's names turned into this package's: tutti_comm_init becomes
    tutti.init, tutti_comm_shrink Comm.shrink, tutti_all_reduce tutti.all_reduce, and
    config.init_timeout_ms tutti.init(init_timeout=...)."""
    message = _C_NAME.sub(_python_name, message)
    return _CONFIG_FIELD.sub(
        lambda m: f"tutti.init({_INIT_ARGUMENT.get(m.group(1), m.group(1))}=...)", message)


def last_error():
    """This thread's tutti_last_error(), in Python's names."""
    return in_python_terms(_capi.last_error())


def check(status):
    """Raises the status's exception, with last_error(), unless OK."""
    if status != _capi.OK:
        raise error_for(status, last_error() or _capi.lib.tutti_status_string(status).decode())


def invalid(message):
    """The exception for input the binding refuses itself."""
    return TuttiInvalidArgument(_capi.ERR_INVALID_ARGUMENT, message)


def unsupported(message):
    return TuttiUnsupported(_capi.ERR_UNSUPPORTED, message)
