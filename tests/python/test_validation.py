"""Every check forward() makes before it needs a GPU, on DLPack producers that need none: NumPy
arrays (CPU) and conftest.FakeArray (any device, dtype, shape, strides or flags; never launched:
these tests call resolve_kernel, or forward where the call must stop before the device query)."""

import re

import pytest

import flashscope
from conftest import CPU, CUDA, FakeArray, built_kernel, expect_checks_pass, fake_qkv

np = pytest.importorskip("numpy", reason="NumPy makes the CPU DLPack producer")


def ampere_kernel():
    found = built_kernel(lambda step, config: not config.is_hopper)
    if found is None:
        pytest.skip("no Ampere step built into this module")
    return found


def shape_for(config, heads=16, blocks=2, batch=2):
    seq_len = blocks * max(config.B_r, config.B_c)
    return (batch, seq_len, heads, config.d_head)


def check(q, k, v, step, config, **kwargs):
    return flashscope.resolve_kernel(q, k, v, step=step, config=config, **kwargs)


def test_a_non_array_is_a_type_error_naming_its_type():
    step, config = ampere_kernel()
    _, k, v = fake_qkv(shape_for(config))
    with pytest.raises(TypeError, match=r"^q must be an array implementing the DLPack protocol.*"
                                        r"got list$"):
        flashscope.forward([[1.0]], k, v, step=step, config=config)


def test_a_cpu_array_is_refused_naming_the_device():
    step, config = ampere_kernel()
    shape = shape_for(config)
    q = np.zeros(shape, dtype=np.float16)
    _, k, v = fake_qkv(shape)
    with pytest.raises(ValueError, match=r"^q is on cpu:0; the kernels read and write CUDA device "
                                         r"memory"):
        flashscope.forward(q, k, v, step=step, config=config)
    with pytest.raises(ValueError, match=r"^k is on cpu:0"):
        flashscope.forward(FakeArray(shape), np.zeros(shape, np.float16), v, step=step,
                           config=config)


@pytest.mark.parametrize("device, name", [((3, 0), "cuda_host"), ((10, 1), "rocm:1"),
                                          ((99, 0), "DLPack device type 99:0")])
def test_other_devices_are_refused_by_name(device, name):
    step, config = ampere_kernel()
    q, k, v = fake_qkv(shape_for(config))
    v = FakeArray(shape_for(config), device=device)
    with pytest.raises(ValueError, match=f"^v is on {re.escape(name)}"):
        check(q, k, v, step, config)


@pytest.mark.parametrize("dtype, name", [("fp32", "float32"), ("int8", "int8"),
                                         ("fp16x2", "float16x2"), ("e4m3x2", "float8_e4m3fnx2")])
def test_other_dtypes_are_type_errors_naming_the_dtype(dtype, name):
    step, config = ampere_kernel()
    q, k, _ = fake_qkv(shape_for(config))
    with pytest.raises(TypeError, match=f"^v has dtype {name}; the kernels take float16, "
                                        "bfloat16 or float8_e4m3fn$"):
        check(q, k, FakeArray(shape_for(config), dtype), step, config)


def test_a_numpy_float32_array_is_refused_for_its_device_first():
    step, config = ampere_kernel()
    q = np.zeros(shape_for(config), dtype=np.float32)
    _, k, v = fake_qkv(shape_for(config))
    with pytest.raises(ValueError, match="^q is on cpu:0"):
        check(q, k, v, step, config)


def test_not_four_dimensions_names_the_shape():
    step, config = ampere_kernel()
    _, k, v = fake_qkv(shape_for(config))
    with pytest.raises(ValueError, match=r"^q has 3 dimensions, shape \(2, 256, 2048\); the "
                                         r"kernels take 4: \[batch, seq_len, heads, d_head\]$"):
        check(FakeArray((2, 256, 2048)), k, v, step, config)


def test_shapes_must_match():
    step, config = ampere_kernel()
    shape = shape_for(config)
    other = (shape[0] + 1,) + shape[1:]
    q, k, _ = fake_qkv(shape)
    with pytest.raises(ValueError, match=re.escape(
            f"V has shape [{', '.join(map(str, other))}] but K has "
            f"[{', '.join(map(str, shape))}]; they must be equal")):
        check(q, k, FakeArray(other), step, config)
    # K (and V) may differ from Q in their head count alone.
    with pytest.raises(ValueError, match=re.escape(
            f"K has shape [{', '.join(map(str, other))}] but Q has "
            f"[{', '.join(map(str, shape))}]")):
        check(q, FakeArray(other), FakeArray(other), step, config)


