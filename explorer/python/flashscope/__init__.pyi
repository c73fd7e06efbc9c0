# Type stubs of the package flashscope (explorer/python/flashscope/__init__.py; docs/python.md).
# tests/python/test_package.py checks that they name every public attribute of the package.
from typing import Any

from ._core import Config as Config
from ._core import DeviceArray as DeviceArray
from ._core import Timing as Timing
from ._core import build_info as build_info
from ._core import kernel_info as kernel_info
from ._core import kernels as kernels

__version__: str
__all__: list[str]

# An array of PyTorch, CuPy, JAX or anything with __dlpack__ / __dlpack_device__.
_Array = Any
# A cudaStream_t handle, a torch.cuda.Stream or a cupy.cuda.Stream.
_Stream = Any

def forward(
    q: _Array,
    k: _Array,
    v: _Array,
    *,
    step: int | None = None,
    config: Config | str | None = None,
    o: _Array | None = None,
    causal: bool = False,
    stream: _Stream | None = None,
    return_lse: bool = False,
    lse: _Array | None = None,
    q_descale: _Array | None = None,
    k_descale: _Array | None = None,
    v_descale: _Array | None = None,
) -> _Array | tuple[_Array, _Array]: ...
def backward(
    q: _Array,
    k: _Array,
    v: _Array,
    o: _Array,
    do: _Array,
    lse: _Array,
    *,
    causal: bool = False,
    step: int | None = None,
    config: Config | str | None = None,
    dq: _Array | None = None,
    dk: _Array | None = None,
    dv: _Array | None = None,
    stream: _Stream | None = None,
) -> tuple[_Array, _Array, _Array]: ...
def attention(q: _Array, k: _Array, v: _Array, causal: bool = False) -> _Array: ...
def forward_timed(
    q: _Array,
    k: _Array,
    v: _Array,
    *,
    step: int | None = None,
    config: Config | str | None = None,
    o: _Array | None = None,
    causal: bool = False,
    stream: _Stream | None = None,
    ci_target: float = 1.0,
    min_rounds: int = 10,
    max_rounds: int = 400,
    cell_seconds: float = 2.0,
    launch_pattern: str = "graph",
    q_descale: _Array | None = None,
    k_descale: _Array | None = None,
    v_descale: _Array | None = None,
) -> tuple[_Array, Timing]: ...
def resolve_kernel(
    q: _Array,
    k: _Array,
    v: _Array,
    *,
    step: int | None = None,
    config: Config | str | None = None,
    o: _Array | None = None,
    causal: bool = False,
    stream: _Stream | None = None,
    q_descale: _Array | None = None,
    k_descale: _Array | None = None,
    v_descale: _Array | None = None,
) -> tuple[int, Config]: ...
def resolve_backward_kernel(
    q: _Array,
    k: _Array,
    v: _Array,
    o: _Array,
    do: _Array,
    lse: _Array,
    *,
    causal: bool = False,
    step: int | None = None,
    config: Config | str | None = None,
    dq: _Array | None = None,
    dk: _Array | None = None,
    dv: _Array | None = None,
    stream: _Stream | None = None,
) -> tuple[int, Config]: ...
def default_config(
    step: int,
    dtype: str = "fp16",
    *,
    d_head: int = 128,
    device: int | None = None,
    compute_capability: int | None = None,
    device_name: str = "",
) -> Config: ...
