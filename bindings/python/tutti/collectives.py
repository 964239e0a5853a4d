"""The collectives and point-to-point calls, with torch.distributed's names and
arguments, as methods of every Comm (tutti.all_reduce and the others call them on the
world, or on group=):

    all_reduce(tensor, op="sum")              reduce(tensor, dst, op="sum")
    broadcast(tensor, src)                    barrier()
    all_gather(tensor_list, tensor)           all_gather_into_tensor(output, input)
    reduce_scatter(output, input_list, op)    reduce_scatter_tensor(output, input, op)
    gather(tensor, gather_list=None, dst=0)   scatter(tensor, scatter_list=None, src=0)
    all_to_all(output_list, input_list)       all_to_all_single(output, input,
                                                  output_split_sizes, input_split_sizes)
    send(tensor, dst, tag=0)   recv(tensor, src, tag=0)   isend(...)   irecv(...)

Results land in the tensors given, in place, as in torch; reduce leaves the tensors of
the ranks other than dst as they were. op is "sum", "prod", "min", "max" or "avg", a
tutti.ReduceOp, or torch.distributed.ReduceOp's member of that name. async_op=True
returns a Work (isend and irecv always do); otherwise the call blocks, at most the
communicator's timeout, and returns None. gather_list and scatter_list are read on the
root only. The *_list forms pack and unpack through scratch memory of their own; the
*_tensor and *_single forms use the caller's memory directly.

CUDA tensors go to the library as device pointers; one call's tensors must all be on
the host or all on one GPU, and a Comm works on the GPU of the first CUDA tensor it is
given. Each call is enqueued on torch.cuda.current_stream() of that GPU, after the work
already queued there, as torch's NCCL backend orders it; a blocking call returns once
the GPU has finished it. Lists are packed and unpacked by torch on that stream.
"""
import ctypes
import enum
import operator
import sys

from . import _buffers, _capi
from .errors import invalid


class ReduceOp(enum.IntEnum):
    """The reductions of tutti.h (TUTTI_OP_*)."""

    SUM = _capi.OP_SUM
    PROD = _capi.OP_PROD
    MIN = _capi.OP_MIN
    MAX = _capi.OP_MAX
    AVG = _capi.OP_AVG


_OPS = {"sum": ReduceOp.SUM, "prod": ReduceOp.PROD, "product": ReduceOp.PROD,
        "min": ReduceOp.MIN, "max": ReduceOp.MAX, "avg": ReduceOp.AVG}


def reduce_op(op, api):
    """The TUTTI_OP_* value of op: a name, a tutti.ReduceOp, or torch's ReduceOp member."""
    if isinstance(op, ReduceOp):
        return int(op)
    value = _OPS.get(op.lower()) if isinstance(op, str) else _torch_op(op)
    if value is None:
        raise invalid(f"{api}: op is {op!r}; pass \"sum\", \"prod\", \"min\", \"max\" or "
                      f"\"avg\", or a tutti.ReduceOp")
    return int(value)


def _torch_op(op):
    # torch.distributed.ReduceOp's members are objects that compare equal to themselves
    # only (no name, no int), so each is looked up by equality. A plain int is refused:
    # its meaning would be a guess.
    dist = sys.modules.get("torch.distributed")
    if dist is None or isinstance(op, int):
        return None
    for name, value in _OPS.items():
        member = getattr(dist.ReduceOp, name.upper(), None)
        if member is not None and op == member:
            return value
    return None


def int32(value, api, arg):
    """value as a C int32, or a clear error for a non-integer or one out of range."""
    if isinstance(value, bool) or not hasattr(value, "__index__"):
        raise invalid(f"{api}: {arg} is {value!r}; pass an integer rank")
    value = value.__index__()
    if not -2**31 <= value < 2**31:
        raise invalid(f"{api}: {arg} is {value}, outside int32; pass a rank of the communicator")
    return value


def _list(items, api, arg, writable, size):
    if not isinstance(items, (list, tuple)):
        raise invalid(f"{api}: {arg} is a {type(items).__name__}; pass a list of {size} tensors, "
                      f"one per rank")
    if len(items) != size:
        raise invalid(f"{api}: {arg} has {len(items)} tensors, but the communicator has {size} "
                      f"ranks; pass one tensor per rank")
    return [_buffers.as_buffer(item, api, f"{arg}[{i}]", writable) for i, item in enumerate(items)]


def _one(tensor, api, arg, writable):
    return _buffers.as_buffer(tensor, api, arg, writable)