def test_dtypes_must_match_each_other_and_the_config():
    step, config = ampere_kernel()
    shape = shape_for(config)
    q, _, v = fake_qkv(shape, config.dtype)
    other = "bf16" if config.dtype == "fp16" else "fp16"
    with pytest.raises(ValueError, match=f"K has dtype {other} but Q has {config.dtype}; Q, K and "
                                         "V must share one dtype"):
        check(q, FakeArray(shape, other), v, step, config)
    with pytest.raises(ValueError, match=f"kernel config dtype {config.dtype} does not match the "
                                         f"input dtype {other}"):
        check(*fake_qkv(shape, other), step, config)


def test_seq_len_must_be_a_multiple_of_B_r():
    step, config = ampere_kernel()
    shape = (1, config.B_r + 16, 16, config.d_head)
    with pytest.raises(ValueError, match=f"seq_len {config.B_r + 16} is not a multiple of "
                                         f"B_r = {config.B_r}"):
        check(*fake_qkv(shape, config.dtype), step, config)


def test_seq_len_must_be_a_multiple_of_B_c():
    found = built_kernel(lambda step, config: config.B_c > config.B_r
                         or config.B_r % config.B_c != 0)
    if found is None:
        pytest.skip("no built kernel has a B_c that does not divide B_r (the ci set's kernels "
                    "all do), so B_r's rule always fires first")
    step, config = found
    shape = (1, config.B_r, 16, config.d_head)
    with pytest.raises(ValueError, match=f"is not a multiple of B_c = {config.B_c}"):
        check(*fake_qkv(shape, config.dtype), step, config)


def test_d_head_must_be_the_kernels():
    """A step that does not run the inputs' d_head names the steps that do; a step that runs it,
    given a config of another d_head, names the config's."""
    step, config = ampere_kernel()
    shape = (1, 2 * config.B_r, 16, 64)
    with pytest.raises(ValueError, match=rf"^step {step} runs d_head 128 only; d_head 64 runs on "
                                         r"step"):
        check(*fake_qkv(shape, config.dtype), step, config)
    several = built_kernel(lambda s, c: c.d_head == 128 and any(
        other.d_head == 64 for t, other in flashscope.kernels() if t == s))
    if several is None:
        pytest.skip("no step is built at both d_head 64 and 128")
    step, config = several
    with pytest.raises(ValueError, match="d_head 64 does not match the kernel's d_head = 128"):
        check(*fake_qkv((1, 2 * config.B_r, 16, 64), config.dtype), step, config)


def test_non_contiguous_inputs_are_refused_with_their_strides():
    step, config = ampere_kernel()
    b, n, h, d = shape_for(config)
    q, k, _ = fake_qkv((b, n, h, d), config.dtype)
    transposed = FakeArray((b, n, h, d), config.dtype, strides=(n * h * d, d, n * d, 1))
    with pytest.raises(ValueError, match=re.escape(
            f"V must be contiguous [batch, seq_len, heads, d_head]; shape [{b}, {n}, {h}, {d}] "
            f"has strides [{n * h * d}, {d}, {n * d}, 1]")):
        check(q, k, transposed, step, config)


def test_extent_one_axes_may_report_any_stride():
    step, config = ampere_kernel()
    _, n, h, d = shape_for(config)
    q, k, _ = fake_qkv((1, n, h, d), config.dtype)
    v = FakeArray((1, n, h, d), config.dtype, strides=(12345, h * d, d, 1))
    result = expect_checks_pass(lambda: check(q, k, v, step, config))
    if result is not None:
        assert result == (step, config)


def test_misaligned_data_is_refused():
    step, config = ampere_kernel()
    q, k, _ = fake_qkv(shape_for(config), config.dtype)
    v = FakeArray(shape_for(config), config.dtype, byte_offset=2)
    with pytest.raises(ValueError, match="^v's data starts at [0-9]+, which is not 16-byte "
                                         "aligned"):
        check(q, k, v, step, config)


