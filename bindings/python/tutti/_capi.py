"""The literal layer: capi/include/tutti.h in ctypes, one declaration per C function.

Nothing here is friendly on purpose (STYLE G23): every function, enum and struct of
tutti.h appears once, with the argument and return types copied from the header, so
that the friendly layer (comm.py, work.py) and the test that compares this list with
the library's exports have one place to look.

The library is loaded when this module is imported, from the first of:
  1. $TUTTI_LIBRARY, a path to libtutti.so.0 (an explicit choice wins);
  2. libtutti.so.0 next to this package (the build tree's build/python/tutti, or an
     installed wheel that carries the library);
  3. libtutti.so.0 on the system's library path (ldconfig, LD_LIBRARY_PATH).
A library whose ABI major version differs from ABI_MAJOR, or that lacks a function
declared here, is refused with an ImportError that says which versions met.
"""
import ctypes
import os

# The tutti.h this file was written from: TUTTI_VERSION_MAJOR, and the SONAME.
ABI_MAJOR = 0
SONAME = "libtutti.so.0"

# ---------------------------------------------------------------- statuses
# TUTTI_STATUS_MAP, spelled out; tests/bindings/python checks each against
# tutti_status_name().
OK = 0
INPROGRESS = 1  # tutti_work_wait: its own time ran out first; not an error
ERR_INVALID_ARGUMENT = -1
ERR_TIMEOUT = -2
ERR_PEER_LOST = -3
ERR_MISMATCH = -4
ERR_ABORTED = -5
ERR_TRANSPORT = -6
ERR_UNSUPPORTED = -7
ERR_NO_MEMORY = -8
ERR_DENIED = -9
ERR_INTERNAL = -10

STATUS_NAMES = {
    OK: "TUTTI_OK",
    INPROGRESS: "TUTTI_INPROGRESS",
    ERR_INVALID_ARGUMENT: "TUTTI_ERR_INVALID_ARGUMENT",
    ERR_TIMEOUT: "TUTTI_ERR_TIMEOUT",
    ERR_PEER_LOST: "TUTTI_ERR_PEER_LOST",
    ERR_MISMATCH: "TUTTI_ERR_MISMATCH",
    ERR_ABORTED: "TUTTI_ERR_ABORTED",
    ERR_TRANSPORT: "TUTTI_ERR_TRANSPORT",
    ERR_UNSUPPORTED: "TUTTI_ERR_UNSUPPORTED",
    ERR_NO_MEMORY: "TUTTI_ERR_NO_MEMORY",
    ERR_DENIED: "TUTTI_ERR_DENIED",
    ERR_INTERNAL: "TUTTI_ERR_INTERNAL",
}

# ---------------------------------------------------------------- dtypes and ops
DTYPE_INT8 = 0
DTYPE_UINT8 = 1
DTYPE_INT32 = 2
DTYPE_INT64 = 3
DTYPE_FLOAT16 = 4
DTYPE_BFLOAT16 = 5
DTYPE_FLOAT32 = 6
DTYPE_FLOAT64 = 7
DTYPE_FLOAT8_E4M3 = 8
DTYPE_FLOAT8_E5M2 = 9

OP_SUM = 0
OP_PROD = 1
OP_MIN = 2
OP_MAX = 3
OP_AVG = 4

UNDEFINED = -1

MEMORY_AUTO = 0
MEMORY_HOST = 1
MEMORY_CUDA = 2


class tutti_config(ctypes.Structure):
    """struct tutti_config; filled by tutti_config_init(byref(c), sizeof(c))."""

    _fields_ = [
        ("struct_size", ctypes.c_size_t),
        ("abi_magic", ctypes.c_uint32),
        ("rank", ctypes.c_int32),
        ("world_size", ctypes.c_int32),
        ("init_method", ctypes.c_char_p),
        ("init_timeout_ms", ctypes.c_int64),
        ("op_timeout_ms", ctypes.c_int64),
        ("name", ctypes.c_char_p),
        ("trace", ctypes.c_char_p),
    ]


# Opaque handles: only ever pointers.
comm_p = ctypes.c_void_p
work_p = ctypes.c_void_p

_status = ctypes.c_int
_i32 = ctypes.c_int32
_i32_p = ctypes.POINTER(ctypes.c_int32)
_comm_pp = ctypes.POINTER(comm_p)
_work_pp = ctypes.POINTER(work_p)
_buf = ctypes.c_void_p
_size = ctypes.c_size_t
_size_p = ctypes.POINTER(ctypes.c_size_t)
_int = ctypes.c_int

