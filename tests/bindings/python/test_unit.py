"""Unit tests of the Python binding on one rank: the literal layer against the library,
every buffer kind and dtype, and bad input, which must raise a TuttiError subclass
with a message that says what and how to fix it, never crash.

Run under the launcher (ctest does): tutti launch -n 1 -- python3 -m pytest test_unit.py
"""
import array
import ctypes
import datetime
import os
import shutil
import subprocess

import numpy
import pytest
import torch

import tutti
from ports import free_port
from tutti import _buffers, _capi


@pytest.fixture(scope="module", autouse=True)
def world():
    comm = tutti.init(timeout=30)
    yield comm
    tutti.destroy()


def exported_symbols():
    out = subprocess.run(["nm", "-D", "--defined-only", _capi.library_path],
                         check=True, capture_output=True, text=True).stdout
    # Lines are "ADDRESS TYPE NAME@@TUTTI_0"; the version node itself has type A. The
    # draft API (NAME@@TUTTI_DRAFT, tutti.h) is not bound here until it is promised.
    rows = [line.split() for line in out.splitlines()]
    return {row[2].split("@")[0] for row in rows if row[1] in "TDRBVW" and not row[2].endswith("@@TUTTI_DRAFT")}


def test_capi_declares_every_export_once():
    assert set(_capi.FUNCTIONS) == exported_symbols()


def test_status_table_matches_the_library():
    for status, name in _capi.STATUS_NAMES.items():
        assert _capi.lib.tutti_status_name(status).decode() == name
    assert _capi.lib.tutti_status_name(-11).decode() == "TUTTI_ERR_UNKNOWN"
    assert -11 not in _capi.STATUS_NAMES


def test_every_error_status_has_its_class():
    for status, name in _capi.STATUS_NAMES.items():
        if status in (_capi.OK, _capi.INPROGRESS):
            continue
        error = tutti.errors.error_for(status, "m")
        assert type(error) is not tutti.TuttiError and isinstance(error, tutti.TuttiError)
        assert error.status == status and error.status_name == name


def test_version_and_config_defaults():
    assert tutti.version() == _capi.lib.tutti_version_string().decode()
    assert _capi.lib.tutti_version() >> 16 == _capi.ABI_MAJOR
    config = _capi.tutti_config()
    assert _capi.lib.tutti_config_init(config, ctypes.sizeof(config)) == _capi.OK
    assert config.struct_size == ctypes.sizeof(config)
    assert (config.rank, config.world_size, config.op_timeout_ms) == (-1, -1, -1)


def test_place():
    assert (tutti.rank(), tutti.world_size(), tutti.local_rank(), tutti.local_size()) == (0, 1, 0, 1)
    assert tutti.node_rank() == 0 and tutti.get_rank() == 0 and tutti.get_world_size() == 1
    assert repr(tutti.world()) == "<tutti.Comm (rank 0 of 1)>"


@pytest.mark.parametrize("dtype", [numpy.int8, numpy.uint8, numpy.int32, numpy.int64,
                                   numpy.float16, numpy.float32, numpy.float64])
def test_numpy_dtypes(dtype):
    x = numpy.arange(12, dtype=dtype).reshape(3, 4)
    tutti.all_reduce(x, op="max")
    assert (x == numpy.arange(12).reshape(3, 4)).all()
    out = numpy.zeros(12, dtype=dtype)
    tutti.all_gather_into_tensor(out, x)
    assert (out == numpy.arange(12)).all()


@pytest.mark.parametrize("dtype", [torch.int8, torch.uint8, torch.int32, torch.int64,
                                   torch.float16, torch.bfloat16, torch.float32, torch.float64])
def test_torch_dtypes(dtype):
    x = torch.arange(10).to(dtype)
    tutti.all_reduce(x, op=tutti.ReduceOp.SUM)
    tutti.broadcast(x, src=0)
    assert torch.equal(x, torch.arange(10).to(dtype))


class _NamedDtype:
    """Stands in for a torch.dtype that this torch may lack: the binding knows torch's
    dtypes by their names."""

    def __init__(self, name):
        self.name = name

    def __str__(self):
        return self.name


