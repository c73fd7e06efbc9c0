"""backward()'s and forward(return_lse=...)'s checks, on arrays that describe memory they do not own
(conftest.FakeArray): every rule that needs no GPU is checked before one is looked for, so these run
on any machine. The GPU half is test_backward_gpu.py."""

import pytest

import flashscope
from conftest import FakeArray, built_kernel, expect_checks_pass, fake_qkv


def backward_kernel():
    found = built_kernel(pass_="backward")
    if found is None:
        pytest.skip("no backward step (B1, B2, ...) is built into this module")
    return found


def forward_kernel():
    found = built_kernel()
    if found is None:
        pytest.skip("no forward step is built into this module (a backward-only build)")
    return found


def backward_arrays(shape, dtype="fp16", kv_heads=None, lse_shape=None, lse_dtype="fp32"):
    """q, k, v, o, do and lse for a backward of `shape` = (batch, seq_len, heads, d_head)."""
    batch, seq_len, heads, d_head = shape
    kv_shape = (batch, seq_len, kv_heads or heads, d_head)
    q, o, do = (FakeArray(shape, dtype) for _ in range(3))
    k, v = FakeArray(kv_shape, dtype), FakeArray(kv_shape, dtype)
    lse = FakeArray(lse_shape or (batch, heads, seq_len), lse_dtype)
    return q, k, v, o, do, lse


def test_a_well_formed_backward_passes_every_check_before_the_gpu():
    step, config = backward_kernel()
    arrays = backward_arrays((2, 200, 3, config.d_head), config.dtype)
    # 200 is no multiple of any block: the backward steps take partial blocks. The arrays are fakes,
    # so nothing may launch on them: resolve_backward_kernel makes backward()'s checks only.
    chosen = expect_checks_pass(
        lambda: flashscope.resolve_backward_kernel(*arrays, step=step, config=config))
    if chosen is not None:
        assert chosen == (step, config)
    newest = expect_checks_pass(lambda: flashscope.resolve_backward_kernel(*arrays))
    if newest is not None:
        assert flashscope.kernel_info(*newest)["pass"] == "backward"


def test_a_forward_step_is_refused_by_its_pass():
    forward_step, _ = forward_kernel()
    arrays = backward_arrays((1, 256, 2, 128))
    with pytest.raises(ValueError, match=rf"step {forward_step} is a forward step, not a backward "
                                         r"one; the backward pass runs on steps? B1"):
        flashscope.backward(*arrays, step=forward_step)


def test_a_backward_step_is_refused_by_forward():
    step, config = backward_kernel()
    q, k, v = fake_qkv((1, 256, 2, config.d_head), config.dtype)
    with pytest.raises(ValueError, match=r"is a backward step, not a forward one"):
        flashscope.forward(q, k, v, step=step, config=config)


def test_grouped_heads_are_refused_naming_the_rule():
    step, config = backward_kernel()
    arrays = backward_arrays((1, 256, 8, config.d_head), config.dtype, kv_heads=2)
    with pytest.raises(ValueError, match=r"runs multi-head attention only \(heads_kv = heads\), "
                                         r"not heads_kv 2 for 8 heads"):
        flashscope.backward(*arrays, step=step)
    with pytest.raises(ValueError, match=r"runs multi-head attention only"):
        flashscope.resolve_backward_kernel(*arrays, step=step)


def test_d_head_256_is_refused_by_name():
    step, _ = backward_kernel()
    arrays = backward_arrays((1, 256, 2, 256))
    with pytest.raises(ValueError, match=r"runs d_head 64, 128; d_head 256 runs on no backward "
                                         r"step yet"):
        flashscope.backward(*arrays, step=step)


def test_lse_must_be_float32_of_q_s_rows():
    step, config = backward_kernel()
    shape = (2, 128, 3, config.d_head)
    q, k, v, o, do, _ = backward_arrays(shape, config.dtype)
    with pytest.raises(TypeError, match=r"^lse has dtype float16; the log-sum-exp is float32"):
        flashscope.backward(q, k, v, o, do, FakeArray((2, 3, 128), "fp16"), step=step)
    with pytest.raises(ValueError, match=r"^lse has shape \(2, 128, 3\); the log-sum-exp of q is "
                                         r"float32 \[batch, heads, seq_len\] = \(2, 3, 128\)"):
        flashscope.backward(q, k, v, o, do, FakeArray((2, 128, 3), "fp32"), step=step)
    with pytest.raises(ValueError, match=r"^lse must be contiguous"):
        flashscope.backward(q, k, v, o, do,
                            FakeArray((2, 3, 128), "fp32", strides=(1, 256, 2)), step=step)


