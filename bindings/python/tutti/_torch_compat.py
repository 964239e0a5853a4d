"""Every line of tutti.torch that depends on the torch version, in one place.

A backend is a Python subclass of torch.distributed.ProcessGroup in every torch it
runs on: torch 1.13 (Debian 12's python3-torch, which the tests here run) and 2.x
(tested on a lent GPU machine's torch 2.11 with scripts/gpu-check.sh). torch 2.0 split
the ProcessGroup a user holds from the Backends that do its work, one per device type,
but the Backend class has no constructor that Python can call ("No constructor
defined!"); a creator that returns a ProcessGroup subclass is taken as the whole group
instead (torch's _new_process_group_helper: "If the type is a subclass of ProcessGroup
then return this process group immediately"), as torch's own Python groups
(multi_threaded_pg) are. What differs by version:
  1. WORK_BASE: torch.distributed.Work in 2.x (torch.distributed._Work in 1.13).
  2. register() passes devices=["cpu", "cuda"] to Backend.register_backend in 2.x.
  3. torch 2.x decorates its collectives (c10d_logger's _exception_logger), so the
     function that calls the backend is the one the decorator wraps.
Work.wait(timeout) gets a timedelta in both; NO_TIMEOUT is timedelta(0). Since 2.1, a
Python Work subclass kept only by C++ keeps its Python half alive (py::wrapper), so
tutti.torch's keep-alive list is unnecessary there but harmless.
"""
import datetime
import inspect

import torch
import torch.distributed as dist

VERSION = tuple(int(part) for part in torch.__version__.split("+")[0].split(".")[:2])
MODERN = VERSION >= (2, 0)

PROCESS_GROUP_BASE = dist.ProcessGroup
WORK_BASE = dist.Work if MODERN else dist._Work

# What C++ passes to Work.wait for "no timeout" (c10d's kNoTimeout): 0 ms.
NO_TIMEOUT = datetime.timedelta(0)

# torch.distributed.ReduceOp's members, hashable by their kind in 1.13 and 2.x.
REDUCE_OPS = {name: getattr(dist.ReduceOp, name) for name in
              ("SUM", "PRODUCT", "MIN", "MAX", "AVG", "BAND", "BOR", "BXOR", "PREMUL_SUM")
              if hasattr(dist.ReduceOp, name)}


def reduce_op_kind(op):
    """The kind of a ReduceOp (its RedOpType), as a key: its hash in 1.13 and 2.x.
    Looked up by kind, a ReduceOp costs a hash; by the object, a dict also calls its
    __eq__, which alone took 1.3 us, more than half a small all_reduce's C call."""
    return hash(op)


def register(name, creator):
    """Registers creator(options, pg_options) as backend `name` (extended API: the
    creator gets the group's store, rank, size, timeout, name and global ranks)."""
    if name.upper() in dist.Backend._plugins:
        return
    if MODERN:
        dist.Backend.register_backend(name, creator, extended_api=True, devices=["cpu", "cuda"])
    else:
        dist.Backend.register_backend(name, creator, extended_api=True)


def backend_options(options):
    """(store, rank, size, timeout, group name, global ranks) of the creator's options."""
    return (options.store, options.group_rank, options.group_size, options.timeout,
            options.group_id, list(options.global_ranks_in_group))


# torch.distributed's wrappers that, called with async_op=False, wait on the Work the
# backend returns at once (in 1.13 and 2.x alike). When one of them is the backend's
# caller, tutti.torch runs the operation as one blocking call instead: the same
# result and errors, without an asynchronous Work's hand-off to tutti's loop thread
# and back (about 15 us of an 8-byte all_reduce).
_c10d = dist.distributed_c10d
_WAITING_CALLERS = frozenset(
    inspect.unwrap(getattr(_c10d, name)).__code__ for name in (
        "all_reduce", "reduce", "broadcast", "all_gather", "all_gather_into_tensor",
        "_all_gather_base", "reduce_scatter", "reduce_scatter_tensor", "_reduce_scatter_base",
        "gather", "scatter", "all_to_all", "all_to_all_single", "barrier", "all_reduce_coalesced",
        "all_gather_coalesced")
    if hasattr(_c10d, name))


def caller_waits_at_once(frame):
    """True when frame (the backend method's caller) is a torch.distributed wrapper
    called with async_op=False."""
    return frame.f_code in _WAITING_CALLERS and frame.f_locals.get("async_op") is False