def test_torch_fp8_dtypes_are_known_by_name():
    assert _buffers._torch_dtype(_NamedDtype("torch.float8_e4m3fn")) == _capi.DTYPE_FLOAT8_E4M3
    assert _buffers._torch_dtype(_NamedDtype("torch.float8_e5m2")) == _capi.DTYPE_FLOAT8_E5M2
    # The "fnuz" variants are other formats (no negative zero, bias 8 and 16).
    assert _buffers._torch_dtype(_NamedDtype("torch.float8_e4m3fnuz")) is None
    assert _buffers._torch_dtype(_NamedDtype("torch.float8_e5m2fnuz")) is None
    assert _buffers.ITEMSIZE[_capi.DTYPE_FLOAT8_E4M3] == _buffers.ITEMSIZE[_capi.DTYPE_FLOAT8_E5M2] == 1


@pytest.mark.skipif(not hasattr(torch, "float8_e4m3fn"),
                    reason=f"torch {torch.__version__} has no float8 dtypes (they came in 2.1)")
@pytest.mark.parametrize("name", ["float8_e4m3fn", "float8_e5m2"])
def test_torch_fp8_tensors(name):
    dtype = getattr(torch, name)
    x = torch.tensor([1.0, -2.0, 0.5, 448.0]).to(dtype)
    tutti.all_reduce(x, op="sum")  # one rank: the sum is each value, rounded as it was
    assert torch.equal(x.view(torch.uint8), torch.tensor([1.0, -2.0, 0.5, 448.0]).to(dtype).view(torch.uint8))
    out = torch.zeros(4, dtype=dtype)
    tutti.all_gather_into_tensor(out, x)
    assert torch.equal(out.view(torch.uint8), x.view(torch.uint8))


def test_buffer_protocol_objects():
    b = bytearray(b"\x01\x02\x03")
    tutti.all_reduce(b, "prod")
    assert b == bytearray(b"\x01\x02\x03")
    for code in "bBiqfd":
        a = array.array(code, [1, 2, 3])
        tutti.all_reduce(a, op="avg")
        assert list(a) == [1, 2, 3]


def test_read_only_input_is_fine():
    out = bytearray(3)
    tutti.all_gather_into_tensor(out, b"abc")
    assert out == b"abc"
    frozen = numpy.arange(4.0)
    frozen.flags.writeable = False
    tutti.broadcast(frozen, src=0)  # the root only reads


def test_torch_reduce_op_names():
    import torch.distributed as dist
    x = torch.ones(3)
    tutti.all_reduce(x, op=dist.ReduceOp.MAX)
    tutti.all_reduce(x, op=dist.ReduceOp.PRODUCT)
    assert torch.equal(x, torch.ones(3))


def test_every_collective_on_one_rank():
    x = torch.arange(6.0)
    gathered = [torch.zeros(6)]
    tutti.all_gather(gathered, x)
    assert torch.equal(gathered[0], x)
    out = torch.zeros(6)
    tutti.reduce_scatter(out, [x], op="sum")
    assert torch.equal(out, x)
    tutti.reduce_scatter_tensor(out, x * 2)
    assert torch.equal(out, x * 2)
    tutti.gather(x, [out], dst=0)
    assert torch.equal(out, x)
    tutti.scatter(out, [x + 1], src=0)
    assert torch.equal(out, x + 1)
    outs = [torch.zeros(6)]
    tutti.all_to_all(outs, [x])
    assert torch.equal(outs[0], x)
    tutti.all_to_all_single(out, x)
    assert torch.equal(out, x)
    tutti.all_to_all_single(out, x, [6], [6])
    assert torch.equal(out, x)
    with pytest.raises(tutti.TuttiInvalidArgument, match="add up to 5 rows, but input has 6"):
        tutti.all_to_all_single(out, x, [6], [5])
    with pytest.raises(tutti.TuttiInvalidArgument, match="pass 1 row counts >= 0"):
        tutti.all_to_all_single(out, x, [3, 3], [6])
    with pytest.raises(tutti.TuttiInvalidArgument, match="pass 1 row counts >= 0"):
        tutti.all_to_all_single(out, x, [6.0], [6])
    tutti.all_to_all_single(out, x, numpy.array([6]), [6])
    assert torch.equal(out, x)
    tutti.reduce(out, dst=0, op="min")
    assert tutti.barrier() is None


