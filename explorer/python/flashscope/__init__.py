"""flashscope kernels on PyTorch, CuPy and JAX arrays (docs/python.md).

    import torch, flashscope
    q, k, v = (torch.randn(2, 1024, 16, 128, device="cuda", dtype=torch.float16) for _ in range(3))
    o = flashscope.forward(q, k, v)                      # newest step built for this GPU, its pick
    o, ms = flashscope.forward_timed(q, k, v, step=16)   # median of CUDA-event timings
    o, lse = flashscope.forward(q, k, v, return_lse=True)          # and the row log-sum-exp
    dq, dk, dv = flashscope.backward(q, k, v, o, do, lse)           # a backward step (B1, B2, ...)
    o = flashscope.attention(q, k, v, causal=True)       # differentiable (PyTorch autograd)

Q is [batch, seq_len, heads, d_head] and K, V [batch, seq_len, heads_kv, d_head] (heads_kv =
heads, or a divisor of it for grouped-query attention), contiguous, fp16 or bf16, on one GPU,
taken through DLPack without a copy. The C++ extension (_core) checks every rule and launches; this file only
adds what depends on the caller's framework: its current stream and its output allocator.
"""

from . import _core
from ._core import Config, DeviceArray, Timing, build_info, kernel_info, kernels

# The project's version (top-level CMakeLists.txt, its one source), compiled into the extension.
__version__ = _core.__version__

__all__ = [
    "Config",
    "DeviceArray",
    "Timing",
    "attention",
    "backward",
    "build_info",
    "default_config",
    "forward",
    "forward_timed",
    "kernel_info",
    "kernels",
    "resolve_backward_kernel",
    "resolve_kernel",
]


def _framework(array):
    """'torch', 'cupy', 'jax' or None, from the array's type."""
    module = type(array).__module__.split(".")[0]
    if module in ("torch", "cupy"):
        return module
    if module in ("jax", "jaxlib"):
        return "jax"
    return None


def _stream_handle(array, stream):
    """The cudaStream_t (an int) a call runs on: `stream` as given, else the framework's current
    stream for the array's device (PyTorch, CuPy), else the legacy default stream (0)."""
    if stream is not None:
        if isinstance(stream, bool):
            raise TypeError("stream must be a CUDA stream, not a bool")
        if isinstance(stream, int):
            return stream
        for attribute in ("cuda_stream", "ptr"):  # torch.cuda.Stream, cupy.cuda.Stream
            if hasattr(stream, attribute):
                return int(getattr(stream, attribute))
        raise TypeError(
            "stream must be a cudaStream_t handle (int), a torch.cuda.Stream or a "
            f"cupy.cuda.Stream; got {type(stream).__name__}")
    framework = _framework(array)
    if framework == "torch" and array.is_cuda:
        import torch
        return torch.cuda.current_stream(array.device).cuda_stream
    if framework == "cupy":
        import cupy
        with array.device:
            return cupy.cuda.get_current_stream().ptr
    return 0  # JAX and unknown frameworks expose no current stream: the legacy default stream


def _inputs(array):
    """A PyTorch tensor that requires grad cannot be exported through DLPack; the kernels are no
    autograd operations themselves (attention() is the differentiable form), so the call reads it
    through a detached view (no copy)."""
    if _framework(array) == "torch" and array.requires_grad:
        return array.detach()
    return array


def _output_allocator(q, stream):
    """Allocates o like q in q's framework, associated with `stream` (so a stream-ordered
    allocator does not hand the memory to other work while the kernel writes it). `dtype` is the
    output's ("bf16" for e4m3 inputs, docs/spec/fp8-track.md §1; else q's own)."""

    def allocate(shape, dtype, device):
        framework = _framework(q)
        if framework == "torch":
            import torch
            out_dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}[dtype]

            def empty():
                return torch.empty(tuple(shape), dtype=out_dtype, device=q.device)

            if torch.cuda.current_stream(q.device).cuda_stream == stream:
                return empty()
            with torch.cuda.stream(torch.cuda.ExternalStream(stream, device=q.device)):
                return empty()
        if framework == "cupy" and dtype != "bf16":  # CuPy has no bfloat16: DeviceArray below
            import cupy
            with q.device:
                if cupy.cuda.get_current_stream().ptr == stream:
                    return cupy.empty_like(q, order="C")
                with cupy.cuda.ExternalStream(stream):
                    return cupy.empty_like(q, order="C")
        # JAX arrays are immutable and other frameworks unknown: the module's own buffer, handed
        # to the framework's from_dlpack after the launch (_finish_output).
        return DeviceArray(shape, dtype, device)

    return allocate


