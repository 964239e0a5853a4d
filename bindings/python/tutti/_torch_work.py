"""The Work that backend "tutti" hands torch, and how long it lives.

A Work wraps the tutti.Work(s) of one torch call, plus what torch reads from it: the
output tensors (result(), the future's value) and a step to run once the operation
succeeded (copying a coalesced buffer back, say).

Lifetime. torch 1.13 keeps a Python Work subclass only as a C++ pointer when C++
called the backend (DDP's reducer, _verify_params_across_processes,
_broadcast_coalesced): once the Python object is collected, C++ calls reach the base
class, whose wait() blocks forever. So every Work stays referenced by its process group
(`Keeper`) until it has finished and then either has been observed (wait(),
is_completed() returning True, get_future()) or is older than KEEP_FINISHED later
operations of the group. At most KEEP_FINISHED finished Works stay alive per group,
each without its tensors or its tutti handle, and no Work stays forever.

Futures. get_future() returns a torch.futures.Future completed by the group's
completion thread (one per group, started at the first get_future), which waits for
the group's operations in the order they were issued (the order they finish in) and
sets each future's result or exception; then-callbacks run on that thread. Calls
without a future never touch the thread.
"""
import collections
import datetime
import queue
import threading

import torch

from . import _capi, _torch_compat as compat
from .errors import TuttiError, TuttiTimeout, invalid

KEEP_FINISHED = 256

_FLAVOURS = {}


def torch_error(error):
    """error as raised to torch code: its tutti class and RuntimeError too (torch's
    backends raise RuntimeError, and DDP and users catch that)."""
    if isinstance(error, RuntimeError) or not isinstance(error, TuttiError):
        return error
    cls = type(error)
    flavour = _FLAVOURS.get(cls)
    if flavour is None:
        # A module attribute, so that pickle (which torch applies to future values) finds it.
        flavour = _FLAVOURS[cls] = type(cls.__name__, (cls, RuntimeError), {"__module__": __name__})
        globals()[cls.__name__] = flavour
    raised = flavour(error.status, error.message)
    raised.__cause__ = error.__cause__
    return raised


def seconds(timeout, api):
    """None for "no timeout of the wait's own" (None or torch's kNoTimeout, 0), else
    seconds from a timedelta or a number."""
    if timeout is None or timeout == compat.NO_TIMEOUT or timeout == 0:
        return None
    if isinstance(timeout, datetime.timedelta):
        return timeout.total_seconds()
    if isinstance(timeout, (int, float)) and not isinstance(timeout, bool) and timeout > 0:
        return float(timeout)
    raise invalid(f"{api}: timeout is {timeout!r}; pass a datetime.timedelta (or seconds), "
                  f"or nothing to wait up to the group's timeout")