def test_async_work():
    x = numpy.ones(1000, dtype=numpy.float32)
    work = tutti.all_reduce(x, async_op=True)
    assert isinstance(work, tutti.Work)
    assert work.wait(timeout=datetime.timedelta(seconds=30)) is True
    assert work.is_completed() and work.wait() is True
    assert "done" in repr(work)
    barrier = tutti.barrier(async_op=True)
    assert barrier.wait(10)
    gathered = [torch.zeros(3)]
    work = tutti.all_gather(gathered, torch.tensor([1.0, 2.0, 3.0]), async_op=True)
    work.wait()
    assert gathered[0].tolist() == [1.0, 2.0, 3.0]


def test_work_wait_refuses_a_bad_timeout():
    work = tutti.barrier(async_op=True)
    with pytest.raises(tutti.TuttiInvalidArgument, match="timeout is 'soon'"):
        work.wait("soon")
    with pytest.raises(tutti.TuttiInvalidArgument, match=">= 0"):
        work.wait(-1)
    assert work.wait()


def expect_invalid(pattern, call, *args, **kwargs):
    with pytest.raises(tutti.TuttiInvalidArgument, match=pattern) as caught:
        call(*args, **kwargs)
    assert caught.value.status == _capi.ERR_INVALID_ARGUMENT
    assert isinstance(caught.value, ValueError)
    return caught.value.message


def test_wrong_dtypes():
    message = expect_invalid("dtype torch.int16", tutti.all_reduce, torch.zeros(3, dtype=torch.int16))
    assert "int8, uint8" in message and ".to(torch.float32)" in message
    expect_invalid("'|b1'", tutti.all_reduce, numpy.zeros(3, dtype=bool))
    expect_invalid("'<c16'", tutti.all_reduce, numpy.zeros(3, dtype=complex))
    expect_invalid("'>f4'", tutti.all_reduce, numpy.zeros(3, dtype=">f4"))
    expect_invalid("format 'h'", tutti.all_reduce, array.array("h", [1]))
    expect_invalid("holds no memory", tutti.all_reduce, [1.0, 2.0])
    expect_invalid("holds no memory", tutti.all_reduce, 3.0)


def test_non_contiguous_and_read_only():
    expect_invalid(r"not contiguous \(shape \(4, 2\), stride \(1, 4\)\).*contiguous\(\)",
                   tutti.all_reduce, torch.zeros(2, 4).t())
    expect_invalid(r"not C-contiguous \(shape \(2, 2\), strides \(64, 16\)",
                   tutti.all_reduce, numpy.zeros((4, 4))[::2, ::2])
    expect_invalid("not C-contiguous", tutti.all_reduce, memoryview(bytearray(8))[::2])
    frozen = numpy.zeros(3)
    frozen.flags.writeable = False
    expect_invalid("read-only, but the result is written into it", tutti.all_reduce, frozen)
    expect_invalid("read-only", tutti.all_reduce, b"abc")
    expect_invalid(r"read-only", tutti.all_gather_into_tensor, b"a", bytearray(1))


class HandMadeArray:
    """An object whose __array_interface__ is written by hand, over real memory."""

    def __init__(self, shape):
        self.memory = numpy.zeros(4, dtype=numpy.float32)
        self.__array_interface__ = {"version": 3, "shape": shape, "typestr": "<f4",
                                    "data": (self.memory.ctypes.data, False)}


def test_array_interface_shapes_that_describe_no_array():
    # ctypes passes the count to C modulo 2^64: (-1,) arrived as SIZE_MAX, (-2, -2) as 4
    # and (2**32, 2**32) as 0, so the last two ran on a count the shape never meant.
    for shape in [(-1,), (-2, -2), (2**32, 2**32), (2.0,)]:
        expect_invalid(r"has shape .* which describes no array", tutti.all_reduce, HandMadeArray(shape))
    tutti.all_reduce(HandMadeArray((2, 2)))


