"""backend="tutti" for torch.distributed: DDP and torch.distributed scripts run on tutti
with one word changed.

    import torch.distributed as dist
    import tutti.torch                      # registers the backend "tutti"
    dist.init_process_group("tutti")        # env://, tcp://, file://, or store=
    model = torch.nn.parallel.DistributedDataParallel(model)

Bootstrap. torch hands each new group (init_process_group, new_group) a store that
every rank of the group reaches. Rank 0 of the group picks a free port on its host
(TUTTI_HOST, else its hostname, as tutti's file:// method does), publishes
"host:port" in that store, and serves tutti's rendezvous there; every rank then joins
with tcp://host:port, its group rank and size (NCCL's unique id, passed the same
way). So any init method torch has works, and tutti's store never binds torch's port.
The group's timeout (init_process_group(timeout=...)) is tutti's operation and
rendezvous timeout. A job secret in TUTTI_SECRET (tutti launch sets one) protects
tutti's store; without one it is as open as torch's own TCPStore.

Tensors: CPU tensors, and CUDA tensors where libtutti has CUDA, one per call (torch's
*_multigpu list forms with several tensors per process are refused), dense,
contiguous, of dtype int8, uint8, int32, int64, float16, bfloat16, float32 or float64
(complex tensors as torch passes them, viewed as real), and float8_e4m3fn and
float8_e5m2 where torch has them (2.1 and later): tutti's FLOAT8_E4M3 and FLOAT8_E5M2,
reduced in float32 and saturated at the largest finite value as NCCL does, where
torch's own casts give NaN or inf. Reductions: SUM, PRODUCT, MIN, MAX, AVG; BAND, BOR,
BXOR and PREMUL_SUM are refused before anything is sent.
all_to_all_single takes split sizes, and all_to_all tensors of different sizes
(tutti_all_to_allv); recv needs a source. Input refused raises
TuttiInvalidArgument or TuttiUnsupported naming the call and the fix; the group stays
usable. Failures (a lost rank, a timeout) raise the tutti exception of the failure,
which is also a RuntimeError, with tutti's message naming the rank.
"""
import atexit
import os
import socket
import sys
import weakref

import torch
import torch.distributed as dist

from . import _torch_compat as compat
from . import comm as _comm_module
from .collectives import ReduceOp
from .comm import connect
from .errors import TuttiError, invalid, unsupported
from ._torch_work import KEEP_FINISHED, Keeper, Work, torch_error

__all__ = ["BACKEND", "ProcessGroupTutti", "Work", "KEEP_FINISHED", "live_works"]

BACKEND = "tutti"

_OPS = {compat.reduce_op_kind(compat.REDUCE_OPS[name]): op for name, op in
        (("SUM", ReduceOp.SUM), ("PRODUCT", ReduceOp.PROD), ("MIN", ReduceOp.MIN),
         ("MAX", ReduceOp.MAX), ("AVG", ReduceOp.AVG)) if name in compat.REDUCE_OPS}
_OP_NAMES = {compat.reduce_op_kind(member): name for name, member in compat.REDUCE_OPS.items()}
_ADDRESS_KEY = "tutti/address"


def _reduce_op(opts, api):
    op = getattr(opts, "reduceOp", None)
    if op is None:
        return ReduceOp.SUM
    kind = compat.reduce_op_kind(op)
    found = _OPS.get(kind)
    if found is None:
        name = _OP_NAMES.get(kind, repr(op))
        raise unsupported(
            f"{api}: ReduceOp.{name} is not supported by backend tutti (it has SUM, PRODUCT, "
            f"MIN, MAX and AVG); use one of those, or a gloo group for {name} "
            f"(dist.new_group(backend=\"gloo\"))")
    return found


def _free_port(host):
    family, kind, proto, _, address = socket.getaddrinfo(host, 0, type=socket.SOCK_STREAM)[0]
    with socket.socket(family, kind, proto) as probe:
        probe.bind(address)
        return probe.getsockname()[1]