def _finish_output(q, o):
    if isinstance(o, DeviceArray) and _framework(q) == "jax":
        import jax
        return jax.dlpack.from_dlpack(o)
    return o


def _config(config):
    if config is None or isinstance(config, Config):
        return config
    if isinstance(config, str):
        return Config.parse(config)
    raise TypeError(f"config must be a flashscope.Config or its short form (str); got "
                    f"{type(config).__name__}")


def _step(step):
    if step is None:
        return None
    if isinstance(step, bool) or not isinstance(step, int):
        raise TypeError(f"step must be an int such as 16; got {type(step).__name__} {step!r}")
    return step


def _lse_allocator(q, stream):
    """Allocates the fp32 [batch, heads, seq_len] log-sum-exp of q in q's framework, associated
    with `stream` as _output_allocator does. JAX arrays are immutable and the module's own buffer
    holds fp16/bf16 tensors only, so other frameworks pass lse= themselves."""
    batch, seq_len, heads = q.shape[0], q.shape[1], q.shape[2]
    framework = _framework(q)
    if framework == "torch":
        import torch
        if torch.cuda.current_stream(q.device).cuda_stream == stream:
            return torch.empty((batch, heads, seq_len), dtype=torch.float32, device=q.device)
        with torch.cuda.stream(torch.cuda.ExternalStream(stream, device=q.device)):
            return torch.empty((batch, heads, seq_len), dtype=torch.float32, device=q.device)
    if framework == "cupy":
        import cupy
        with q.device:
            if cupy.cuda.get_current_stream().ptr == stream:
                return cupy.empty((batch, heads, seq_len), dtype=cupy.float32)
            with cupy.cuda.ExternalStream(stream):
                return cupy.empty((batch, heads, seq_len), dtype=cupy.float32)
    raise TypeError(
        "return_lse=True allocates the log-sum-exp for PyTorch and CuPy arrays; for "
        f"{type(q).__module__} arrays pass lse= (float32 [batch, heads, seq_len], on q's GPU)")


def _run(q, k, v, step, config, o, causal, stream, timing, lse=None, descales=(None,) * 3):
    if not isinstance(causal, bool):
        raise TypeError(f"causal must be True or False; got {type(causal).__name__}")
    handle = _stream_handle(q, stream)
    q, k, v = _inputs(q), _inputs(k), _inputs(v)
    allocate = None if o is not None else _output_allocator(q, handle)
    if isinstance(lse, bool):  # return_lse=True: allocate it here
        lse = _lse_allocator(q, handle) if lse else None
    q_descale, k_descale, v_descale = (_inputs(d) if d is not None else None for d in descales)
    result = _core.forward(q, k, v, o, allocate, _step(step), _config(config), causal, handle,
                           timing, lse, q_descale=q_descale, k_descale=k_descale,
                           v_descale=v_descale)
    return (o if o is not None else _finish_output(q, result.o)), result, lse