def test_unsupported_device():
    with pytest.raises(tutti.TuttiUnsupported, match=r"tensor on meta.*host and CUDA.*cpu\(\)"):
        tutti.all_reduce(torch.zeros(3, device="meta"))
    with pytest.raises(tutti.TuttiUnsupported, match="sparse"):
        tutti.all_reduce(torch.zeros(3).to_sparse())


# CUDA tensors without a GPU (tests/bindings/python/test_cuda.py runs them on one): a CPU
# tensor that says it is on cuda:N runs the binding's CUDA path for real, while the
# library, whose device path stays closed, reads its memory as the host memory it is.
class FakeCuda(torch.Tensor):
    index = 0
    recorded = []  # the streams given to record_stream

    @property
    def device(self):
        return torch.device("cuda", self.index)

    # What the binding reads first, as a real CUDA tensor answers it.
    @property
    def is_cuda(self):
        return True

    @property
    def is_cpu(self):
        return False

    def record_stream(self, stream):
        FakeCuda.recorded.append(stream.cuda_stream)


class FakeCuda1(FakeCuda):
    index = 1


def fake(tensor, kind=FakeCuda):
    return tensor.as_subclass(kind)


class FakeStream:
    def __init__(self, cuda_stream):
        self.cuda_stream = cuda_stream


@pytest.fixture
def fake_gpu(monkeypatch):
    """A fresh Comm whose device calls are recorded instead of opening CUDA, and a fake
    torch.cuda stream state; list copies by ctypes.memmove fail the test."""
    calls, current = [], [0]

    def recorder(name, real=None):
        def call(handle, value):
            calls.append((name, value))
            return real(handle, value) if real else _capi.OK
        return call

    for name in ("tutti_comm_set_memory", "tutti_comm_set_device", "tutti_comm_set_stream"):
        monkeypatch.setattr(_capi.lib, name, recorder(name))
    # On host memory the library's wait_stream waits as tutti_work_wait does.
    monkeypatch.setattr(_capi.lib, "tutti_work_wait_stream",
                        recorder("tutti_work_wait_stream", _capi.lib.tutti_work_wait_stream))
    monkeypatch.setattr(torch.cuda, "current_stream", lambda device=None: FakeStream(current[0]))

    class StreamContext:
        def __init__(self, stream):
            self.stream, self.before = stream, None

        def __enter__(self):
            self.before, current[0] = current[0], self.stream.cuda_stream

        def __exit__(self, *exc):
            current[0] = self.before

    monkeypatch.setattr(torch.cuda, "stream", StreamContext)

    def no_memmove(*args):
        raise AssertionError("ctypes.memmove on a CUDA tensor's address")

    monkeypatch.setattr(tutti._buffers.ctypes, "memmove", no_memmove)
    FakeCuda.recorded = []
    comm = tutti.split(0)
    yield comm, calls, current
    comm.destroy()


def test_cuda_tensor_opens_the_device_path_once_and_follows_the_stream(fake_gpu):
    comm, calls, current = fake_gpu
    x = fake(torch.arange(4.0))
    comm.all_reduce(x)
    comm.broadcast(x, src=0)
    # torch's default stream (0) is the library's default: nothing to set.
    assert calls == [("tutti_comm_set_memory", _capi.MEMORY_AUTO), ("tutti_comm_set_device", 0)]
    current[0] = 7
    comm.all_reduce(x)
    comm.all_reduce(x, async_op=True).wait()
    current[0] = 0
    comm.all_reduce(x)
    assert calls[2:] == [("tutti_comm_set_stream", 7), ("tutti_comm_set_stream", 0)]
    assert torch.equal(x, torch.arange(4.0))
    with pytest.raises(tutti.TuttiInvalidArgument,
                       match=r"tutti.all_reduce: tensor is on cuda:1, but this Comm works on "
                             r"cuda:0, the device of the first CUDA tensor.*set_device"):
        comm.all_reduce(fake(torch.zeros(2), FakeCuda1))
    comm.all_reduce(torch.ones(2))  # host memory on the same Comm, as before