# name: (restype, argtypes), in the order of tutti.h.
FUNCTIONS = {
    "tutti_version": (ctypes.c_uint32, []),
    "tutti_version_string": (ctypes.c_char_p, []),
    "tutti_status_string": (ctypes.c_char_p, [_status]),
    "tutti_status_name": (ctypes.c_char_p, [_status]),
    "tutti_last_error": (ctypes.c_char_p, []),
    "tutti_config_init": (_status, [ctypes.POINTER(tutti_config), _size]),
    "tutti_comm_init": (_status, [ctypes.POINTER(tutti_config), _comm_pp]),
    "tutti_comm_rank": (_status, [comm_p, _i32_p]),
    "tutti_comm_size": (_status, [comm_p, _i32_p]),
    "tutti_comm_local_rank": (_status, [comm_p, _i32_p]),
    "tutti_comm_local_size": (_status, [comm_p, _i32_p]),
    "tutti_comm_node_rank": (_status, [comm_p, _i32_p]),
    "tutti_comm_split": (_status, [comm_p, _i32, _i32, _comm_pp]),
    "tutti_comm_shrink": (_status, [comm_p, _comm_pp]),
    "tutti_comm_grow": (_status, [comm_p, ctypes.c_int32, _comm_pp]),
    "tutti_comm_join": (_status, [ctypes.POINTER(tutti_config), _comm_pp]),
    "tutti_comm_set_op_timeout": (_status, [comm_p, ctypes.c_int64]),
    "tutti_comm_dump": (_status, [comm_p, _int]),
    "tutti_comm_abort": (_status, [comm_p]),
    "tutti_comm_destroy": (_status, [comm_p]),
    "tutti_work_wait": (_status, [work_p, ctypes.c_int64]),
    "tutti_work_test": (_status, [work_p, ctypes.POINTER(_int)]),
    "tutti_work_release": (_status, [work_p]),
    "tutti_all_reduce": (_status, [comm_p, _buf, _buf, _size, _int, _int, _work_pp]),
    "tutti_reduce": (_status, [comm_p, _buf, _buf, _size, _int, _int, _i32, _work_pp]),
    "tutti_broadcast": (_status, [comm_p, _buf, _buf, _size, _int, _i32, _work_pp]),
    "tutti_all_gather": (_status, [comm_p, _buf, _buf, _size, _int, _work_pp]),
    "tutti_reduce_scatter": (_status, [comm_p, _buf, _buf, _size, _int, _int, _work_pp]),
    "tutti_gather": (_status, [comm_p, _buf, _buf, _size, _int, _i32, _work_pp]),
    "tutti_scatter": (_status, [comm_p, _buf, _buf, _size, _int, _i32, _work_pp]),
    "tutti_all_to_all": (_status, [comm_p, _buf, _buf, _size, _int, _work_pp]),
    "tutti_all_to_allv": (_status, [comm_p, _buf, _size_p, _size_p, _buf, _size_p, _size_p, _int,
                                    _work_pp]),
    "tutti_barrier": (_status, [comm_p, _work_pp]),
    "tutti_send": (_status, [comm_p, _buf, _size, _int, _i32, _i32, _work_pp]),
    "tutti_recv": (_status, [comm_p, _buf, _size, _int, _i32, _i32, _work_pp]),
    "tutti_mem_alloc": (_status, [comm_p, _size, ctypes.POINTER(ctypes.c_void_p)]),
    "tutti_mem_free": (_status, [comm_p, ctypes.c_void_p]),
    "tutti_comm_set_memory": (_status, [comm_p, _int]),
    "tutti_comm_set_device": (_status, [comm_p, _i32]),
    "tutti_comm_set_stream": (_status, [comm_p, ctypes.c_void_p]),
    "tutti_work_wait_stream": (_status, [work_p, ctypes.c_void_p]),
}


def _candidates():
    explicit = os.environ.get("TUTTI_LIBRARY")
    if explicit:
        return [("$TUTTI_LIBRARY", explicit)]
    beside = os.path.join(os.path.dirname(os.path.abspath(__file__)), SONAME)
    found = [("next to the package", beside)] if os.path.exists(beside) else []
    return found + [("the system library path", SONAME)]


def _open():
    tried = []
    for where, path in _candidates():
        try:
            return ctypes.CDLL(path), path
        except OSError as error:
            tried.append(f"{path} ({where}): {error}")
    raise ImportError(
        "tutti: cannot load libtutti: tried " + "; ".join(tried)
        + "; build tutti (ninja -C build) and put build/python on PYTHONPATH, or set "
        "TUTTI_LIBRARY to the path of libtutti.so.0")


def _bind(library, path):
    version = library.tutti_version
    version.restype, version.argtypes = ctypes.c_uint32, []
    found = version()
    major, minor, patch = found >> 16, (found >> 8) & 0xFF, found & 0xFF
    if major != ABI_MAJOR:
        raise ImportError(
            f"tutti: {path} is libtutti {major}.{minor}.{patch} (ABI major {major}), but this "
            f"Python package was written for ABI major {ABI_MAJOR} (libtutti {ABI_MAJOR}.x); "
            f"point TUTTI_LIBRARY at a libtutti.so.{ABI_MAJOR}, or use the tutti package of "
            f"libtutti {major}.x")
    for name, (restype, argtypes) in FUNCTIONS.items():
        try:
            function = getattr(library, name)
        except AttributeError:
            raise ImportError(
                f"tutti: {path} (libtutti {major}.{minor}.{patch}) lacks {name}, which this "
                f"package needs; use a libtutti of the same or a later {ABI_MAJOR}.x "
                f"release") from None
        function.restype, function.argtypes = restype, argtypes
    return library


lib, library_path = _open()
_bind(lib, library_path)


def last_error():
    """tutti_last_error() as str: the message of this thread's last failed call."""
    return lib.tutti_last_error().decode("utf-8", "replace")
