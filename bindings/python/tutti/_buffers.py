"""Turns what a caller passes (a PyTorch CPU or CUDA tensor, a NumPy array, anything
with __array_interface__ or the buffer protocol) into an address, an element count and
a tutti dtype, or refuses it with a message that says what is wrong and how to fix it.

Each Buffer keeps a reference to what owns its memory (`owner`), so that a Work that
holds the Buffer keeps the memory alive until the operation completes. Read-only
input that the library cannot be given an address of through ctypes (bytes, a
read-only memoryview) is copied first; input is never written, so a copy is exact.

A CUDA tensor's Buffer has its torch.device in `device` (None for host memory). Lists
of CUDA tensors are packed and unpacked by torch on the device's current stream, never
by ctypes.memmove, which would read device addresses as host ones.
"""
import ctypes
import sys

from . import _capi
from .errors import invalid, unsupported

SUPPORTED = ("int8, uint8, int32, int64, float16, bfloat16, float32, float64, "
             "float8_e4m3fn, float8_e5m2")

ITEMSIZE = {
    _capi.DTYPE_INT8: 1, _capi.DTYPE_UINT8: 1, _capi.DTYPE_INT32: 4, _capi.DTYPE_INT64: 8,
    _capi.DTYPE_FLOAT16: 2, _capi.DTYPE_BFLOAT16: 2, _capi.DTYPE_FLOAT32: 4,
    _capi.DTYPE_FLOAT64: 8, _capi.DTYPE_FLOAT8_E4M3: 1, _capi.DTYPE_FLOAT8_E5M2: 1,
}
NAMES = {
    _capi.DTYPE_INT8: "int8", _capi.DTYPE_UINT8: "uint8", _capi.DTYPE_INT32: "int32",
    _capi.DTYPE_INT64: "int64", _capi.DTYPE_FLOAT16: "float16",
    _capi.DTYPE_BFLOAT16: "bfloat16", _capi.DTYPE_FLOAT32: "float32",
    _capi.DTYPE_FLOAT64: "float64", _capi.DTYPE_FLOAT8_E4M3: "float8_e4m3",
    _capi.DTYPE_FLOAT8_E5M2: "float8_e5m2",
}
# torch's dtypes by name, so that no torch attribute is looked up: the fp8 ones exist
# only from torch 2.1, and an older torch never makes a tensor whose dtype has their
# names. torch calls tutti's float8_e4m3 float8_e4m3fn (finite: no infinity); its
# float8_e4m3fnuz and float8_e5m2fnuz are other formats, refused like any unknown dtype.
# NumPy has no fp8: without torch, fp8 bytes can still be moved (broadcast, gathers,
# all_to_all) as a uint8 array, bit for bit, but not reduced.
_TORCH = {"torch." + name: dtype for dtype, name in NAMES.items()
          if dtype != _capi.DTYPE_FLOAT8_E4M3}
_TORCH["torch.float8_e4m3fn"] = _capi.DTYPE_FLOAT8_E4M3
# The same by torch.dtype object, filled as tensors come: str(dtype) costs more than
# the rest of a small call's checks.
_BY_TORCH_DTYPE = {}
# __array_interface__ typestr without its byte order: kind and size.
_TYPESTR = {"i1": _capi.DTYPE_INT8, "u1": _capi.DTYPE_UINT8, "i4": _capi.DTYPE_INT32,
            "i8": _capi.DTYPE_INT64, "f2": _capi.DTYPE_FLOAT16, "f4": _capi.DTYPE_FLOAT32,
            "f8": _capi.DTYPE_FLOAT64}
# struct-module format codes of the buffer protocol, with the item sizes they mean here.
_FORMAT = {("b", 1): _capi.DTYPE_INT8, ("B", 1): _capi.DTYPE_UINT8,
           ("i", 4): _capi.DTYPE_INT32, ("l", 4): _capi.DTYPE_INT32,
           ("l", 8): _capi.DTYPE_INT64, ("q", 8): _capi.DTYPE_INT64,
           ("e", 2): _capi.DTYPE_FLOAT16, ("f", 4): _capi.DTYPE_FLOAT32,
           ("d", 8): _capi.DTYPE_FLOAT64}


class Buffer:
    """Memory for one operation: address, count elements of dtype, its owner, and the
    CUDA device it is on (None: host memory)."""

    __slots__ = ("address", "count", "dtype", "owner", "device")

    def __init__(self, address, count, dtype, owner, device=None):
        self.address, self.count, self.dtype, self.owner = address, count, dtype, owner
        self.device = device

    @property
    def nbytes(self):
        return self.count * ITEMSIZE[self.dtype]


def where(device):
    """How messages name a Buffer's device."""
    return "cpu" if device is None else str(device)