def test_o_must_be_like_q():
    step, config = ampere_kernel()
    shape = shape_for(config)
    q, k, v = fake_qkv(shape, config.dtype)
    other = "bf16" if config.dtype == "fp16" else "fp16"
    with pytest.raises(ValueError, match=f"O has dtype {other} but {config.dtype} inputs write "
                                         f"{config.dtype}"):
        check(q, k, v, step, config, o=FakeArray(shape, other))
    wrong = (shape[0], shape[1] * 2) + shape[2:]
    with pytest.raises(ValueError, match=re.escape(f"O has shape [{', '.join(map(str, wrong))}]")):
        check(q, k, v, step, config, o=FakeArray(wrong, config.dtype))
    with pytest.raises(ValueError, match="^o is read-only"):
        check(q, k, v, step, config,
              o=FakeArray(shape, config.dtype, versioned=True, flags=1))
    with pytest.raises(ValueError, match="^o is on cpu:0"):
        check(q, k, v, step, config, o=np.zeros(shape, np.float16))


def test_o_must_not_overlap_an_input():
    step, config = ampere_kernel()
    shape = shape_for(config)
    q, k, v = fake_qkv(shape, config.dtype)
    with pytest.raises(ValueError, match="^o overlaps k in memory; the output must not share "
                                         "memory with an input$"):
        check(q, k, v, step, config, o=FakeArray(shape, config.dtype, address=k.address + 256))
    with pytest.raises(ValueError, match="^o overlaps q in memory"):
        check(q, k, v, step, config, o=q)
    # Adjacent, not overlapping: accepted.
    size = 2 * shape[0] * shape[1] * shape[2] * shape[3]
    adjacent = FakeArray(shape, config.dtype, address=v.address + size)
    expect_checks_pass(lambda: check(q, k, v, step, config, o=adjacent))


def test_device_array_checks_its_arguments():
    with pytest.raises(ValueError, match="DeviceArray: every extent must be positive"):
        flashscope.DeviceArray((1, 0, 16, 128), "fp16", 0)
    with pytest.raises(ValueError, match=re.escape('dtype "fp32" is not fp16, bf16 or e4m3 (fp8)')):
        flashscope.DeviceArray((1, 128, 16, 128), "fp32", 0)
    # Checked before cudaMalloc: a ValueError, not the device's RuntimeError.
    with pytest.raises(ValueError, match=r"^device -1 is not a CUDA device index \(0 or more\)$"):
        flashscope.DeviceArray((1, 128, 16, 128), "fp16", -1)


@pytest.mark.parametrize("arguments, message", [
    (dict(dtype="fp32"), r'^dtype "fp32" is not fp16, bf16 or e4m3 \(fp8\)$'),
    (dict(dtype="fp8"), r"^step (\d+|B\d+) runs fp16 and bf16 inputs only, not e4m3; e4m3 \(FP8\) input "
                        r"runs on steps? 28\b"),
    (dict(step=99), r"^step 99 does not exist"),
    (dict(d_head=96), r"kernel built for d_head 96; its fp16 kernels take d_head"),
    (dict(device=-1), r"^device -1 is not a CUDA device index \(0 or more\)$"),
    (dict(compute_capability=-1), r"^compute_capability -1 is not a GPU the kernels run on: "
                                  r"major \* 10 \+ minor of sm_80 or newer"),
    (dict(compute_capability=75, device_name="Tesla T4"), r"^compute_capability 75 is not a GPU"),
])
def test_default_config_checks_its_arguments_before_the_gpu(arguments, message):
    # Each used to reach the device query first (RuntimeError without a GPU), or, for a described
    # compute capability, to answer.
    step = arguments.pop("step", flashscope.kernels()[0][0])
    if arguments.get("dtype") == "fp8":
        # The refusal is a 16-bit step's: a module built with FP8 steps only (a GPU host's
        # `--steps 32,33`) has none to ask.
        fp8_steps = {s for s, c in flashscope.kernels() if str(c.dtype).lower().endswith("e4m3")}
        sixteen_bit = [s for s, _ in flashscope.kernels() if s not in fp8_steps]
        if not sixteen_bit:
            pytest.skip("every step built into this module runs e4m3: none refuses it")
        step = sixteen_bit[0]
    with pytest.raises(ValueError, match=message):
        flashscope.default_config(step, **arguments)


def test_arrays_on_different_gpus_are_refused():
    step, config = ampere_kernel()
    shape = shape_for(config)
    q, k, _ = fake_qkv(shape, config.dtype)
    with pytest.raises(ValueError, match=r"^v is on cuda:1 but q is on cuda:0; q, k, v and o must "
                                         r"be on one GPU$"):
        check(q, k, FakeArray(shape, config.dtype, device=(CUDA, 1)), step, config)
    with pytest.raises(ValueError, match=r"^o is on cuda:2 but q is on cuda:0"):
        check(*fake_qkv(shape, config.dtype), step, config,
              o=FakeArray(shape, config.dtype, device=(CUDA, 2)))


