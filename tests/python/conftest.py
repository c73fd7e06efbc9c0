"""Shared helpers of the flashscope Python tests (docs/python.md, "Tests").

Run from the repository root with the built module on the path:
    PYTHONPATH=build-ci/python python3 -m pytest tests/python -v

GPU tests skip with the reason where no CUDA device is usable. FLASHSCOPE_REQUIRE_GPU=1 (set by
scripts/gpu_host.sh on a host whose driver lists a GPU) turns that skip into a failure, as for
the C++ GPU tests (tests/support/gpu_presence.hpp), so a broken driver cannot pass as skipped.
"""

import ctypes
import os

import pytest

# JAX takes 75 % of the GPU's memory when it starts unless told not to; the tests share the GPU
# between PyTorch, CuPy and JAX.
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

import flashscope
from flashscope import _core


def gpu_unavailable_reason():
    """None when CUDA device 0 is usable, else why not."""
    try:
        _core.describe_gpu(0)
    except RuntimeError as error:
        return str(error)  # "no usable CUDA device cuda:0 (<CUDA error>)"
    return None


def require_gpu():
    """Skips the calling test with the reason when no GPU is usable (fails under
    FLASHSCOPE_REQUIRE_GPU=1)."""
    reason = gpu_unavailable_reason()
    if reason is None:
        return
    if os.environ.get("FLASHSCOPE_REQUIRE_GPU") == "1":
        pytest.fail(f"FLASHSCOPE_REQUIRE_GPU=1 but {reason}")
    pytest.skip(reason)


# ---- A DLPack producer written with ctypes: any device, dtype, shape, strides, flags ----------

class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", _DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class _DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", _DLTensor), ("manager_ctx", ctypes.c_void_p),
                ("deleter", ctypes.c_void_p)]


class _DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class _DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [("version", _DLPackVersion), ("manager_ctx", ctypes.c_void_p),
                ("deleter", ctypes.c_void_p), ("flags", ctypes.c_uint64),
                ("dl_tensor", _DLTensor)]


_capsule_new = ctypes.pythonapi.PyCapsule_New
_capsule_new.restype = ctypes.py_object
_capsule_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]

# (DLPack type code, bits, lanes); e4m3 is DLPack 1.1's kDLFloat8_e4m3fn (torch.float8_e4m3fn).
DTYPES = {"fp16": (2, 16, 1), "bf16": (4, 16, 1), "fp32": (2, 32, 1), "int8": (0, 8, 1),
          "fp16x2": (2, 16, 2), "e4m3": (10, 8, 1), "e4m3x2": (10, 8, 2)}
CUDA = 2
CPU = 1

_next_address = [0x7F00_0000_0000]


class FakeArray:
    """Describes memory it does not own (the address is never dereferenced here: the tests that
    use it stop before a launch). Records the `stream` each __dlpack__ call received."""

    def __init__(self, shape, dtype="fp16", device=(CUDA, 0), strides=None, address=None,
                 byte_offset=0, versioned=False, flags=0, version=(1, 0),
                 legacy_signature=False):
        if address is None:
            address = _next_address[0]
            _next_address[0] += 1 << 32
        self.shape, self.dtype, self.device = tuple(shape), dtype, device
        self.strides, self.address, self.byte_offset = strides, address, byte_offset
        self.versioned, self.flags, self.version = versioned, flags, version
        self.streams = []
        self._keep_alive = []
        if legacy_signature:
            # A producer from before DLPack 1.0: __dlpack__ takes no max_version.
            self.__dlpack__ = lambda stream=None: self._export(stream, None)

    def __dlpack_device__(self):
        return self.device

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        return self._export(stream, max_version)

    def _export(self, stream, max_version):
        self.streams.append(stream)
        ndim = len(self.shape)
        shape = (ctypes.c_int64 * ndim)(*self.shape)
        strides = (ctypes.c_int64 * ndim)(*self.strides) if self.strides is not None else None
        tensor = _DLTensor()
        tensor.data = self.address
        tensor.device = _DLDevice(*self.device)
        tensor.ndim = ndim
        tensor.dtype = _DLDataType(*DTYPES[self.dtype])
        tensor.shape = ctypes.cast(shape, ctypes.POINTER(ctypes.c_int64))
        tensor.strides = (ctypes.cast(strides, ctypes.POINTER(ctypes.c_int64)) if strides
                          else ctypes.POINTER(ctypes.c_int64)())
        tensor.byte_offset = self.byte_offset
        if self.versioned and max_version is not None:
            managed = _DLManagedTensorVersioned()
            managed.version = _DLPackVersion(*self.version)
            managed.flags = self.flags
            managed.dl_tensor = tensor
            name = b"dltensor_versioned"
        else:
            managed = _DLManagedTensor()
            managed.dl_tensor = tensor
            name = b"dltensor"
        self._keep_alive.append((shape, strides, managed, name))
        return _capsule_new(ctypes.addressof(managed), name, None)


def fake_qkv(shape, dtype="fp16", **kwargs):
    return tuple(FakeArray(shape, dtype, **kwargs) for _ in range(3))


def built_kernel(predicate=lambda step, config: True, pass_="forward"):
    """The first built (step, config) of the pass (forward() runs forward steps, backward() the
    backward steps B1, B2, ...) satisfying predicate, or None."""
    for step, config in flashscope.kernels():
        if flashscope.kernel_info(step, config)["pass"] == pass_ and predicate(step, config):
            return step, config
    return None


def expect_checks_pass(call):
    """For calls whose every GPU-independent check should pass: on a machine without a GPU they
    stop at the device query, on a GPU host they return."""
    if gpu_unavailable_reason() is None:
        return call()
    with pytest.raises(RuntimeError, match="no usable CUDA device"):
        call()
    return None