def same_device(api, *named):
    """The CUDA device of a call's Buffers, None for host memory; refuses a call whose
    Buffers are in different places, naming both. named: (arg, Buffer or list of them)."""
    if len(named) == 1 and not isinstance(named[0][1], list):
        return named[0][1].device  # one Buffer: the common case, on every call
    first = None
    for arg, item in named:
        for i, buffer in enumerate(item) if isinstance(item, list) else ((None, item),):
            name = arg if i is None else f"{arg}[{i}]"
            if first is None:
                first = (name, buffer.device)
            elif buffer.device != first[1]:
                raise invalid(
                    f"{api}: {name} is on {where(buffer.device)} but {first[0]} is on "
                    f"{where(first[1])}; put every tensor of one call on the same device (move "
                    f"one with .to(), e.g. {name}.to({first[0]}.device))")
    return None if first is None else first[1]


def scratch(count, like):
    """A contiguous buffer of count elements of like's dtype, in like's memory (host or
    like's GPU), that the binding packs a list into or unpacks one from."""
    if like.device is not None:
        return _cuda_buffer(like.owner.new_empty(count), like.dtype)
    storage = (ctypes.c_char * (count * ITEMSIZE[like.dtype]))()
    return Buffer(ctypes.addressof(storage), count, like.dtype, storage)


def _cuda_buffer(tensor, dtype):
    return Buffer(tensor.data_ptr(), tensor.numel(), dtype, tensor, tensor.device)


def as_buffer(obj, api, arg, writable):
    """The Buffer of obj, for an output when writable, else for an input."""
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(obj, torch.Tensor):
        return _from_tensor(obj, api, arg)
    interface = getattr(obj, "__array_interface__", None)
    if isinstance(interface, dict) and interface.get("data") is not None:
        return _from_array_interface(obj, interface, api, arg, writable)
    try:
        view = memoryview(obj)
    except TypeError:
        raise invalid(
            f"{api}: {arg} is a {type(obj).__name__}, which holds no memory tutti can use; "
            f"pass a PyTorch tensor, a NumPy array, a bytearray or an array.array") from None
    return _from_memoryview(obj, view, api, arg, writable)


def _torch_dtype(torch_dtype):
    dtype = _BY_TORCH_DTYPE.get(torch_dtype)
    if dtype is None:
        dtype = _TORCH.get(str(torch_dtype))
        if dtype is not None:
            _BY_TORCH_DTYPE[torch_dtype] = dtype
    return dtype


def _from_tensor(tensor, api, arg):
    # is_cuda and is_cpu, not device.type: a small call's checks are on every call, and
    # device.type costs as much as the C call itself.
    cuda = tensor.is_cuda
    if not cuda and not tensor.is_cpu:
        raise unsupported(
            f"{api}: {arg} is a tensor on {tensor.device}, but tutti moves host and CUDA "
            f"device memory only; pass a CPU or CUDA tensor, e.g. {arg}.cpu(), and copy the "
            f"result back")
    if tensor.layout is not sys.modules["torch"].strided:
        raise unsupported(f"{api}: {arg} is a {tensor.layout} tensor; pass a dense tensor "
                          f"({arg}.to_dense())")
    dtype = _torch_dtype(tensor.dtype)
    if dtype is None:
        raise invalid(f"{api}: {arg} has dtype {tensor.dtype}, which tutti does not reduce "
                      f"or move; use one of {SUPPORTED} ({arg}.to(torch.float32), say)")
    if not tensor.is_contiguous():
        raise invalid(
            f"{api}: {arg} is not contiguous (shape {tuple(tensor.shape)}, stride "
            f"{tuple(tensor.stride())}); pass a contiguous tensor ({arg}.contiguous() makes a "
            f"copy: copy the result back into {arg} afterwards)")
    return Buffer(tensor.data_ptr(), tensor.numel(), dtype, tensor, tensor.device if cuda else None)


def _count(shape, itemsize):
    """The elements of an __array_interface__ shape, or None where no array has it: a
    size that is negative or no integer, or more bytes than NumPy allows (sys.maxsize).
    Checked because ctypes hands a count to C modulo 2^64: (-1,) would arrive as
    SIZE_MAX, and (-2, -2) as a plausible 4."""
    count = 1
    for extent in shape:
        if not hasattr(extent, "__index__") or extent.__index__() < 0:
            return None
        count *= extent.__index__()
    return count if count * itemsize <= sys.maxsize else None


def _c_contiguous(shape, strides, itemsize):
    expected = itemsize
    for extent, stride in zip(reversed(shape), reversed(strides)):
        if extent != 1 and stride != expected:
            return False
        expected *= extent
    return True