def test_causal_is_refused_by_a_step_without_the_mask():
    """A step without the causal mask refuses causal=True with launch validation's message (the
    one of `explorer check --causal` and a causal sweep), naming the steps that have it."""
    step, config = ampere_kernel()
    assert not flashscope.kernel_info(step, config)["supports_causal"]
    named = rf"^step {step} has no causal mask; causal attention runs on "
    for kwargs in ({"step": step, "config": config}, {"step": step}):
        with pytest.raises(ValueError, match=named):
            flashscope.forward(*fake_qkv(shape_for(config), config.dtype), causal=True, **kwargs)
        with pytest.raises(ValueError, match=named):
            flashscope.resolve_kernel(*fake_qkv(shape_for(config), config.dtype), causal=True,
                                      **kwargs)
    # Without a step, the newest step with the mask is chosen; a build without one says so.
    if not any(flashscope.kernel_info(s, c)["supports_causal"] for s, c in flashscope.kernels()):
        with pytest.raises(ValueError,
                           match="^no step built into this module runs the problem .* causal "
                                 ".*: step .* has no causal mask; causal attention runs on "):
            flashscope.forward(*fake_qkv(shape_for(config), config.dtype), causal=True)
    with pytest.raises(TypeError, match="causal must be True or False"):
        flashscope.forward(*fake_qkv(shape_for(config)), causal="yes")


def test_steps_that_do_not_exist_or_are_not_built():
    step, config = ampere_kernel()
    qkv = fake_qkv(shape_for(config), config.dtype)
    with pytest.raises(ValueError, match="^step 99 does not exist"):
        check(*qkv, 99, config)
    with pytest.raises(TypeError, match="step must be an int such as 16; got str '16'"):
        check(*qkv, "16", config)
    # Forward steps: their numbers run 1, 2, ... without gaps (the backward ones from 101).
    built = {s for s, c in flashscope.kernels()
             if flashscope.kernel_info(s, c)["pass"] == "forward"}
    missing = [s for s in range(1, max(built)) if s not in built]
    if not missing:
        pytest.skip("every step up to the newest is built into this module")
    with pytest.raises(ValueError, match=f"^step {missing[0]} is not built into this module"):
        check(*qkv, missing[0], config)


def test_a_config_not_built_names_the_closest_built_ones():
    step, config = ampere_kernel()
    text = str(config)
    unbuilt = flashscope.Config.parse(text.replace("+opt_softmax", "") if "+opt_softmax" in text
                                      else text + "+opt_softmax")
    if (step, unbuilt) in flashscope.kernels():
        pytest.skip(f"both softmax variants of {config} are built for step {step}")
    qkv = fake_qkv(shape_for(config), config.dtype)
    with pytest.raises(ValueError, match=re.escape(
            f"step {step} has no kernel built for {unbuilt}; closest built configs of step "
            f"{step}:")):
        check(*qkv, step, unbuilt)


def test_unknown_config_tokens_are_named():
    step, config = ampere_kernel()
    qkv = fake_qkv(shape_for(config), config.dtype)
    with pytest.raises(ValueError, match="cannot parse config .*warp_drive"):
        check(*qkv, step, str(config) + "+warp_drive")
    with pytest.raises(TypeError, match="config must be a flashscope.Config or its short form"):
        check(*qkv, step, 128)


def test_a_config_given_as_text_is_parsed():
    step, config = ampere_kernel()
    qkv = fake_qkv(shape_for(config), config.dtype)
    result = expect_checks_pass(lambda: check(*qkv, step, str(config)))
    if result is not None:
        assert result == (step, config)


def test_streams_reach_the_producers():
    step, config = ampere_kernel()
    qkv = fake_qkv(shape_for(config), config.dtype)
    # An unknown framework has no current stream: the legacy default stream, DLPack's 1.
    expect_checks_pass(lambda: check(*qkv, step, config))
    assert [array.streams[-1] for array in qkv] == [1, 1, 1]
    expect_checks_pass(lambda: check(*qkv, step, config, stream=0x5000))
    assert [array.streams[-1] for array in qkv] == [0x5000] * 3

    class Stream:  # any object with cuda_stream (PyTorch) or ptr (CuPy)
        cuda_stream = 0x6000

    expect_checks_pass(lambda: check(*qkv, step, config, stream=Stream()))
    assert [array.streams[-1] for array in qkv] == [0x6000] * 3
    with pytest.raises(TypeError, match="stream must be a cudaStream_t handle"):
        check(*qkv, step, config, stream="default")