def _align_worlds(store, rank, size, timeout):
    """libtutti numbers the worlds a process joins (world.0/, world.1/, ... in the store)
    and expects every rank to join its worlds in the same order; torch creates a group
    only on its members, so ranks left out of one group are a world behind. Each member
    catches up to the group's furthest with one-rank worlds (about 15 ms each).
    TODO(runtime): number worlds per store instead; then this goes."""
    own = _comm_module.inits()
    store.set(f"tutti/inits/{rank}", str(own))
    target = max(int(store.get(f"tutti/inits/{r}")) for r in range(size))
    for _ in range(target - own):
        host = "127.0.0.1"
        connect("tutti.torch", f"tcp://{host}:{_free_port(host)}", 0, 1, timeout, timeout,
                "tutti.torch alignment").destroy()


def _bootstrap(store, rank, size, timeout, name):
    """The group's tutti Comm: rank 0 publishes where its tutti store will listen."""
    api = f"tutti.torch ({name})"
    _align_worlds(store, rank, size, timeout)
    if rank == 0:
        host = os.environ.get("TUTTI_HOST") or socket.gethostname()
        port = _free_port(host)
        address = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        store.set(_ADDRESS_KEY, address)
    else:
        address = store.get(_ADDRESS_KEY).decode()
    return connect(api, f"tcp://{address}", rank, size, timeout, timeout, name)


def _caller_waits():
    """Whether torch's wrapper that called the backend method calling this waits on the
    Work at once (async_op=False): frames are this, the method, _torch_errors' wrapper,
    then torch's."""
    return compat.caller_waits_at_once(sys._getframe(3))


def _torch_errors(method):
    """Raises the tutti errors of a backend method as torch_error does (also RuntimeError)."""
    def call(*args, **kwargs):
        try:
            return method(*args, **kwargs)
        except TuttiError as error:
            raise torch_error(error) from None
    call.__name__ = call.__qualname__ = method.__name__
    call.__doc__ = method.__doc__
    return call


