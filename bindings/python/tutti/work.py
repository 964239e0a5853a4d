"""Work: an operation in flight, as torch.distributed's async_op=True returns it.

A Work owns one tutti_work and every buffer of its operation: the caller's tensors and
the binding's scratch memory for lists. The buffers stay referenced until the library
says the operation finished, whatever the caller drops meanwhile, because the library
writes into them until then. A Work dropped before it finished hands its handle and
buffers to its Comm, which finishes it once the operation ends (Comm._reap): output
lists (all_gather's tensor_list, gather, all_to_all) are filled then, at the latest
when a later blocking call or wait on that Comm returns (operations on a Comm finish
in the order they were issued), and a failure is reported as a RuntimeWarning, since
nobody is left to raise it to.

On CUDA tensors there are two ways to wait, one line each:
  wait()         blocks the host until the GPU has finished the operation (bounded), then
                 fills output lists on the current stream: safe wherever the result is read.
  wait_stream()  makes a stream (default: the current one) wait for the operation on the
                 GPU and fills output lists on it; the host goes on at once (torch's
                 ProcessGroupNCCL Work.wait()).
"""
import ctypes
import datetime
import sys

from . import _capi
from .errors import TuttiTimeout, check, error_for, invalid, last_error


def timeout_ms(timeout, api):
    """Milliseconds for the C API from None (-1: the default), seconds, or a timedelta."""
    if timeout is None:
        return -1
    if isinstance(timeout, datetime.timedelta):
        seconds = timeout.total_seconds()
    elif isinstance(timeout, (int, float)) and not isinstance(timeout, bool):
        seconds = float(timeout)
    else:
        raise invalid(f"{api}: timeout is {timeout!r} (a {type(timeout).__name__}); pass seconds (a number) "
                      f"or a datetime.timedelta, or None for the operation's own timeout")
    if not seconds >= 0:
        raise invalid(f"{api}: timeout is {timeout!r}; pass a duration >= 0, or None for the "
                      f"operation's own timeout")
    return int(seconds * 1000)


class Work:
    """An asynchronous operation. Wait for it before touching its tensors."""

    def __init__(self, comm, handle, owners, on_success, api, device=None):
        self._comm = comm
        self._handle = handle
        self._owners = owners
        self._on_success = on_success
        self._api = api
        self._device = device  # the torch.device of a CUDA operation, None on the host
        self._error = None

    def wait(self, timeout=None):
        """Waits for the operation; returns True once it succeeded, as torch's does.

        timeout: seconds or a timedelta; None waits up to the operation's own timeout
        (tutti.init's timeout). Past `timeout` this raises TuttiTimeout and the operation
        goes on: wait again, or check is_completed(). A failed operation raises its
        error (TuttiPeerLost, TuttiMismatch, ...), at every wait."""
        if self._handle is not None:
            ms = timeout_ms(timeout, "tutti.Work.wait")
            status = _capi.lib.tutti_work_wait(self._handle, ms)
            if status == _capi.INPROGRESS:
                # This wait's own time ran out, not the operation's: torch raises here
                # too, and the operation goes on.
                raise TuttiTimeout(_capi.ERR_TIMEOUT, last_error())
            self._finish(status)
        if self._error is not None:
            raise self._error
        return True

    def wait_stream(self, stream=None):
        """Makes `stream` (a torch.cuda.Stream; None: the current stream of the operation's
        GPU) wait for the operation without blocking the host, and fills output lists on
        it; returns True. Wait before reading results on another stream or on the host.
        The Work still holds the operation's tensors until it finishes. A host operation
        is waited for as wait() does. An operation already failed raises its error."""
        api = "tutti.Work.wait_stream"
        if self._device is None:
            return self.wait()
        torch = sys.modules["torch"]
        if stream is None:
            stream = torch.cuda.current_stream(self._device)
        elif not hasattr(stream, "cuda_stream"):
            raise invalid(f"{api}: stream is {stream!r}; pass a torch.cuda.Stream, or None for "
                          f"the current stream of {self._device}")
        if self._handle is not None:
            check(_capi.lib.tutti_work_wait_stream(self._handle, stream.cuda_stream))
        if self._error is not None:
            raise self._error
        if self._on_success is not None:
            with torch.cuda.stream(stream):
                self._on_success()
            self._on_success = None
        return True

    def is_completed(self):
        """True once the operation has finished, successfully or not (wait then says which)."""
        if self._handle is None:
            return True
        if not self._finished():
            return False
        self._finish(_capi.lib.tutti_work_wait(self._handle, 0))
        return True

    def __repr__(self):
        if self._handle is not None:
            return f"<tutti.Work {self._api} (running)>"
        return f"<tutti.Work {self._api} ({'failed' if self._error else 'done'})>"

    def _finished(self):
        done = ctypes.c_int(0)
        check(_capi.lib.tutti_work_test(self._handle, ctypes.byref(done)))
        return bool(done.value)

    def _finish(self, status):
        # The message belongs to this thread's last failure: read it before anything else
        # can fail and overwrite it.
        if status != _capi.OK:
            self._error = error_for(status, last_error())
        _capi.lib.tutti_work_release(self._handle)
        self._handle = None
        if status == _capi.OK and self._on_success is not None:
            self._on_success()
        self._owners = self._on_success = None
        # Operations before this one on the Comm have finished too.
        self._comm._reap()

    def __del__(self):
        if getattr(self, "_handle", None) is not None:
            self._comm._adopt(self._handle, self._owners, self._on_success, self._api)