def test_versioned_and_legacy_producers_are_both_read():
    step, config = ampere_kernel()
    shape = shape_for(config)
    q = FakeArray(shape, config.dtype, versioned=True)
    k = FakeArray(shape, config.dtype, legacy_signature=True)
    v = FakeArray(shape, config.dtype)
    result = expect_checks_pass(lambda: check(q, k, v, step, config))
    if result is not None:
        assert result == (step, config)
    with pytest.raises(ValueError, match=r"^q was exported with DLPack 2\.0; flashscope reads 1\.x"):
        check(FakeArray(shape, config.dtype, versioned=True, version=(2, 0)), k, v, step, config)


def test_a_producer_returning_no_capsule_is_a_type_error():
    step, config = ampere_kernel()
    q, k, v = fake_qkv(shape_for(config), config.dtype)
    q.__dlpack__ = lambda **kwargs: "not a capsule"
    with pytest.raises(TypeError, match=r"^q.__dlpack__\(\) returned 'not a capsule', not an "
                                        r"unconsumed DLPack capsule"):
        check(q, k, v, step, config)


@pytest.mark.parametrize("arguments, error, message", [
    ({"min_rounds": 0}, ValueError, "forward_timed: "),
    ({"min_rounds": 50, "max_rounds": 10}, ValueError, "forward_timed: "),
    ({"max_rounds": 2.5}, TypeError, "max_rounds must be an int; got float"),
    ({"ci_target": 0}, ValueError, "ci_target=0.000000: the target interval width must be a "
                                   "positive percentage of the median"),
    ({"cell_seconds": "2"}, TypeError, "cell_seconds must be a number; got str"),
    ({"launch_pattern": "loop"}, ValueError, 'launch_pattern="loop" is not a launch pattern: '
                                             "graph, stream or gapped"),
])
def test_forward_timed_checks_its_settings_before_the_gpu(arguments, error, message):
    step, config = ampere_kernel()
    with pytest.raises(error, match=re.escape(message)):
        flashscope.forward_timed(*fake_qkv(shape_for(config), config.dtype), step=step,
                                 config=config, **arguments)


def test_fewer_kv_heads_are_refused_by_a_step_without_grouped_kv():
    """K and V with fewer heads than Q (grouped-query attention) on a step whose descriptor lacks
    `.grouped_kv`: launch validation's message, naming the steps that run it."""
    step, config = ampere_kernel()
    assert flashscope.kernel_info(step, config)["supports_grouped_kv"] is False
    batch, seq_len, _, d_head = shape_for(config)
    q = FakeArray((batch, seq_len, 8, d_head), config.dtype)
    k, v = (FakeArray((batch, seq_len, 2, d_head), config.dtype) for _ in range(2))
    with pytest.raises(ValueError, match=rf"^step {step} runs multi-head attention only "
                                         r"\(heads_kv = heads\), not heads_kv 2 for 8 heads; "
                                         r"grouped-query attention runs on step"):
        check(q, k, v, step, config)


def test_kv_heads_must_divide_the_query_heads():
    step, config = ampere_kernel()
    batch, seq_len, _, d_head = shape_for(config)
    q = FakeArray((batch, seq_len, 6, d_head), config.dtype)
    k, v = (FakeArray((batch, seq_len, 4, d_head), config.dtype) for _ in range(2))
    with pytest.raises(ValueError, match="heads 6 is not a multiple of heads_kv 4"):
        check(q, k, v, step, config)
    # K and V share one head count, even where each alone would divide Q's (a step that runs
    # grouped K/V heads, so that the problem itself is not refused first).
    grouped = built_kernel(
        lambda s, c: flashscope.kernel_info(s, c)["supports_grouped_kv"])
    if grouped is None:
        pytest.skip("no step with grouped K/V heads (step 26) is built into this module")
    step, config = grouped
    batch, seq_len, _, d_head = shape_for(config)
    q = FakeArray((batch, seq_len, 8, d_head), config.dtype)
    k = FakeArray((batch, seq_len, 4, d_head), config.dtype)
    with pytest.raises(ValueError, match=r"V has shape \[.*, 2, .*\] but K has \[.*, 4, .*\]; "
                                         "they must be equal"):
        check(q, k, FakeArray((batch, seq_len, 2, d_head), config.dtype), step, config)