def test_cuda_lists_are_packed_by_torch(fake_gpu):
    comm, calls, current = fake_gpu
    x = fake(torch.arange(6.0))
    gathered = [fake(torch.zeros(6))]
    comm.all_gather(gathered, x)
    assert torch.equal(gathered[0], x) and FakeCuda.recorded == [0]
    out = fake(torch.zeros(6))
    comm.reduce_scatter(out, [x * 2])
    assert torch.equal(out, x * 2)
    comm.gather(x + 1, [out], dst=0)
    assert torch.equal(out, x + 1)
    comm.scatter(out, [x + 2], src=0)
    assert torch.equal(out, x + 2)
    outs = [fake(torch.zeros(6))]
    comm.all_to_all(outs, [x + 3])
    assert torch.equal(outs[0], x + 3)


def test_cuda_async_lists_are_filled_after_the_wait(fake_gpu):
    comm, calls, current = fake_gpu
    x = fake(torch.arange(5.0))
    gathered = [fake(torch.zeros(5))]
    work = comm.all_gather(gathered, x, async_op=True)
    assert work.wait() is True and torch.equal(gathered[0], x)
    # wait_stream: the stream given waits, and the copies out are made on it.
    outs = [fake(torch.zeros(5))]
    work = comm.all_to_all(outs, [x + 1], async_op=True)
    assert work.wait_stream(FakeStream(9)) is True
    assert ("tutti_work_wait_stream", 9) in calls and FakeCuda.recorded[-1] == 9
    assert torch.equal(outs[0], x + 1) and current[0] == 0
    assert work.wait() is True
    work = comm.all_reduce(x, async_op=True)
    assert work.wait_stream() and work.is_completed()
    expect_invalid("stream is 3; pass a torch.cuda.Stream",
                   comm.all_reduce(x, async_op=True).wait_stream, 3)
    # A host operation's wait_stream is its wait.
    assert comm.all_reduce(torch.ones(2), async_op=True).wait_stream() is True


def test_mixed_devices_are_refused_naming_each_argument():
    cuda = fake(torch.zeros(4))
    expect_invalid(r"tutti.all_gather_into_tensor: input_tensor is on cpu but output_tensor is "
                   r"on cuda:0; put every tensor of one call on the same device",
                   tutti.all_gather_into_tensor, cuda, torch.zeros(4))
    expect_invalid(r"tutti.gather: gather_list\[0\] is on cuda:0 but tensor is on cpu",
                   tutti.gather, torch.zeros(4), [cuda], dst=0)
    expect_invalid(r"tutti.all_to_all_single: input is on cuda:0 but output is on cpu",
                   tutti.all_to_all_single, numpy.zeros(4, dtype=numpy.float32), cuda)
    expect_invalid(r"tutti.all_to_all: input_tensor_list\[0\] is on cuda:1 but "
                   r"output_tensor_list\[0\] is on cuda:0",
                   tutti.all_to_all, [cuda], [fake(torch.zeros(4), FakeCuda1)])


def test_cuda_tensor_without_cuda():
    with tutti.split(0) as comm:
        with pytest.raises(tutti.TuttiUnsupported, match="tutti.all_reduce: tensor is on cuda:0, "
                                                         "but Comm.set_memory: CUDA is not "
                                                         "available"):
            comm.all_reduce(fake(torch.zeros(4)))
        comm.all_reduce(torch.zeros(4))


def test_mismatched_sizes():
    x = torch.zeros(4)
    expect_invalid("tensor_list has 2 tensors, but the communicator has 1 ranks",
                   tutti.all_gather, [torch.zeros(4), torch.zeros(4)], x)
    expect_invalid(r"tensor_list\[0\] holds 3 float32, but the call moves blocks of 4 float32",
                   tutti.all_gather, [torch.zeros(3)], x)
    expect_invalid(r"tensor_list\[0\] holds 4 float64", tutti.all_gather,
                   [torch.zeros(4, dtype=torch.float64)], x)
    expect_invalid("output_tensor holds 5 elements", tutti.all_gather_into_tensor, torch.zeros(5), x)
    expect_invalid("output_tensor is float64 but input_tensor is float32",
                   tutti.all_gather_into_tensor, torch.zeros(4, dtype=torch.float64), x)
    expect_invalid("input holds 8 elements", tutti.reduce_scatter_tensor, x, torch.zeros(8))
    expect_invalid("gather_list is None on the destination rank 0", tutti.gather, x)
    expect_invalid("scatter_list is None on the source rank 0", tutti.scatter, x)
    expect_invalid("tensor_list is a Tensor", tutti.all_gather, x, x)


