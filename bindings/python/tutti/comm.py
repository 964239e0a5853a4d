"""Comm: one tutti_comm, the world's or one made by split, new_group, shrink or grow.

A Comm is destroyed by destroy(), by leaving a `with` block, or when it is collected.
Using it after that raises TuttiInvalidArgument rather than handing the library a
dead pointer. Every operation and Work keeps the Comm alive while it runs.
"""
import ctypes
import os
import sys
import warnings

from . import _buffers, _capi
from .collectives import Collectives, int32
from .errors import check, error_for, invalid, last_error
from .work import Work, timeout_ms


def connect(api, init_method=None, rank=None, world_size=None, timeout=None, init_timeout=None,
            name=None, trace=None, join=False):
    """A new Comm from tutti_comm_init, or tutti_comm_join when join: tutti.init's
    arguments (None: the environment's), messages naming `api`. Collective over every
    rank of the job it joins."""
    config = _capi.tutti_config()
    check(_capi.lib.tutti_config_init(config, ctypes.sizeof(config)))
    if init_method is not None:
        config.init_method = str(init_method).encode()
    if rank is not None:
        config.rank = int32(rank, api, "rank")
    if world_size is not None:
        config.world_size = int32(world_size, api, "world_size")
    if timeout is not None:
        config.op_timeout_ms = timeout_ms(timeout, api)
    if init_timeout is not None:
        config.init_timeout_ms = timeout_ms(init_timeout, api)
    if name is not None:
        config.name = str(name).encode()
    if trace is not None:
        config.trace = os.fspath(trace).encode()
    handle = _capi.comm_p()
    if join:  # a joiner meets under its grow's keys: no world of its own is numbered
        check(_capi.lib.tutti_comm_join(config, ctypes.byref(handle)))
        return Comm(handle)
    status = _capi.lib.tutti_comm_init(config, ctypes.byref(handle))
    global _inits
    if status != _capi.ERR_INVALID_ARGUMENT:  # past the plan: the library counted it
        _inits += 1
    check(status)
    return Comm(handle)


# How many tutti_comm_init calls of this process reached the rendezvous: the library
# numbers each process's worlds in that order (their keys in the store), which
# tutti.torch keeps equal across the ranks of each group it makes.
_inits = 0


def inits():
    return _inits