class Work(compat.WORK_BASE):
    """torch.distributed's Work for backend "tutti": wait(timeout), is_completed(),
    is_success(), exception(), result(), source_rank(), get_future(), synchronize()."""

    def __init__(self, api, inners, outputs, then=None, source=-1):
        super().__init__()
        self._api = api
        self._inners = inners      # tutti.Work list; None once finished
        self._outputs = outputs    # tensors: result() and the future's value
        self._then = then          # run once after success, before the Work counts as done
        self._source = source
        self._lock = threading.Lock()
        self._done = False
        self._error = None
        self._future = None
        self._future_set = False
        self._event = None         # set when done, once a future was asked for
        self._observed = False
        self._seq = 0

    @classmethod
    def finished(cls, api):
        """A Work already done: what an operation run blocking returns."""
        work = cls(api, None, [])
        work._done = work._observed = True
        return work

    # -- torch's methods --------------------------------------------------------------

    def wait(self, timeout=compat.NO_TIMEOUT):
        self._observed = True
        if not self._done:
            limit = seconds(timeout, f"{self._api} Work.wait")
            if self._event is not None:
                if not self._event.wait(limit):
                    raise self._wait_timeout(limit)
            else:
                with self._lock:
                    if not self._done:
                        self._finish(limit)
                self._settle_future()
        if self._error is not None:
            raise self._error
        return True

    def is_completed(self):
        if not self._done and self._poll():
            self._settle_future()
        if self._done:
            self._observed = True
        return self._done

    def is_success(self):
        return self.is_completed() and self._error is None

    def exception(self):
        return self._error if self.is_completed() else None

    def result(self):
        self.wait()
        return self._outputs

    def source_rank(self):
        self.wait()
        return self._source

    _source_rank = source_rank

    def synchronize(self):
        pass

    def get_future(self):
        self._observed = True
        start = False
        with self._lock:
            if self._future is None:
                # The future C++ sees is a then() of the one completed here: an exception
                # raised in a then-callback marks it failed the way C++ callers (DDP's
                # reducer) check, where set_exception would only hand them a value.
                self._source_future = torch.futures.Future()
                self._future = self._source_future.then(_value)
                if not self._done:
                    self._event = threading.Event()
                    start = True
        if start:
            self._keeper.completer().submit(self)
        else:
            self._settle_future()
        return self._future

    def __repr__(self):
        state = "running" if not self._done else ("failed" if self._error else "done")
        return f"<tutti.torch.Work {self._api} ({state})>"

    # -- completion -------------------------------------------------------------------

    def _finish(self, limit):
        """Waits (up to limit seconds; None: the operation's own timeout) for every
        inner Work; holding _lock. A wait that runs out leaves the Work running."""
        try:
            for inner in self._inners:
                try:
                    inner.wait(limit)
                except TuttiTimeout:
                    if inner._handle is not None:  # this wait ran out; the operation goes on
                        raise self._wait_timeout(limit) from None
                    raise
            if self._then is not None:
                self._then()
        except TuttiError as error:
            if isinstance(error, TuttiTimeout) and getattr(error, "_wait_only", False):
                raise
            self._error = torch_error(error)
            self._error.__cause__ = None
        except Exception as error:  # a then-step that failed
            self._error = error
        self._inners = self._then = None
        if self._error is not None:
            self._outputs = []
        self._done = True
        if self._event is not None:
            self._event.set()

    def _wait_timeout(self, limit):
        error = torch_error(TuttiTimeout(
            _capi.ERR_TIMEOUT, f"{self._api}: Work.wait(timeout={limit} s) ran out before the operation "
                f"finished; it goes on: wait again, or check is_completed()"))
        error._wait_only = True
        return error

    def _poll(self):
        """True once finished, finishing it if the operation ended; never blocks."""
        if self._done:
            return True
        if self._event is not None or not self._lock.acquire(False):
            return False
        try:
            if not self._done and all(inner.is_completed() for inner in self._inners):
                self._finish(0)
        finally:
            self._lock.release()
        return self._done

    def _settle_future(self):
        """Completes the future, once, after the Work finished."""
        with self._lock:
            if self._future is None or self._future_set or not self._done:
                return
            self._future_set = True
        if self._error is not None:
            self._source_future.set_exception(self._error)
        else:
            self._source_future.set_result(self._outputs)


def _value(future):
    return future.value()  # raises the operation's error, failing the future it feeds


class Completer:
    """A group's completion thread: finishes Works that have futures, in order."""

    def __init__(self, name):
        self._queue = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name=f"tutti.torch {name}", daemon=True)
        self._thread.start()

    def submit(self, work):
        self._queue.put(work)

    def stop(self):
        self._queue.put(None)
        self._thread.join(timeout=5)

    def _run(self):
        while True:
            work = self._queue.get()
            if work is None:
                return
            with work._lock:
                if not work._done:
                    work._finish(None)
            work._settle_future()


class Keeper:
    """Keeps a group's Works alive while C++ may still call them (see the module's
    docstring), and owns the group's completion thread."""

    def __init__(self, name):
        self._name = name
        self._pending = collections.deque()   # not yet seen finished, in issue order
        self._finished = collections.deque()  # finished, kept until observed or old
        self._seq = 0
        self._completer = None

    def track(self, work):
        self._seq += 1
        work._seq = self._seq
        work._keeper = self
        self._prune()
        self._pending.append(work)
        return work

    def _prune(self):
        pending, finished = self._pending, self._finished
        while pending and pending[0]._poll():
            finished.append(pending.popleft())
        while finished and (finished[0]._observed or self._seq - finished[0]._seq > KEEP_FINISHED):
            finished.popleft()

    def live(self):
        """How many Works the group keeps alive now."""
        self._prune()
        return len(self._pending) + len(self._finished)

    def completer(self):
        if self._completer is None:
            self._completer = Completer(self._name)
        return self._completer

    def close(self):
        if self._completer is not None:
            self._completer.stop()
            self._completer = None
        self._pending.clear()
        self._finished.clear()