def _from_array_interface(obj, interface, api, arg, writable):
    typestr = interface["typestr"]
    order, code = typestr[0], typestr[1:]
    dtype = _TYPESTR.get(code)
    if dtype is None or (order == ">" and sys.byteorder == "little"):
        raise invalid(
            f"{api}: {arg} has element type {typestr!r} ({getattr(obj, 'dtype', '?')}), which "
            f"tutti does not reduce or move; use one of {SUPPORTED} in native byte order "
            f"(e.g. {arg}.astype(numpy.float32))")
    shape = tuple(interface["shape"])
    count = _count(shape, ITEMSIZE[dtype])
    if count is None:
        raise invalid(
            f"{api}: {arg} has shape {shape} in its __array_interface__, which describes no "
            f"array: sizes are non-negative integers, together at most {sys.maxsize} bytes; "
            f"pass a NumPy array, or correct the object's __array_interface__")
    strides = interface.get("strides")
    if strides is not None and count > 0 and not _c_contiguous(shape, strides, ITEMSIZE[dtype]):
        raise invalid(
            f"{api}: {arg} is not C-contiguous (shape {shape}, strides {tuple(strides)} bytes); "
            f"pass a contiguous array (numpy.ascontiguousarray({arg}) makes a copy: copy the "
            f"result back into {arg} afterwards)")
    address, readonly = interface["data"]
    if readonly and writable:
        raise invalid(f"{api}: {arg} is read-only, but the result is written into it; pass a "
                      f"writable array ({arg}.copy(), or {arg}.flags.writeable = True if you own it)")
    return Buffer(address, count, dtype, obj)


def _from_memoryview(obj, view, api, arg, writable):
    code = view.format.lstrip("@=<")
    dtype = _FORMAT.get((code, view.itemsize))
    if dtype is None:
        raise invalid(
            f"{api}: {arg} ({type(obj).__name__}) has elements of format {view.format!r} and "
            f"{view.itemsize} bytes, which tutti does not reduce or move; use one of {SUPPORTED} "
            f"(array.array('f'), 'd', 'b', 'B', 'i' or 'q', or a bytearray)")
    if not view.c_contiguous:
        raise invalid(f"{api}: {arg} ({type(obj).__name__}) is not C-contiguous; pass a "
                      f"contiguous buffer (bytes(memoryview) or a copy) and copy the result back")
    count = view.nbytes // view.itemsize
    if view.readonly:
        if writable:
            raise invalid(f"{api}: {arg} ({type(obj).__name__}) is read-only, but the result is "
                          f"written into it; pass a writable buffer such as a bytearray or an "
                          f"array.array")
        view = memoryview(bytearray(view.cast("B")))
    storage = (ctypes.c_char * view.nbytes).from_buffer(view)
    return Buffer(ctypes.addressof(storage), count, dtype, (obj, storage))


def same_shape(buffers, count, dtype, api, arg):
    """Checks that every Buffer of a list holds count elements of dtype."""
    for i, buffer in enumerate(buffers):
        if buffer.dtype != dtype or buffer.count != count:
            raise invalid(
                f"{api}: {arg}[{i}] holds {buffer.count} {NAMES[buffer.dtype]}, but the call "
                f"moves blocks of {count} {NAMES[dtype]}; give every tensor of {arg} the "
                f"tensor's numel and dtype")


def same_dtype(buffers, dtype, api, arg):
    """Checks that every Buffer of a list holds elements of dtype."""
    for i, buffer in enumerate(buffers):
        if buffer.dtype != dtype:
            raise invalid(
                f"{api}: {arg}[{i}] is {NAMES[buffer.dtype]}, but {arg}[0] is {NAMES[dtype]}; "
                f"give every tensor of the call one dtype")


def packed(buffers):
    """A new Buffer holding the list's buffers one after the other (all of one dtype and
    device). On a GPU, torch.cat on the current stream: the collective, enqueued on
    that stream too, comes after it."""
    first = buffers[0]
    if first.device is not None:
        torch = sys.modules["torch"]
        return _cuda_buffer(torch.cat([buffer.owner.reshape(-1) for buffer in buffers]),
                            first.dtype)
    into = scratch(sum(buffer.count for buffer in buffers), first)
    offset = 0
    for buffer in buffers:
        ctypes.memmove(into.address + offset, buffer.address, buffer.nbytes)
        offset += buffer.nbytes
    return into


def unpack(source, buffers):
    """Copies consecutive blocks of the Buffer `source` into the list's buffers, once the
    operation that wrote `source` has finished. On a GPU, on the current stream."""
    if source.device is not None:
        torch = sys.modules["torch"]
        # The caller may drop source as soon as this returns; recording the stream keeps
        # torch's allocator from handing its memory out again before these copies ran,
        # whichever stream it was allocated on.
        source.owner.record_stream(torch.cuda.current_stream(source.device))
        offset = 0
        for buffer in buffers:
            buffer.owner.view(-1).copy_(source.owner[offset:offset + buffer.count])
            offset += buffer.count
        return
    offset = 0
    for buffer in buffers:
        ctypes.memmove(buffer.address, source.address + offset, buffer.nbytes)
        offset += buffer.nbytes