class Comm(Collectives):
    """A communicator: rank(), size(), the collectives (see tutti.collectives), split()."""

    def __init__(self, handle):
        self._handle = handle
        self._orphans = []  # (tutti_work*, owners, on_success, api) of Works dropped while running
        self._cuda_device = None  # the index of the GPU of the first CUDA tensor
        # The cudaStream_t last given to tutti_comm_set_stream; 0, torch's default stream,
        # stands for the library's default, a stream of the comm's own that waits for it.
        self._stream = 0
        self._rank = self._place(_capi.lib.tutti_comm_rank, "rank")
        self._size = self._place(_capi.lib.tutti_comm_size, "size")

    def rank(self):
        """This rank's place in the communicator, 0 to size() - 1."""
        self._live("tutti.Comm.rank")
        return self._rank

    def size(self):
        """The number of ranks in the communicator."""
        self._live("tutti.Comm.size")
        return self._size

    def local_rank(self):
        """This rank's place among the communicator's ranks on the same node."""
        return self._place(_capi.lib.tutti_comm_local_rank, "local_rank")

    def local_size(self):
        """How many of the communicator's ranks share this node."""
        return self._place(_capi.lib.tutti_comm_local_size, "local_size")

    def node_rank(self):
        """This node's index among the communicator's nodes (ordered by lowest rank)."""
        return self._place(_capi.lib.tutti_comm_node_rank, "node_rank")

    def split(self, color, key=None):
        """A new Comm of the ranks passing the same color, ordered by key (default: the
        rank here), as MPI_Comm_split; None for a rank passing color None. Collective."""
        api = "tutti.Comm.split"
        color = _capi.UNDEFINED if color is None else int32(color, api, "color")
        if color < 0 and color != _capi.UNDEFINED:
            raise invalid(f"{api}: color is {color}; pass a color >= 0, or None to join no group")
        key = self._rank if key is None else int32(key, api, "key")
        out = _capi.comm_p()
        check(_capi.lib.tutti_comm_split(self._live(api), color, key, ctypes.byref(out)))
        return Comm(out) if out.value else None

    def shrink(self):
        """After TuttiPeerLost: a new Comm of the ranks still alive, in order. Every
        survivor must call it; this Comm must still be destroyed."""
        out = _capi.comm_p()
        check(_capi.lib.tutti_comm_shrink(self._live("tutti.Comm.shrink"), ctypes.byref(out)))
        return Comm(out)

    def grow(self, count):
        """A new Comm of this one's ranks, keeping their numbers, and the next count
        processes that call tutti.join(), ranks size() and up in the order they came
        (tutti_comm_grow). Every rank must call it with the same count; on failure (a
        joiner that never comes, within the timeout) this Comm stays usable."""
        api = "tutti.Comm.grow"
        count = int32(count, api, "count")
        out = _capi.comm_p()
        check(_capi.lib.tutti_comm_grow(self._live(api), count, ctypes.byref(out)))
        return Comm(out)

    def mem_alloc(self, nbytes):
        """nbytes of host memory that every rank of the Comm on this node maps
        (tutti_mem_alloc), as a writable memoryview: large collectives of arrays over
        it read the other ranks' arrays in place, one copy instead of two (reductions:
        one pass instead of three). Collective: every rank, the same nbytes.
        numpy.frombuffer(view, dtype) or torch.frombuffer(view, dtype=...) make arrays
        over it; it stays valid until mem_free or the Comm's destruction."""
        api = "tutti.Comm.mem_alloc"
        if isinstance(nbytes, bool) or not isinstance(nbytes, int) or nbytes < 1:
            raise invalid(f"{api}: nbytes is {nbytes!r}; pass a number of bytes >= 1")
        address = ctypes.c_void_p()
        check(_capi.lib.tutti_mem_alloc(self._live(api), nbytes, ctypes.byref(address)))
        return memoryview((ctypes.c_ubyte * nbytes).from_address(address.value))

    def mem_free(self, view):
        """Frees what mem_alloc returned: every rank, at the same point of its
        collectives. Arrays over it must not be used after."""
        api = "tutti.Comm.mem_free"
        memory = view.obj if isinstance(view, memoryview) else None
        if not isinstance(memory, ctypes.Array):
            raise invalid(f"{api}: got {type(view).__name__}; pass the memoryview mem_alloc returned")
        check(_capi.lib.tutti_mem_free(self._live(api), ctypes.addressof(memory)))

    def set_timeout(self, timeout):
        """How long each later operation may take: seconds or a timedelta."""
        api = "tutti.Comm.set_timeout"
        ms = timeout_ms(timeout, api)
        if ms < 0:
            raise invalid(f"{api}: timeout is None; pass seconds or a timedelta")
        check(_capi.lib.tutti_comm_set_op_timeout(self._live(api), ms))

    def dump(self, file=None):
        """Writes why the Comm is unusable, if it is, and its recent collectives to
        file (default sys.stderr), which must have a file descriptor."""
        file = sys.stderr if file is None else file
        file.flush()
        check(_capi.lib.tutti_comm_dump(self._live("tutti.Comm.dump"), file.fileno()))

    def abort(self):
        """Fails every pending and later operation with TuttiAborted; any thread may call
        it. The Comm must still be destroyed."""
        check(_capi.lib.tutti_comm_abort(self._live("tutti.Comm.abort")))

    def destroy(self):
        """Releases the communicator; later use raises. Destroying twice does nothing.
        Not collective, but the rank hosting the rendezvous waits (bounded) for the
        others to leave."""
        handle, self._handle = self._handle, None
        if handle is None:
            return
        status = _capi.lib.tutti_comm_destroy(handle)
        # The runtime has finished or failed every operation of the comm by now.
        orphans, self._orphans = self._orphans, []
        for orphan in orphans:
            _settle(orphan)
        check(status)

    @property
    def destroyed(self):
        return self._handle is None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.destroy()

    def __repr__(self):
        if self._handle is None:
            return "<tutti.Comm (destroyed)>"
        return f"<tutti.Comm (rank {self._rank} of {self._size})>"

    def __del__(self):
        if getattr(self, "_handle", None) is not None:
            try:
                self.destroy()
            except Exception:  # an exception raised in __del__ reaches nobody
                pass

    def _live(self, api):
        if self._handle is None:
            raise invalid(f"{api}: attempt to use a destroyed tutti.Comm; make a new one "
                          f"(tutti.init, split, new_group) and use that")
        return self._handle

    def _rank_for(self, api):
        """rank(), with a destroyed Comm reported as api's error."""
        self._live(api)
        return self._rank

    def _size_for(self, api):
        self._live(api)
        return self._size

    def _place(self, getter, what):
        value = ctypes.c_int32()
        check(getter(self._live(f"tutti.Comm.{what}"), ctypes.byref(value)))
        return value.value

    def _device(self, api, *named):
        """The CUDA device of a call's Buffers (None: host memory), refusing a mix; on a
        GPU, readies the Comm for it and enqueues its calls on the current stream."""
        device = _buffers.same_device(api, *named)
        if device is None:
            return None
        handle = self._live(api)
        if self._cuda_device is None:
            # A Comm made before CUDA was in use treats every address as host memory
            # until told otherwise.
            status = _capi.lib.tutti_comm_set_memory(handle, _capi.MEMORY_AUTO)
            if status == _capi.OK:
                status = _capi.lib.tutti_comm_set_device(handle, device.index)
            if status != _capi.OK:
                raise error_for(status, f"{api}: {named[0][0]} is on {device}, but "
                                        f"{last_error()}")
            self._cuda_device = device.index
        elif device.index != self._cuda_device:
            raise invalid(
                f"{api}: {named[0][0]} is on {device}, but this Comm works on "
                f"cuda:{self._cuda_device}, the device of the first CUDA tensor it was given; "
                f"keep a Comm's CUDA tensors on one GPU (torch.cuda.set_device(local_rank) "
                f"before making them), or make another Comm (new_group, split) for {device}")
        stream = sys.modules["torch"].cuda.current_stream(device).cuda_stream
        if stream != self._stream:
            check(_capi.lib.tutti_comm_set_stream(handle, stream))
            self._stream = stream
        return device

    def _issue(self, api, function, args, owners, async_op, on_success=None, device=None):
        handle = self._live(api)
        self._reap()
        if not async_op:
            check(function(handle, *args, None))
            if on_success is not None:
                on_success()
            # Operations before this one have finished too.
            self._reap()
            return None
        work = _capi.work_p()
        check(function(handle, *args, ctypes.byref(work)))
        return Work(self, work, owners, on_success, api, device)

    def _adopt(self, work, owners, on_success, api):
        """Takes a running Work's handle, buffers and output lists when the Work is dropped."""
        orphan = (work, owners, on_success, api)
        if self._handle is None:
            _settle(orphan)
        else:
            self._orphans.append(orphan)

    def _reap(self):
        """Finishes the dropped Works whose operations have ended."""
        if not self._orphans:  # the common case, on every call: nothing to allocate
            return
        done = ctypes.c_int(0)
        still = []
        for orphan in self._orphans:
            _capi.lib.tutti_work_test(orphan[0], ctypes.byref(done))
            if done.value:
                _settle(orphan)
            else:
                still.append(orphan)
        self._orphans = still


def _settle(orphan):
    """Finishes a dropped Work whose operation has ended: fills its output lists, or
    warns of its failure, which nobody is left to raise; then releases it. Its buffers
    (owners) were held until now by the tuple itself."""
    work, _owners, on_success, api = orphan
    status = _capi.lib.tutti_work_wait(work, 0)
    if status == _capi.OK:
        if on_success is not None:
            on_success()
    else:
        warnings.warn(f"{api}, whose Work was dropped before it finished, failed: "
                      f"{error_for(status, last_error())}", RuntimeWarning, stacklevel=2)
    _capi.lib.tutti_work_release(work)
