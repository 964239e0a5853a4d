"""tutti: collective communication for Python processes, over libtutti's C ABI.

It reads like torch.distributed:

    import numpy, tutti
    tutti.init()                       # rank, world size, rendezvous: from tutti launch,
                                       # torchrun, Slurm, Open MPI or PMI variables
    x = numpy.full(4, tutti.rank(), dtype=numpy.float32)
    tutti.all_reduce(x, op="max")      # in place, every rank
    work = tutti.broadcast(x, src=0, async_op=True)
    work.wait(timeout=10)
    tutti.destroy()                    # also done at exit

Run it as `tutti launch -n 4 -- python3 script.py`, or under srun or mpirun. Buffers
are PyTorch CPU or CUDA tensors, NumPy arrays, or anything with __array_interface__ or
the buffer protocol (bytearray, array.array), contiguous, of dtype int8, uint8, int32,
int64, float16, bfloat16 (tensors), float32, float64, or float8_e4m3fn and float8_e5m2
(tensors of torch 2.1 and later). Every collective takes
group= (a Comm from new_group or Comm.split; default the world) and async_op=.
Failures raise TuttiError subclasses (TuttiTimeout, TuttiPeerLost, TuttiMismatch, ...)
with the status and a message that says what, where and how to fix it.

Layers: _capi (tutti.h, literally), then comm, collectives, work and errors.
`import tutti.torch` registers backend "tutti" with torch.distributed (docs/torch.md).
"""
import atexit

from . import _capi
from .collectives import Collectives, ReduceOp, int32
from .comm import Comm, connect
from .errors import (TuttiAborted, TuttiDenied, TuttiError, TuttiInternal,
                     TuttiInvalidArgument, TuttiMismatch, TuttiNoMemory, TuttiPeerLost,
                     TuttiTimeout, TuttiTransportError, TuttiUnsupported, invalid)
from .work import Work

__all__ = [
    "init", "join", "is_initialized", "destroy", "world", "rank", "world_size", "get_rank",
    "get_world_size", "local_rank", "local_size", "node_rank", "new_group", "split",
    "all_reduce", "reduce", "broadcast", "all_gather", "all_gather_into_tensor",
    "reduce_scatter", "reduce_scatter_tensor", "gather", "scatter", "all_to_all",
    "all_to_all_single", "barrier", "send", "recv", "isend", "irecv", "version",
    "Comm", "Work", "ReduceOp", "TuttiError", "TuttiInvalidArgument", "TuttiTimeout",
    "TuttiPeerLost", "TuttiMismatch", "TuttiAborted", "TuttiTransportError",
    "TuttiUnsupported", "TuttiNoMemory", "TuttiDenied", "TuttiInternal",
]

_world = None


def version():
    """The library's version, e.g. "0.1.0"."""
    return _capi.lib.tutti_version_string().decode()


def init(init_method=None, rank=None, world_size=None, timeout=None, init_timeout=None,
         name=None, trace=None):
    """Joins the job and returns the world Comm; collective over every rank.

    Every argument defaults to the environment, as tutti_comm_init reads it:
    init_method "tcp://HOST:PORT", "file:///PATH" or "env://" (TUTTI_INIT_METHOD, else
    env://, the launcher's variables); rank and world_size (the launcher's); timeout,
    how long each operation may take (seconds or a timedelta; TUTTI_OP_TIMEOUT_MS, else
    300 s); init_timeout, how long the rendezvous may take (TUTTI_INIT_TIMEOUT_MS, else
    120 s); name, the communicator's name in messages ("world"); trace, a folder where
    this process writes a timeline of its operations (TUTTI_TRACE, which wins; docs/trace.md)."""
    global _world
    api = "tutti.init"
    if _world is not None:
        raise invalid(f"{api}: tutti is already initialised ({_world!r}); call tutti.destroy() "
                      f"first to join another job")
    _world = connect(api, init_method, rank, world_size, timeout, init_timeout, name, trace)
    return _world


def join(init_method=None, timeout=None, init_timeout=None, trace=None):
    """Joins a running job as a new rank (tutti_comm_join), where init() would start
    one: waits until the job's ranks call Comm.grow, and returns the grown Comm, which
    becomes this process's world. Under tutti launch --restart, a restarted rank has
    TUTTI_JOIN=1 and calls this instead of init(). init_method defaults to the
    environment's store address (TUTTI_ADDR); init_timeout bounds the wait for a grow,
    timeout each operation; trace as init's."""
    global _world
    api = "tutti.join"
    if _world is not None:
        raise invalid(f"{api}: tutti is already initialised ({_world!r}); call tutti.destroy() first")
    _world = connect(api, init_method, None, None, timeout, init_timeout, None, trace, join=True)
    return _world


def is_initialized():
    """True between init() and destroy()."""
    return _world is not None


def destroy():
    """Destroys the world Comm (torch's destroy_process_group); init() may follow."""
    global _world
    world_comm, _world = _world, None
    if world_comm is not None:
        world_comm.destroy()


atexit.register(destroy)


def world():
    """The world Comm that init() made."""
    if _world is None:
        raise invalid("tutti: not initialised; call tutti.init() first (it reads the "
                      "launcher's environment: run under tutti launch, torchrun, srun or mpirun)")
    return _world


def _group(group):
    return world() if group is None else group


def rank(group=None):
    """This rank in group (default the world)."""
    return _group(group).rank()


def world_size(group=None):
    """The number of ranks in group (default the world)."""
    return _group(group).size()


# torch.distributed's spellings.
get_rank = rank
get_world_size = world_size


def local_rank(group=None):
    """This rank's place among group's ranks on this node."""
    return _group(group).local_rank()


def local_size(group=None):
    """How many of group's ranks run on this node."""
    return _group(group).local_size()


def node_rank(group=None):
    """This node's index among group's nodes."""
    return _group(group).node_rank()


def split(color, key=None, group=None):
    """Comm.split on group (default the world): a Comm of the ranks with this color."""
    return _group(group).split(color, key)


def new_group(ranks=None, group=None):
    """A Comm of the given ranks of group (default the world), in the order given, as
    torch's new_group; None on the ranks not in it. Every rank of group must call it,
    with the same list."""
    parent = _group(group)
    if ranks is None:
        ranks = range(parent.size())
    ranks = [int32(r, "tutti.new_group", "ranks") for r in ranks]
    if len(set(ranks)) != len(ranks) or any(not 0 <= r < parent.size() for r in ranks):
        raise invalid(f"tutti.new_group: ranks {ranks} must be distinct ranks of a "
                      f"communicator of {parent.size()}; pass each rank in [0, "
                      f"{parent.size() - 1}] once")
    here = parent.rank()
    if here not in ranks:
        return parent.split(None)
    return parent.split(0, ranks.index(here))


def _world_function(name):
    method = getattr(Collectives, name)

    def function(*args, group=None, **kwargs):
        return method(_group(group), *args, **kwargs)

    function.__name__ = function.__qualname__ = name
    function.__doc__ = (method.__doc__ or "") + "\n\nOn group (a Comm), else on the world."
    return function


for _name in ("all_reduce", "reduce", "broadcast", "all_gather", "all_gather_into_tensor",
              "reduce_scatter", "reduce_scatter_tensor", "gather", "scatter", "all_to_all",
              "all_to_all_single", "barrier", "send", "recv", "isend", "irecv"):
    globals()[_name] = _world_function(_name)
del _name