def forward(q, k, v, *, step=None, config=None, o=None, causal=False, stream=None,
            return_lse=False, lse=None, q_descale=None, k_descale=None, v_descale=None):
    """Attention forward pass O = softmax(Q K^T / sqrt(d)) V with one flashscope kernel.

    q, k, v: CUDA arrays (PyTorch, CuPy, JAX, anything with __dlpack__), contiguous, one dtype
    (float16, bfloat16, or float8_e4m3fn for the FP8 track), one GPU: q [batch, seq_len, heads,
    d_head], k and v [batch, seq_len, heads_kv, d_head]. heads_kv < heads is grouped-query
    attention (query head h reads K/V head h // (heads // heads_kv)), run by the steps whose
    descriptor has `.grouped_kv`; heads must be a multiple of heads_kv.
    step: the step to run (None: the newest step built for this GPU that takes the inputs).
    config: a Config or its short form (None: the step's pick for this GPU).
    o: where to write the output (like q); None allocates it in q's framework.
    causal: True runs the causal problem (query i attends to keys j <= i, bottom-right aligned:
    the lower triangle for equal Q and K lengths) on a step with the mask (its descriptor's
    `.causal`); without step, the newest such step. A step without it raises ValueError naming
    the steps that have it.
    stream: a cudaStream_t handle, torch.cuda.Stream or cupy.cuda.Stream (None: the framework's
    current stream; the legacy default stream for JAX). The launch is asynchronous on it.
    return_lse: also return the row log-sum-exp L = m + ln(sum_j exp(s_j - m)) of the scaled
    scores s = Q K^T / sqrt(d), fp32 [batch, heads, seq_len] (docs/spec/backward-track.md §1),
    what backward() takes; allocated in q's framework (PyTorch, CuPy), or written into `lse`.
    Only steps whose descriptor has `.writes_lse` write it (ValueError names them).
    q_descale, k_descale, v_descale: float32 CUDA arrays, [batch, heads] for q and [batch,
    heads_kv] for k and v, given exactly when the inputs are float8_e4m3fn: the real value is
    descale x stored (docs/spec/fp8-track.md §1). e4m3 inputs write a bfloat16 o. Step 28
    runs e4m3; the other steps refuse it by name after these checks.

    Returns o, or (o, lse) with return_lse or lse given. Raises TypeError / ValueError naming the
    value and the rule it breaks.
    """
    if not isinstance(return_lse, bool):
        raise TypeError(f"return_lse must be True or False; got {type(return_lse).__name__}")
    if return_lse and lse is not None:
        raise ValueError("give either return_lse=True (allocated here) or lse= (written there)")
    out, _, lse = _run(q, k, v, step, config, o, causal, stream, None,
                       lse if lse is not None else return_lse,
                       (q_descale, k_descale, v_descale))
    return (out, lse) if lse is not None else out


def backward(q, k, v, o, do, lse, *, causal=False, step=None, config=None, dq=None, dk=None,
             dv=None, stream=None):
    """The attention backward (docs/spec/backward-track.md §1) with one flashscope backward step:
    dQ, dK, dV from q, k, v, the forward's output o and row log-sum-exp lse (forward(...,
    return_lse=True)) and the loss gradient do = dLoss/dO.

    q, k, v, o, do: CUDA arrays as forward() takes them (o and do like q), one dtype, contiguous;
    lse: float32 [batch, heads, seq_len], contiguous. The backward steps B1 and B2 run multi-head
    attention (heads_kv = heads) at d_head 64 and 128; another problem raises ValueError naming
    the steps that run it.
    causal: the causal problem (the forward must have been causal too).
    step: the backward step to run, by number (101 is B1, 102 B2; None: the newest built one
    that runs on this GPU and takes the inputs). config: a Config or its short form.
    dq, dk, dv: where to write the gradients (like q, k, v); None allocates them in q's framework.
    stream: as for forward(); the launch is asynchronous on it.

    Returns (dq, dk, dv). Raises TypeError / ValueError naming the value and the rule it breaks.
    """
    q, result = _backward_call(q, k, v, o, do, lse, causal, step, config, dq, dk, dv, stream,
                               launch=True)
    return tuple(_finish_output(q, g) for g in (result.dq, result.dk, result.dv))


def _backward_call(q, k, v, o, do, lse, causal, step, config, dq, dk, dv, stream, *, launch):
    """backward()'s checks and, with `launch`, its run; (q as the module reads it, the result)."""
    if not isinstance(causal, bool):
        raise TypeError(f"causal must be True or False; got {type(causal).__name__}")
    handle = _stream_handle(q, stream)
    q, k, v, o, do = (_inputs(array) for array in (q, k, v, o, do))
    allocate = _output_allocator(q, handle) if launch else None
    return q, _core.backward(q, k, v, o, do, _inputs(lse), dq, dk, dv, allocate, _step(step),
                             _config(config), causal, handle, launch=launch)


_attention_function = None


def _attention_autograd():
    """The torch.autograd.Function behind attention(), made on first use so that importing
    flashscope needs no PyTorch."""
    global _attention_function
    if _attention_function is not None:
        return _attention_function
    import torch

    class _Attention(torch.autograd.Function):
        @staticmethod
        def forward(ctx, q, k, v, causal):
            o, lse = forward(q, k, v, causal=causal, return_lse=True)
            ctx.save_for_backward(q, k, v, o, lse)
            ctx.causal = causal
            return o

        @staticmethod
        def backward(ctx, do):
            q, k, v, o, lse = ctx.saved_tensors
            # Autograd may hand a non-contiguous or expanded gradient (e.g. of a sum); the kernels
            # take contiguous arrays.
            dq, dk, dv = backward(q, k, v, o, do.contiguous(), lse, causal=ctx.causal)
            return dq, dk, dv, None

    _attention_function = _Attention
    return _Attention