# ---- e4m3 inputs (docs/spec/fp8-track.md §1.1): descales checked, then refused by every step ---

def e4m3_arrays(config, heads=16, heads_kv=16, batch=2):
    """e4m3 q, k, v of the config's d_head and fp32 descales [batch, heads] / [batch, heads_kv]."""
    q_shape = shape_for(config, heads=heads, batch=batch)
    kv_shape = q_shape[:2] + (heads_kv, q_shape[3])
    q = FakeArray(q_shape, "e4m3")
    k, v = FakeArray(kv_shape, "e4m3"), FakeArray(kv_shape, "e4m3")
    descales = dict(q_descale=FakeArray((batch, heads), "fp32"),
                    k_descale=FakeArray((batch, heads_kv), "fp32"),
                    v_descale=FakeArray((batch, heads_kv), "fp32"))
    return q, k, v, descales


def test_e4m3_inputs_need_their_descales():
    step, config = ampere_kernel()
    q, k, v, descales = e4m3_arrays(config)
    del descales["k_descale"]
    with pytest.raises(ValueError, match=r"^k_descale is missing: e4m3 inputs need fp32 descales "
                                         r"for Q, K and V"):
        flashscope.resolve_kernel(q, k, v, step=step, **descales)


def test_descales_are_fp32_arrays_of_batch_by_heads():
    step, config = ampere_kernel()
    q, k, v, descales = e4m3_arrays(config, heads_kv=8)
    wrong = dict(descales, v_descale=FakeArray((2, 16), "fp32"))  # q's heads, not v's
    with pytest.raises(ValueError, match=re.escape(
            "v_descale has shape [2, 16] but must be [2, 8] ([batch, heads_kv], one descale per "
            "sample and head)")):
        flashscope.resolve_kernel(q, k, v, step=step, **wrong)
    wrong = dict(descales, q_descale=FakeArray((2, 16), "fp16"))
    with pytest.raises(TypeError, match=r"^q_descale has dtype float16; descales are float32$"):
        flashscope.resolve_kernel(q, k, v, step=step, **wrong)
    wrong = dict(descales, q_descale=FakeArray((2, 16, 1), "fp32"))
    with pytest.raises(ValueError, match=r"^q_descale has 3 dimensions, shape \(2, 16, 1\); "
                                         r"descales take 2: \[batch, heads\]$"):
        flashscope.resolve_kernel(q, k, v, step=step, **wrong)
    wrong = dict(descales, q_descale=FakeArray((2, 16), "fp32", device=(CUDA, 1)))
    with pytest.raises(ValueError, match=r"^q_descale is on cuda:1 but q is on cuda:0"):
        flashscope.resolve_kernel(q, k, v, step=step, **wrong)


def test_descales_are_refused_for_16_bit_inputs():
    step, config = ampere_kernel()
    q, k, v = fake_qkv(shape_for(config), config.dtype)
    with pytest.raises(ValueError, match=f"^q_descale is given but the inputs are {config.dtype}; "
                                         "descales belong to e4m3 inputs only"):
        check(q, k, v, step, config, q_descale=FakeArray((2, 16), "fp32"))


def test_every_built_step_refuses_e4m3_by_name():
    # Well-formed e4m3 arguments pass every argument check and reach the steps' descriptors,
    # which name the dtypes they run (no GPU is asked: FakeArrays are never launched).
    # The FP8 steps (28) run e4m3: every other step refuses it, naming them.
    fp8_steps = {step for step, config in flashscope.kernels() if config.dtype == "e4m3"}
    for step, config in flashscope.kernels():
        if step in fp8_steps:
            continue
        q, k, v, descales = e4m3_arrays(config)
        name = f"B{step - 100}" if step > 100 else str(step)  # backward steps read B1, B2, ...
        with pytest.raises(ValueError, match=f"^step {name} runs fp16 and bf16 inputs only, not "
                                             "e4m3; e4m3 \\(FP8\\) input runs on steps? 28\\b"):
            flashscope.resolve_kernel(q, k, v, step=step, **descales)
    step, config = ampere_kernel()
    q, k, v, descales = e4m3_arrays(config)
    if not fp8_steps:  # a module built without step 28 has no kernel for e4m3 at all
        with pytest.raises(ValueError,
                           match=r"^no step built into this module runs the problem e4m3 "):
            flashscope.resolve_kernel(q, k, v, **descales)