def test_library_refuses_bad_roots_and_ops():
    message = expect_invalid("tutti.broadcast", tutti.broadcast, torch.zeros(2), src=3)
    assert "3" in message and "tutti_broadcast" not in message
    expect_invalid("op is 'median'", tutti.all_reduce, torch.zeros(2), op="median")
    expect_invalid("op is 3", tutti.all_reduce, torch.zeros(2), op=3)
    expect_invalid("src is 1.5", tutti.broadcast, torch.zeros(2), src=1.5)
    expect_invalid("outside int32", tutti.broadcast, torch.zeros(2), src=2**40)
    expect_invalid("src is None", tutti.recv, torch.zeros(2), None)


def test_use_after_destroy():
    comm = tutti.split(0)
    assert repr(comm) == "<tutti.Comm (rank 0 of 1)>"
    comm.all_reduce(torch.ones(2))
    comm.destroy()
    comm.destroy()  # twice does nothing
    assert comm.destroyed and repr(comm) == "<tutti.Comm (destroyed)>"
    expect_invalid("attempt to use a destroyed tutti.Comm", comm.all_reduce, torch.ones(2))
    expect_invalid("attempt to use a destroyed tutti.Comm", comm.rank)
    expect_invalid("tutti.reduce: attempt to use a destroyed", comm.reduce, torch.ones(2), 0)
    expect_invalid("tutti.gather: attempt to use a destroyed", comm.gather, torch.ones(2))
    expect_invalid("destroyed", tutti.all_reduce, torch.ones(2), group=comm)
    with tutti.new_group([0]) as group:
        group.barrier()
    assert group.destroyed
    assert tutti.split(None) is None
    expect_invalid("color is -5", tutti.split, -5)
    expect_invalid(r"ranks \[0, 0\] must be distinct", tutti.new_group, [0, 0])


def test_grow_and_join_errors():
    """Comm.grow with no joiner coming raises the grow's TuttiTimeout, and the Comm goes
    on; tutti.join says where it could find no store, and refuses while initialised."""
    comm = tutti.split(0)
    comm.set_timeout(0.3)
    with pytest.raises(tutti.TuttiTimeout, match=r"^Comm\.grow: the grow failed, seen from comm .*: timed out "
                                                 r"after 300 ms waiting for the joiners: 0 of the 1 joiners came"):
        comm.grow(1)
    comm.set_timeout(20)
    one = torch.ones(1)
    comm.all_reduce(one)
    assert one.item() == 1
    expect_invalid("count 0 on comm", comm.grow, 0)
    comm.destroy()
    expect_invalid("tutti.join: tutti is already initialised", tutti.join)
    result = run_python("import tutti\n"
                        "try:\n"
                        f"    tutti.join(init_method='tcp://127.0.0.1:{free_port()}', init_timeout=0.3)\n"
                        "except tutti.TuttiError as error:\n"
                        "    print(error)\n")
    assert result.stdout.startswith("tutti.join: this process cannot reach the rendezvous store (tcp://127.0.0.1:"), \
        result.stdout + result.stderr