def _whole(buffer, size, api, arg, per_rank):
    if buffer.count != per_rank * size:
        raise invalid(f"{api}: {arg} holds {buffer.count} elements, but the communicator's "
                      f"{size} ranks times {per_rank} per rank make {per_rank * size}; size "
                      f"{arg} to world size times the block")


def _match(buffer, other, api, arg, other_arg):
    if buffer.dtype != other.dtype:
        raise invalid(f"{api}: {arg} is {_buffers.NAMES[buffer.dtype]} but {other_arg} is "
                      f"{_buffers.NAMES[other.dtype]}; give both the same dtype")


def _split_counts(tensor, buffer, split_sizes, size, api, arg):
    """The elements of each rank's block of tensor, cut into rows by split_sizes (None:
    equal blocks), as torch's all_to_all_single cuts them."""
    shape = getattr(tensor, "shape", None)
    rows = int(shape[0]) if shape else buffer.count
    per_row = buffer.count // rows if rows else 0
    if split_sizes is None:
        if rows % size != 0:
            raise invalid(f"{api}: {arg} has {rows} rows, which the {size} ranks cannot share "
                          f"equally; pass {arg}_split_sizes")
        return [rows // size * per_row] * size
    try:  # ints, or anything that is one (numpy's, a tensor's .tolist())
        splits = [operator.index(s) for s in split_sizes]
    except TypeError:
        splits = None
    if splits is None or len(splits) != size or any(s < 0 for s in splits):
        raise invalid(f"{api}: {arg}_split_sizes is {split_sizes!r}; pass {size} row counts "
                      f">= 0, one per rank")
    if sum(splits) != rows:
        raise invalid(f"{api}: {arg}_split_sizes {splits!r} add up to {sum(splits)} rows, but "
                      f"{arg} has {rows}; make them add up to its first dimension")
    return [s * per_row for s in splits]


class Collectives:
    """Mixin of Comm: every operation, each a thin layer over one tutti_* call."""

    def all_reduce(self, tensor, op="sum", async_op=False):
        """tensor = the reduction of every rank's tensor, on every rank."""
        api = "tutti.all_reduce"
        t = _one(tensor, api, "tensor", True)
        return self._issue(api, _capi.lib.tutti_all_reduce,
                           (t.address, t.address, t.count, t.dtype, reduce_op(op, api)),
                           [t], async_op, device=self._device(api, ("tensor", t)))

    def reduce(self, tensor, dst, op="sum", async_op=False):
        """tensor on rank dst = the reduction of every rank's tensor; others keep theirs."""
        api = "tutti.reduce"
        dst = int32(dst, api, "dst")
        here = self._rank_for(api) == dst
        t = _one(tensor, api, "tensor", here)
        return self._issue(api, _capi.lib.tutti_reduce,
                           (t.address, t.address if here else None, t.count, t.dtype,
                            reduce_op(op, api), dst), [t], async_op,
                           device=self._device(api, ("tensor", t)))

    def broadcast(self, tensor, src, async_op=False):
        """tensor on every rank = rank src's tensor."""
        api = "tutti.broadcast"
        src = int32(src, api, "src")
        t = _one(tensor, api, "tensor", self._rank_for(api) != src)
        return self._issue(api, _capi.lib.tutti_broadcast,
                           (t.address, t.address, t.count, t.dtype, src), [t], async_op,
                           device=self._device(api, ("tensor", t)))

    def all_gather(self, tensor_list, tensor, async_op=False):
        """tensor_list[i] = rank i's tensor, on every rank."""
        api = "tutti.all_gather"
        t = _one(tensor, api, "tensor", False)
        outputs = _list(tensor_list, api, "tensor_list", True, self._size_for(api))
        _buffers.same_shape(outputs, t.count, t.dtype, api, "tensor_list")
        device = self._device(api, ("tensor", t), ("tensor_list", outputs))
        gathered = _buffers.scratch(t.count * len(outputs), t)
        return self._issue(api, _capi.lib.tutti_all_gather,
                           (t.address, gathered.address, t.count, t.dtype),
                           [t, gathered, outputs], async_op,
                           lambda: _buffers.unpack(gathered, outputs), device)

    def all_gather_into_tensor(self, output_tensor, input_tensor, async_op=False):
        """output_tensor = every rank's input_tensor, concatenated in rank order."""
        api = "tutti.all_gather_into_tensor"
        t = _one(input_tensor, api, "input_tensor", False)
        out = _one(output_tensor, api, "output_tensor", True)
        _match(out, t, api, "output_tensor", "input_tensor")
        _whole(out, self._size_for(api), api, "output_tensor", t.count)
        return self._issue(api, _capi.lib.tutti_all_gather,
                           (t.address, out.address, t.count, t.dtype), [t, out], async_op,
                           device=self._device(api, ("output_tensor", out),
                                               ("input_tensor", t)))

    def reduce_scatter(self, output, input_list, op="sum", async_op=False):
        """output on rank i = the reduction of every rank's input_list[i]."""
        api = "tutti.reduce_scatter"
        out = _one(output, api, "output", True)
        inputs = _list(input_list, api, "input_list", False, self._size_for(api))
        _buffers.same_shape(inputs, out.count, out.dtype, api, "input_list")
        device = self._device(api, ("output", out), ("input_list", inputs))
        op = reduce_op(op, api)
        packed = _buffers.packed(inputs)
        return self._issue(api, _capi.lib.tutti_reduce_scatter,
                           (packed.address, out.address, out.count, out.dtype, op),
                           [out, packed], async_op, device=device)

    def reduce_scatter_tensor(self, output, input, op="sum", async_op=False):
        """output on rank i = block i of the reduction of every rank's input (size blocks)."""
        api = "tutti.reduce_scatter_tensor"
        out = _one(output, api, "output", True)
        t = _one(input, api, "input", False)
        _match(out, t, api, "output", "input")
        _whole(t, self._size_for(api), api, "input", out.count)
        return self._issue(api, _capi.lib.tutti_reduce_scatter,
                           (t.address, out.address, out.count, out.dtype, reduce_op(op, api)),
                           [out, t], async_op, device=self._device(api, ("output", out),
                                                                   ("input", t)))

    def gather(self, tensor, gather_list=None, dst=0, async_op=False):
        """gather_list[i] on rank dst = rank i's tensor; gather_list is None elsewhere."""
        api = "tutti.gather"
        dst = int32(dst, api, "dst")
        t = _one(tensor, api, "tensor", False)
        if self._rank_for(api) != dst:
            return self._issue(api, _capi.lib.tutti_gather,
                               (t.address, None, t.count, t.dtype, dst), [t], async_op,
                               device=self._device(api, ("tensor", t)))
        if gather_list is None:
            raise invalid(f"{api}: gather_list is None on the destination rank {dst}; pass a list "
                          f"of {self._size_for(api)} tensors like tensor to receive into")
        outputs = _list(gather_list, api, "gather_list", True, self._size_for(api))
        _buffers.same_shape(outputs, t.count, t.dtype, api, "gather_list")
        device = self._device(api, ("tensor", t), ("gather_list", outputs))
        gathered = _buffers.scratch(t.count * len(outputs), t)
        return self._issue(api, _capi.lib.tutti_gather,
                           (t.address, gathered.address, t.count, t.dtype, dst),
                           [t, gathered, outputs], async_op,
                           lambda: _buffers.unpack(gathered, outputs), device)

    def scatter(self, tensor, scatter_list=None, src=0, async_op=False):
        """tensor on rank i = scatter_list[i] of rank src; scatter_list is None elsewhere."""
        api = "tutti.scatter"
        src = int32(src, api, "src")
        out = _one(tensor, api, "tensor", True)
        if self._rank_for(api) != src:
            return self._issue(api, _capi.lib.tutti_scatter,
                               (None, out.address, out.count, out.dtype, src), [out], async_op,
                               device=self._device(api, ("tensor", out)))
        if scatter_list is None:
            raise invalid(f"{api}: scatter_list is None on the source rank {src}; pass a list "
                          f"of {self._size_for(api)} tensors like tensor, one for each rank")
        inputs = _list(scatter_list, api, "scatter_list", False, self._size_for(api))
        _buffers.same_shape(inputs, out.count, out.dtype, api, "scatter_list")
        device = self._device(api, ("tensor", out), ("scatter_list", inputs))
        packed = _buffers.packed(inputs)
        return self._issue(api, _capi.lib.tutti_scatter,
                           (packed.address, out.address, out.count, out.dtype, src),
                           [out, packed], async_op, device=device)

    def all_to_all(self, output_tensor_list, input_tensor_list, async_op=False):
        """output_tensor_list[i] = rank i's input_tensor_list[this rank]. The tensors may
        differ in size (tutti_all_to_allv): each output must be the size of the input
        its rank sends here."""
        api = "tutti.all_to_all"
        inputs = _list(input_tensor_list, api, "input_tensor_list", False, self._size_for(api))
        outputs = _list(output_tensor_list, api, "output_tensor_list", True, self._size_for(api))
        first = inputs[0]
        _buffers.same_dtype(inputs, first.dtype, api, "input_tensor_list")
        _buffers.same_dtype(outputs, first.dtype, api, "output_tensor_list")
        rank = self._rank_for(api)
        if outputs[rank].count != inputs[rank].count:
            raise invalid(f"{api}: output_tensor_list[{rank}] holds {outputs[rank].count} "
                          f"elements, but input_tensor_list[{rank}], what this rank sends itself, "
                          f"holds {inputs[rank].count}; make them the same size")
        device = self._device(api, ("output_tensor_list", outputs),
                              ("input_tensor_list", inputs))
        packed = _buffers.packed(inputs)
        received = _buffers.scratch(sum(out.count for out in outputs), first)
        if all(b.count == first.count for b in inputs) and all(
                b.count == first.count for b in outputs):
            return self._issue(api, _capi.lib.tutti_all_to_all,
                               (packed.address, received.address, first.count, first.dtype),
                               [packed, received, outputs], async_op,
                               lambda: _buffers.unpack(received, outputs), device)
        return self._all_to_allv(api, packed, [b.count for b in inputs], received,
                                 [b.count for b in outputs], [packed, received, outputs],
                                 async_op, lambda: _buffers.unpack(received, outputs), device)

    def all_to_all_single(self, output, input, output_split_sizes=None, input_split_sizes=None,
                          async_op=False):
        """input's block j goes to rank j; output's block i is rank i's. The blocks are
        rows (slices of the first dimension): input_split_sizes[j] rows go to rank j and
        output_split_sizes[i] rows come from rank i (tutti_all_to_allv); a None split
        cuts its tensor into equal blocks, one per rank."""
        api = "tutti.all_to_all_single"
        size = self._size_for(api)
        t = _one(input, api, "input", False)
        out = _one(output, api, "output", True)
        _match(out, t, api, "output", "input")
        if output_split_sizes is None and input_split_sizes is None:
            if t.count != out.count or t.count % size != 0:
                raise invalid(f"{api}: input holds {t.count} elements and output {out.count}; "
                              f"without split sizes both must hold the same number, a multiple "
                              f"of the {size} ranks; or pass input_split_sizes and "
                              f"output_split_sizes")
            return self._issue(api, _capi.lib.tutti_all_to_all,
                               (t.address, out.address, t.count // size, t.dtype),
                               [t, out], async_op, device=self._device(api, ("output", out),
                                                                       ("input", t)))
        send_counts = _split_counts(input, t, input_split_sizes, size, api, "input")
        recv_counts = _split_counts(output, out, output_split_sizes, size, api, "output")
        return self._all_to_allv(api, t, send_counts, out, recv_counts, [t, out], async_op, None,
                                 self._device(api, ("output", out), ("input", t)))

    def _all_to_allv(self, api, send, send_counts, recv, recv_counts, keep, async_op, after,
                     device):
        counts = ctypes.c_size_t * len(send_counts)
        sends, recvs = counts(*send_counts), counts(*recv_counts)
        return self._issue(api, _capi.lib.tutti_all_to_allv,
                           (send.address, sends, None, recv.address, recvs, None, send.dtype),
                           keep, async_op, after, device)

    def barrier(self, async_op=False):
        """Returns once every rank has entered the barrier."""
        return self._issue("tutti.barrier", _capi.lib.tutti_barrier, (), [], async_op)

    def send(self, tensor, dst, tag=0):
        """Sends tensor to rank dst; blocks until it is sent (at most the timeout)."""
        self._send("tutti.send", tensor, dst, tag, False)

    def recv(self, tensor, src, tag=0):
        """Receives into tensor from rank src (no wildcard); returns src, as torch does."""
        self._recv("tutti.recv", tensor, src, tag, False)
        return src

    def isend(self, tensor, dst, tag=0):
        """send, without waiting: returns the Work."""
        return self._send("tutti.isend", tensor, dst, tag, True)

    def irecv(self, tensor, src, tag=0):
        """recv, without waiting: returns the Work."""
        return self._recv("tutti.irecv", tensor, src, tag, True)

    def _send(self, api, tensor, dst, tag, async_op):
        t = _one(tensor, api, "tensor", False)
        return self._issue(api, _capi.lib.tutti_send,
                           (t.address, t.count, t.dtype, int32(dst, api, "dst"),
                            int32(tag, api, "tag")), [t], async_op,
                           device=self._device(api, ("tensor", t)))

    def _recv(self, api, tensor, src, tag, async_op):
        if src is None:
            raise invalid(f"{api}: src is None, but tutti receives from a named rank only; pass "
                          f"the sender's rank")
        out = _one(tensor, api, "tensor", True)
        return self._issue(api, _capi.lib.tutti_recv,
                           (out.address, out.count, out.dtype, int32(src, api, "src"),
                            int32(tag, api, "tag")), [out], async_op,
                           device=self._device(api, ("tensor", out)))