def test_o_and_do_must_be_shaped_like_q():
    step, config = backward_kernel()
    shape = (1, 128, 2, config.d_head)
    q, k, v, o, do, lse = backward_arrays(shape, config.dtype)
    other = FakeArray((1, 128, 4, config.d_head), config.dtype)
    with pytest.raises(ValueError, match=r"^dO has shape \[1, 128, 4, .*\] but Q has"):
        flashscope.backward(q, k, v, o, other, lse, step=step)
    with pytest.raises(ValueError, match=r"^O has shape"):
        flashscope.backward(q, k, v, other, do, lse, step=step)
    wrong_dtype = "bf16" if config.dtype == "fp16" else "fp16"
    with pytest.raises(ValueError, match=r"^dO has dtype"):
        flashscope.backward(q, k, v, o, FakeArray(shape, wrong_dtype), lse, step=step)


def test_given_gradients_are_checked_like_their_inputs():
    step, config = backward_kernel()
    shape = (1, 128, 2, config.d_head)
    arrays = backward_arrays(shape, config.dtype)
    with pytest.raises(ValueError, match=r"^dK has shape"):
        flashscope.backward(*arrays, step=step,
                            dk=FakeArray((1, 128, 1, config.d_head), config.dtype))
    with pytest.raises(ValueError, match=r"^dq overlaps q in memory"):
        flashscope.backward(*arrays, step=step,
                            dq=FakeArray(shape, config.dtype, address=arrays[0].address))
    with pytest.raises(ValueError, match=r"^dv is read-only"):
        flashscope.backward(*arrays, step=step,
                            dv=FakeArray(shape, config.dtype, versioned=True, flags=1))


def test_return_lse_and_lse_are_exclusive_and_typed():
    q, k, v = fake_qkv((1, 256, 2, 128))
    with pytest.raises(ValueError, match="either return_lse=True"):
        flashscope.forward(q, k, v, return_lse=True, lse=FakeArray((1, 2, 256), "fp32"))
    with pytest.raises(TypeError, match="return_lse must be True or False"):
        flashscope.forward(q, k, v, return_lse=1)
    # The module's own arrays cannot hold fp32: other frameworks pass lse= themselves.
    with pytest.raises(TypeError, match=r"return_lse=True allocates the log-sum-exp for PyTorch "
                                        r"and CuPy arrays"):
        flashscope.forward(q, k, v, return_lse=True)


def test_a_step_without_the_lse_is_refused_when_asked_for_it():
    found = built_kernel(lambda s, c: not flashscope.kernel_info(s, c)["writes_lse"]
                         and not c.is_hopper)
    if found is None:
        pytest.skip("every built forward step writes the log-sum-exp")
    step, config = found
    q, k, v = fake_qkv((1, config.B_r * config.B_c, 2, config.d_head), config.dtype)
    lse = FakeArray((1, 2, config.B_r * config.B_c), "fp32")
    # The step's rule is checked against the device's; without a GPU the device query comes first.
    from conftest import gpu_unavailable_reason
    if gpu_unavailable_reason() is not None:
        with pytest.raises(RuntimeError, match="no usable CUDA device"):
            flashscope.forward(q, k, v, step=step, config=config, lse=lse)
        return
    with pytest.raises(ValueError, match=r"does not write the log-sum-exp; the steps that do"):
        flashscope.forward(q, k, v, step=step, config=config, lse=lse)


def test_kernel_info_names_the_pass():
    step, config = backward_kernel()
    info = flashscope.kernel_info(step, config)
    assert info["pass"] == "backward"
    assert info["writes_lse"] is False
    forward = built_kernel()
    if forward is not None:  # a backward-only build has none
        assert flashscope.kernel_info(*forward)["pass"] == "forward"