def test_library_messages_use_python_names():
    from tutti.errors import in_python_terms
    assert in_python_terms("tutti_comm_init: rank 1 timed out; raise config.init_timeout_ms "
                           "(TUTTI_INIT_TIMEOUT_MS)") == \
        "tutti.init: rank 1 timed out; raise tutti.init(init_timeout=...) (TUTTI_INIT_TIMEOUT_MS)"
    assert in_python_terms("tutti_comm_shrink: comm \"world\" is unusable; tutti_comm_destroy it") == \
        "Comm.shrink: comm \"world\" is unusable; Comm.destroy it"
    assert in_python_terms("tutti_all_reduce #3 and tutti_work_wait, config.op_timeout_ms") == \
        "tutti.all_reduce #3 and Work.wait, tutti.init(timeout=...)"
    # A rank that never came, through the library: the message names tutti.init and
    # its argument.
    result = run_python("import tutti\n"
                        "try:\n"
                        f"    tutti.init(init_method='tcp://127.0.0.1:{free_port()}', rank=0, world_size=2,\n"
                        "               init_timeout=0.5)\n"
                        "except tutti.TuttiError as error:\n"
                        "    print(error)\n")
    assert result.stdout.startswith("tutti.init: rank 0 timed out") and "rank 1 never arrived" in result.stdout, \
        result.stdout + result.stderr
    assert "tutti.init(init_timeout=...)" in result.stdout and "config." not in result.stdout, result.stdout
    # A store that is not there: the message says which call and rank could not reach it.
    result = run_python("import tutti\n"
                        "try:\n"
                        f"    tutti.init(init_method='tcp://127.0.0.1:{free_port()}', rank=1, world_size=2,\n"
                        "               init_timeout=0.3)\n"
                        "except tutti.TuttiError as error:\n"
                        "    print(error)\n")
    assert result.stdout.startswith("tutti.init: rank 1 cannot reach the rendezvous store (tcp://127.0.0.1:"), \
        result.stdout + result.stderr


def test_init_trace_argument(tmp_path):
    result = run_python("import tutti, numpy\n"
                        f"tutti.init(trace={str(tmp_path)!r})\n"
                        "tutti.all_reduce(numpy.ones(2))\n"
                        "tutti.destroy()\n")
    assert result.returncode == 0, result.stderr
    files = list(tmp_path.glob("rank-0.*.json"))
    assert len(files) == 1 and '"name":"all_reduce"' in files[0].read_text(), files


def test_init_twice():
    expect_invalid("already initialised", tutti.init)


def run_python(code, **env):
    environment = {k: v for k, v in os.environ.items() if not k.startswith("TUTTI_")}
    environment.update(env)
    return subprocess.run(["/usr/bin/python3", "-c", code], env=environment,
                          capture_output=True, text=True, timeout=60)


def test_not_initialised():
    result = run_python("import tutti, numpy; tutti.all_reduce(numpy.zeros(1))")
    assert result.returncode == 1
    assert "TuttiInvalidArgument: tutti: not initialised; call tutti.init() first" in result.stderr


def test_wrong_library_version():
    result = run_python("import tutti", TUTTI_LIBRARY=os.environ["TUTTI_FAKE_LIBRARY_V1"])
    assert result.returncode == 1
    assert ("is libtutti 1.2.3 (ABI major 1), but this Python package was written for ABI "
            "major 0 (libtutti 0.x); point TUTTI_LIBRARY at a libtutti.so.0") in result.stderr


def test_library_lookup_order(tmp_path):
    beside = os.path.join(os.path.dirname(os.path.abspath(tutti.__file__)), "libtutti.so.0")
    assert _capi.library_path == os.environ.get("TUTTI_LIBRARY", beside)
    # Without a library beside the package or TUTTI_LIBRARY: the system's library path.
    package = tmp_path / "tutti"
    package.mkdir()
    for name in os.listdir(os.path.dirname(beside)):
        if name.endswith(".py"):
            shutil.copy(os.path.join(os.path.dirname(beside), name), package / name)
    code = "import tutti; print(tutti._capi.library_path, tutti.version())"
    result = run_python(code, PYTHONPATH=str(tmp_path),
                        LD_LIBRARY_PATH=os.path.dirname(os.path.realpath(beside)))
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["libtutti.so.0", tutti.version()]
    result = run_python(code, PYTHONPATH=str(tmp_path), LD_LIBRARY_PATH="/nonexistent")
    assert "tried libtutti.so.0 (the system library path)" in result.stderr


def test_missing_library():
    result = run_python("import tutti", TUTTI_LIBRARY="/nonexistent/libtutti.so.0")
    assert result.returncode == 1
    assert "tutti: cannot load libtutti: tried /nonexistent/libtutti.so.0 ($TUTTI_LIBRARY)" in result.stderr