class ProcessGroupTutti(compat.PROCESS_GROUP_BASE):
    """One torch process group on one tutti Comm. Made by torch (init_process_group,
    new_group) through the registered creator; use it through torch.distributed."""

    def __init__(self, store, rank, size, timeout, name="world"):
        super().__init__(rank, size)
        self._comm = connect_or_raise(store, rank, size, timeout, name)
        self._keeper = Keeper(name)
        self._name = name
        self._done = Work.finished("done")  # what blocking calls return
        _GROUPS.add(self)

    # -- what torch asks of every backend --------------------------------------------

    def getBackendName(self):
        return BACKEND

    _get_backend_name = getBackendName

    def name(self):
        return BACKEND

    @property
    def comm(self):
        """The tutti.Comm underneath (tutti's own calls: dump(), set_timeout(), ...)."""
        return self._comm

    def live_works(self):
        """How many Works the group keeps alive now (see tutti._torch_work)."""
        return self._keeper.live()

    def destroy(self):
        """Leaves the group's tutti Comm (again does nothing)."""
        self._keeper.close()
        self._comm.destroy()

    # torch 2.x's destroy_process_group shuts every group down; 1.13 leaves that to exit.
    shutdown = destroy

    # -- collectives -------------------------------------------------------------------

    @_torch_errors
    def allreduce(self, tensors, opts=None):
        api = "torch.distributed.all_reduce"
        blocking = _caller_waits()
        tensor = self._one(tensors, api)
        op = _reduce_op(opts, api)
        return self._work(api, [self._comm.all_reduce(tensor, op, async_op=not blocking)], [tensor])

    @_torch_errors
    def allreduce_coalesced(self, tensors, opts=None):
        api = "torch.distributed.all_reduce_coalesced"
        blocking = _caller_waits()
        op = _reduce_op(opts, api)
        tensors = list(tensors)
        if not tensors:
            raise invalid(f"{api}: tensors is empty; pass at least one tensor")
        flat = torch.cat([t.reshape(-1) for t in tensors]) if len(tensors) > 1 else tensors[0]

        def unflatten():
            offset = 0
            for t in tensors:
                t.view(-1).copy_(flat[offset:offset + t.numel()])
                offset += t.numel()
        return self._work(api, [self._comm.all_reduce(flat, op, async_op=not blocking)], tensors,
                          unflatten if flat is not tensors[0] else None)

    @_torch_errors
    def reduce(self, tensors, opts):
        api = "torch.distributed.reduce"
        blocking = _caller_waits()
        tensor = self._one(tensors, api)
        self._root_tensor(opts, api)
        inner = self._comm.reduce(tensor, opts.rootRank, _reduce_op(opts, api), async_op=not blocking)
        return self._work(api, [inner], [tensor])

    @_torch_errors
    def broadcast(self, tensors, opts):
        api = "torch.distributed.broadcast"
        blocking = _caller_waits()
        tensor = self._one(tensors, api)
        self._root_tensor(opts, api)
        return self._work(api, [self._comm.broadcast(tensor, opts.rootRank, async_op=not blocking)],
                          [tensor])

    @_torch_errors
    def allgather(self, output_tensor_lists, input_tensors, opts=None):
        api = "torch.distributed.all_gather"
        blocking = _caller_waits()
        tensor = self._one(input_tensors, api)
        outputs = self._one(output_tensor_lists, api, "output_tensor_lists")
        return self._work(api, [self._comm.all_gather(list(outputs), tensor, async_op=not blocking)],
                          [list(outputs)])

    @_torch_errors
    def _allgather_base(self, output, input, opts=None):
        api = "torch.distributed.all_gather_into_tensor"
        blocking = _caller_waits()
        return self._work(api, [self._comm.all_gather_into_tensor(output, input, async_op=not blocking)],
                          [output])

    @_torch_errors
    def allgather_coalesced(self, output_lists, input_list, opts=None):
        """output_lists[r][j] = rank r's input_list[j], as torch's all_gather_coalesced."""
        api = "torch.distributed.all_gather_coalesced"
        blocking = _caller_waits()
        if len(output_lists) != self._comm.size() or any(len(o) != len(input_list)
                                                         for o in output_lists):
            raise invalid(f"{api}: output_tensor_lists must hold one list per rank "
                          f"({self._comm.size()}), each with one tensor per input "
                          f"({len(input_list)})")
        inners = [self._comm.all_gather([outputs[j] for outputs in output_lists], tensor,
                                        async_op=not blocking)
                  for j, tensor in enumerate(input_list)]
        return self._work(api, inners, [list(o) for o in output_lists])

    @_torch_errors
    def reduce_scatter(self, output_tensors, input_tensor_lists, opts=None):
        api = "torch.distributed.reduce_scatter"
        blocking = _caller_waits()
        output = self._one(output_tensors, api)
        inputs = self._one(input_tensor_lists, api, "input_tensor_lists")
        inner = self._comm.reduce_scatter(output, list(inputs), _reduce_op(opts, api), async_op=not blocking)
        return self._work(api, [inner], [output])

    @_torch_errors
    def _reduce_scatter_base(self, output, input, opts=None):
        api = "torch.distributed.reduce_scatter_tensor"
        blocking = _caller_waits()
        inner = self._comm.reduce_scatter_tensor(output, input, _reduce_op(opts, api), async_op=not blocking)
        return self._work(api, [inner], [output])

    @_torch_errors
    def gather(self, output_tensor_lists, input_tensors, opts):
        api = "torch.distributed.gather"
        blocking = _caller_waits()
        tensor = self._one(input_tensors, api)
        root = opts.rootRank
        outputs = None
        if self._comm.rank() == root:
            outputs = list(self._one(output_tensor_lists, api, "gather_list"))
        inner = self._comm.gather(tensor, outputs, root, async_op=not blocking)
        return self._work(api, [inner], [outputs] if outputs is not None else [])

    @_torch_errors
    def scatter(self, output_tensors, input_tensor_lists, opts):
        api = "torch.distributed.scatter"
        blocking = _caller_waits()
        output = self._one(output_tensors, api)
        root = opts.rootRank
        inputs = None
        if self._comm.rank() == root:
            inputs = list(self._one(input_tensor_lists, api, "scatter_list"))
        return self._work(api, [self._comm.scatter(output, inputs, root, async_op=not blocking)], [output])

    @_torch_errors
    def alltoall_base(self, output, input, output_split_sizes, input_split_sizes, opts=None):
        api = "torch.distributed.all_to_all_single"
        blocking = _caller_waits()
        # torch passes an empty list for a split it was not given: equal blocks.
        inner = self._comm.all_to_all_single(output, input, list(output_split_sizes) or None,
                                             list(input_split_sizes) or None,
                                             async_op=not blocking)
        return self._work(api, [inner], [output])

    @_torch_errors
    def alltoall(self, output_tensors, input_tensors, opts=None):
        api = "torch.distributed.all_to_all"
        blocking = _caller_waits()
        inner = self._comm.all_to_all(list(output_tensors), list(input_tensors), async_op=not blocking)
        return self._work(api, [inner], list(output_tensors))

    @_torch_errors
    def barrier(self, opts=None):
        api = "torch.distributed.barrier"
        blocking = _caller_waits()
        return self._work(api, [self._comm.barrier(async_op=not blocking)], [])

    @_torch_errors
    def send(self, tensors, dst, tag):
        api = "torch.distributed.send"
        tensor = self._one(tensors, api)
        return self._work(api, [self._comm.isend(tensor, dst, tag)], [tensor])

    @_torch_errors
    def recv(self, tensors, src, tag):
        api = "torch.distributed.recv"
        tensor = self._one(tensors, api)
        return self._work(api, [self._comm.irecv(tensor, src, tag)], [tensor], source=src)

    @_torch_errors
    def recv_anysource(self, tensors, tag):
        raise unsupported(
            "torch.distributed.recv: src is None (any source), but backend tutti receives "
            "from a named rank only; pass src=, or gather who sends first (all_gather)")

    # torch's coalescing manager brackets calls with these: 1.13's batch_isend_irecv
    # for every backend (reqs at the end), 2.x's for a device. tutti's operations are
    # independent already: nothing to coalesce, and nothing left to wait for at the end.
    def _start_coalescing(self, device=None):
        pass

    def _end_coalescing(self, reqs_or_device=None):
        return self._done

    # -- helpers -------------------------------------------------------------------------

    def _one(self, items, api, arg="tensors"):
        """The one tensor (or list) of a call's per-device list."""
        if len(items) != 1:
            raise unsupported(
                f"{api}: {arg} holds {len(items)} entries (one per device), but backend tutti "
                f"takes one device per process; call it with one tensor (not the *_multigpu "
                f"forms), one process per GPU")
        return items[0]

    def _root_tensor(self, opts, api):
        if getattr(opts, "rootTensor", 0) != 0:
            raise unsupported(f"{api}: src_tensor/dst_tensor is {opts.rootTensor}; backend "
                              f"tutti takes one tensor per process (index 0)")

    def _work(self, api, inners, outputs, then=None, source=-1):
        if inners[0] is None:  # ran blocking (caller_waits_at_once): done already
            if then is not None:
                then()
            return self._done
        return self._keeper.track(Work(api, inners, outputs, then, source))


def connect_or_raise(store, rank, size, timeout, name):
    try:
        return _bootstrap(store, rank, size, timeout, name)
    except Exception as error:
        raise torch_error(error) from None


def _create(options, pg_options=None):
    store, rank, size, timeout, group_id, global_ranks = compat.backend_options(options)
    if pg_options is not None:
        raise invalid(f"tutti.torch: pg_options is {pg_options!r}; backend tutti takes none "
                      f"(its settings are TUTTI_* variables: tutti info lists them)")
    name = "world" if not global_ranks else f"group {group_id} (ranks {global_ranks})"
    return ProcessGroupTutti(store, rank, size, timeout, name)


def live_works(group=None):
    """How many Works the group (default: the default group) keeps alive now."""
    pg = group if group is not None else dist.distributed_c10d._get_default_group()
    return pg.live_works()


# torch never destroys a group's backend itself: at exit, tutti's Comms leave cleanly,
# so that no rank sees another's normal exit as a lost rank.
_GROUPS = weakref.WeakSet()


@atexit.register
def _destroy_all():
    for group in list(_GROUPS):
        try:
            group.destroy()
        except Exception:  # at exit, nobody is left to report to
            pass


compat.register(BACKEND, _create)