def attention(q, k, v, causal=False):
    """Differentiable attention for PyTorch tensors: forward() with the newest forward step that
    writes the log-sum-exp (it saves q, k, v, O and the LSE), and backward() with the newest
    backward step in autograd's backward pass. Layout and rules as forward() and backward().
    Needs PyTorch (ImportError otherwise)."""
    if not isinstance(causal, bool):
        raise TypeError(f"causal must be True or False; got {type(causal).__name__}")
    return _attention_autograd().apply(q, k, v, causal)


def forward_timed(q, k, v, *, step=None, config=None, o=None, causal=False, stream=None,
                  ci_target=1.0, min_rounds=10, max_rounds=400, cell_seconds=2.0,
                  launch_pattern="graph", q_descale=None, k_descale=None, v_descale=None):
    """forward(), timed as `explorer --csv` times a kernel row, with the same engine and defaults
    (docs/profiling.md, "Interleaved measurement and intervals"): a warm-up, then rounds of a
    batch of launches (a CUDA graph replay by default), until the 95 % interval of the median is
    narrower than ci_target percent of it, max_rounds or cell_seconds of rounds is reached, and
    never fewer than min_rounds. launch_pattern: "graph", "stream" or "gapped" (the sweep's
    --launch-pattern). The rounds run on a stream of flashscope's, ordered after the work already
    on `stream` and before what comes next on it.

    Returns (o, timing): timing.ms is the median per-launch time in milliseconds (float(timing)
    too), timing.ci_low_ms and timing.ci_high_ms its interval, timing.rounds, .launch_pattern
    (the one used), .stop_reason. Blocks until the launches are done."""
    for name, value in (("min_rounds", min_rounds), ("max_rounds", max_rounds)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"{name} must be an int; got {type(value).__name__}")
    for name, value in (("ci_target", ci_target), ("cell_seconds", cell_seconds)):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TypeError(f"{name} must be a number; got {type(value).__name__}")
    if not isinstance(launch_pattern, str):
        raise TypeError(f"launch_pattern must be a str; got {type(launch_pattern).__name__}")
    request = _core.TimingRequest(float(ci_target), min_rounds, max_rounds, float(cell_seconds),
                                  launch_pattern)
    out, result, _ = _run(q, k, v, step, config, o, causal, stream, request,
                          descales=(q_descale, k_descale, v_descale))
    return out, result.timing


def resolve_kernel(q, k, v, *, step=None, config=None, o=None, causal=False, stream=None,
                   q_descale=None, k_descale=None, v_descale=None):
    """(step, Config) that forward() would run for these arguments, after every check it makes,
    without launching anything."""
    if not isinstance(causal, bool):
        raise TypeError(f"causal must be True or False; got {type(causal).__name__}")
    handle = _stream_handle(q, stream)
    return _core.resolve_kernel(_inputs(q), _inputs(k), _inputs(v), o, _step(step),
                                _config(config), causal, handle, q_descale, k_descale, v_descale)


def resolve_backward_kernel(q, k, v, o, do, lse, *, causal=False, step=None, config=None, dq=None,
                            dk=None, dv=None, stream=None):
    """(step, Config) that backward() would run for these arguments, after every check it makes,
    without allocating or launching anything."""
    _, result = _backward_call(q, k, v, o, do, lse, causal, step, config, dq, dk, dv, stream,
                               launch=False)
    return result.step, result.config


def default_config(step, dtype="fp16", *, d_head=128, device=None, compute_capability=None,
                   device_name=""):
    """The config forward(step=step, config=None) runs for inputs of `dtype` and `d_head`: the
    step's pick for the GPU (configs/config_sets.hpp) that is built into this module. The GPU is
    CUDA device `device` (default 0), or the one described by compute_capability (e.g. 90) and
    device_name (e.g. "NVIDIA H100 80GB HBM3") when those are given, which needs no GPU."""
    # The module checks step, dtype, d_head and compute_capability (ValueError naming the rule)
    # before it asks CUDA about `device`.
    return _core.default_config(_step(step), dtype, d_head, device, compute_capability,
                                device_name)
