"""The module without a GPU: import, kernels(), the bound Config record, kernel choice rules."""

import pickle
import random
import shutil
import subprocess

import pytest

import flashscope
from flashscope import Config, _core

from conftest import built_kernel


def test_import_exposes_the_api():
    for name in ("forward", "forward_timed", "kernels", "Config", "resolve_kernel",
                 "resolve_backward_kernel", "backward", "default_config", "kernel_info", "build_info", "DeviceArray"):
        assert hasattr(flashscope, name), name


def test_kernels_lists_every_built_kernel_in_cpp_order():
    kernels = flashscope.kernels()
    assert kernels, "the module was built without kernels"
    for step, config in kernels:
        assert isinstance(step, int) and isinstance(config, Config)
    # The C++ registry iterates (step, config) in KernelKey order; the bound ordering agrees.
    assert kernels == sorted(kernels)
    assert len(set(kernels)) == len(kernels)
    steps = sorted({step for step, _ in kernels})
    for step in steps:
        configs = [config for s, config in kernels if s == step]
        assert configs == _core.cpp_sorted(list(reversed(configs)))


def test_build_info_names_the_kernel_set():
    info = flashscope.build_info()
    assert info["kernel_set"] in ("ci", "prog", "tune", "all")
    assert info["cuda_architectures"]


def test_kernel_info_describes_a_built_kernel():
    # A forward kernel: a backward step's shared memory is laid out by its own rules.
    found = built_kernel()
    if found is None:
        pytest.skip("no forward step is built into this module (a backward-only build)")
    step, config = found
    info = flashscope.kernel_info(step, config)
    assert info["step"] == step and info["config"] == config
    # Steps 22-24 keep a separate O tile beside what config.smem_bytes counts (Q + stages x K/V).
    if 22 <= step <= 24:
        assert info["smem_bytes"] == config.smem_bytes + config.B_r * config.d_head * 2
    else:
        assert info["smem_bytes"] == config.smem_bytes
    assert info["threads_per_block"] == config.threads_per_block == 32 * config.n_warps
    # The step descriptor's `.causal`: the frozen steps 1-22 never have the mask.
    assert isinstance(info["supports_causal"], bool)
    if step <= 22:
        assert info["supports_causal"] is False
    assert info["title"]


def test_kernel_info_of_an_unbuilt_config_names_the_closest():
    step, config = flashscope.kernels()[0]
    other = Config.parse(str(config).replace(", 4)", ", 8)") if ", 4)" in str(config)
                         else str(config).replace(", 8)", ", 4)"))
    if (step, other) in flashscope.kernels():
        pytest.skip(f"{other} is built for step {step} too")
    with pytest.raises(ValueError, match=f"step {step} has no kernel built for"):
        flashscope.kernel_info(step, other)


@pytest.mark.parametrize("text", sorted({str(c) for _, c in flashscope.kernels()}
                                        | {str(c) for c in _core.tune_set()}))
def test_config_short_form_round_trips(text):
    config = Config.parse(text)
    assert str(config) == text
    assert Config.parse(str(config)) == config
    assert eval(repr(config), {"Config": Config}) == config
    assert pickle.loads(pickle.dumps(config)) == config
    assert hash(Config.parse(text)) == hash(config)
    assert config.dtype in ("fp16", "bf16", "e4m3")
    assert config.short_form("features_only") in text
    assert config.short_form("without_d_head").startswith("(" + config.dtype.upper())


def test_config_fields_are_the_cpp_record():
    config = Config.parse("(BF16, 128, 64, 32, 4): async+eager+swizzled+load_2_2_0_tiles+buffer")
    assert (config.dtype, config.d_head, config.B_r, config.B_c, config.n_warps) == (
        "bf16", 128, 64, 32, 4)
    assert config.async_copy and config.eager_load_blocks and config.swizzled
    assert (config.Q_mma_load_K_fragments, config.K_mma_load_K_fragments,
            config.V_mma_load_K_fragments) == (2, 2, 0)
    assert config.mma_double_buffer_loads and not config.optimized_softmax
    assert (config.stages, config.consumer_regs, config.is_hopper) == (0, 0, False)
    assert config.fields[0] == 15  # DType::BF16
    hopper = Config.parse("(FP16, 128, 128, 128, 12): stages_2+regs_240")
    assert (hopper.stages, hopper.consumer_regs, hopper.is_hopper) == (2, 240, True)
    assert hopper.with_dtype("bf16") == Config.parse("(BF16, 128, 128, 128, 12): stages_2+regs_240")


def test_config_ordering_is_the_cpp_order():
    tune = _core.tune_set()
    shuffled = list(tune)
    random.Random(7).shuffle(shuffled)
    # build_list() is the tune set sorted by C++ (std::sort over KernelConfig::operator<=>).
    assert sorted(shuffled) == _core.build_list() == _core.cpp_sorted(shuffled)
    # Every comparison operator agrees with the C++ order on every pair, and with the record's
    # declared order: lexicographic over the 15 fields.
    everything = sorted(set(tune) | {c for _, c in flashscope.kernels()})
    for i, a in enumerate(everything):
        for b in everything[i:i + 12]:
            assert (a < b) == (a.fields < b.fields)
            assert (a <= b) == (a.fields <= b.fields)
            assert (a > b) == (a.fields > b.fields)
            assert (a >= b) == (a.fields >= b.fields)
            assert (a == b) == (a.fields == b.fields)
            assert (a != b) == (a.fields != b.fields)


def test_config_compares_with_other_types_as_unequal():
    config = flashscope.kernels()[0][1]
    assert config != str(config)
    with pytest.raises(TypeError):
        config < str(config)


@pytest.mark.parametrize("text, problem", [
    ("(FP16, 128, 64, 64, 4): async+turbo+load_0_0_0_tiles", '"turbo" is not a feature'),
    ("(FP16, 128, 64, 64, 4): async+opt_sofmax+load_0_0_0_tiles", '"opt_sofmax"'),
    ("(FP16, 128, 64, 64, 4): load_2_2_2_tiles+load_0_0_0_tiles", '"load_0_0_0_tiles"'),
    ("(FP16, 128, 128, 128, 8): stages_2+async", '"async" is not a Hopper feature'),
    ("(FP16, 128, 64, 64, 4): async", "lack the required load_Q_K_V_tiles"),
    ("(FP32, 128, 64, 64, 4): async", "FP32"),
    ("(FP16, 128, 64, 4): async", "(FP16, 128, 64, 4)"),
    ("", "cannot parse config"),
])
def test_config_parse_names_the_unknown_token(text, problem):
    with pytest.raises(ValueError, match="cannot parse config") as error:
        Config.parse(text)
    assert problem in str(error.value)


@pytest.mark.parametrize("text, problem", [
    ("(FP16, -128, 64, 64, 4): async+load_0_0_0_tiles", "d_head -128 is not a positive multiple"),
    ("(FP16, 128, 64, 64, 0): async+load_0_0_0_tiles", "n_warps 0 is not positive"),
    ("(FP16, 128, 64, 64, 4): load_9_9_9_tiles", "load_Q_K_V_tiles 9 is not 0 (the whole tile)"),
    ("(FP16, 128, 128, 128, 12): stages_7", "stages 7 is not 0 (Ampere) or 1-4 (Hopper)"),
])
def test_config_parse_checks_each_fields_range(text, problem):
    with pytest.raises(ValueError, match="cannot parse config") as error:
        Config.parse(text)
    assert problem in str(error.value)


def test_config_parse_shows_a_nul_as_an_escape():
    # The message used to end at the NUL (the C string it went through).
    with pytest.raises(ValueError) as error:
        Config.parse("(FP16, 128, 64, 64, 4): async\x00+load_0_0_0_tiles")
    assert "\x00" not in str(error.value)
    assert 'async\\x00+load_0_0_0_tiles": "async\\x00" is not a feature' in str(error.value)


def test_config_rejects_unknown_styles_and_dtypes():
    config = flashscope.kernels()[0][1]
    with pytest.raises(ValueError, match="short form style \"tiny\""):
        config.short_form("tiny")
    with pytest.raises(ValueError, match=r"dtype \"fp32\" is not fp16, bf16 or e4m3 \(fp8\)"):
        config.with_dtype("fp32")
    # fp8 is e4m3's short name: the config record takes it.
    assert config.with_dtype("fp8").dtype == "e4m3"


# ---- Which kernel runs when the call leaves the config open (no GPU: a described one) ----------

GPUS = [(90, "NVIDIA H100 80GB HBM3", "hopper_h100", "hopper"),
        (90, "NVIDIA H200", "hopper", "hopper_h100"),
        (80, "NVIDIA A100-SXM4-80GB", "seed_a100", None),
        (86, "NVIDIA GeForce RTX 3090", "seed_rtx3090", None)]


@pytest.mark.parametrize("capability, name, first, second", GPUS)
@pytest.mark.parametrize("step", sorted({s for s, _ in flashscope.kernels()}))
def test_pick_order_starts_with_the_gpus_own_pick(step, capability, name, first, second):
    picks = _core.step_picks(step)
    order = _core.gpu_pick_order(step, capability, name)
    expected = [picks[key] for key in (first, second, "progression") if key and picks[key]]
    expected += [p for p in picks.values() if p is not None]
    deduplicated = []
    for pick in expected:
        if pick not in deduplicated:
            deduplicated.append(pick)
    assert order == deduplicated


@pytest.mark.parametrize("capability, name, first, second", GPUS)
@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_default_config_is_the_first_built_pick(capability, name, first, second, dtype):
    built = set(flashscope.kernels())
    for step in sorted({s for s, _ in built}):
        chosen = flashscope.default_config(step, dtype, compute_capability=capability,
                                           device_name=name)
        assert (step, chosen) in built
        assert chosen.dtype == dtype
        built_picks = [p.with_dtype(dtype) for p in _core.gpu_pick_order(step, capability, name)
                       if (step, p.with_dtype(dtype)) in built]
        if built_picks:
            assert chosen == built_picks[0]
        else:  # no pick built: the step's first built kernel of that dtype
            assert chosen == min(c for s, c in built if s == step and c.dtype == dtype)


def test_default_config_names_the_built_d_heads():
    step = flashscope.kernels()[-1][0]
    built = ", ".join(str(d) for d in sorted({c.d_head for s, c in flashscope.kernels()
                                               if s == step and c.dtype == "fp16"}))
    with pytest.raises(ValueError, match=f"step {step} has no fp16 kernel built for d_head 96; "
                                         f"its fp16 kernels take d_head {built}$"):
        flashscope.default_config(step, "fp16", d_head=96, compute_capability=90,
                                  device_name="NVIDIA H100")


def test_default_config_at_each_d_head_of_the_step():
    # A step that runs several head dimensions picks its progression config at the one asked for.
    built = set(flashscope.kernels())
    for step, config in sorted(built):
        if config.d_head == 128 or config.dtype != "fp16":
            continue
        chosen = flashscope.default_config(step, "fp16", d_head=config.d_head,
                                           compute_capability=90, device_name="NVIDIA H100")
        assert chosen.d_head == config.d_head
        assert (step, chosen) in built


@pytest.mark.parametrize("step, message", [(0, "step 0 does not exist"),
                                           (99, "step 99 does not exist")])
def test_default_config_rejects_steps_that_do_not_exist(step, message):
    with pytest.raises(ValueError, match=message):
        flashscope.default_config(step, "fp16", compute_capability=80)


def test_the_extension_does_not_link_libcuda():
    readelf = shutil.which("readelf")
    if readelf is None:
        pytest.skip("readelf (binutils) not installed")
    dynamic = subprocess.run([readelf, "-d", _core.__file__], check=True, capture_output=True,
                             text=True).stdout
    needed = [line.split("[")[1].rstrip("]") for line in dynamic.splitlines()
              if "(NEEDED)" in line]
    assert needed, dynamic
    assert not [library for library in needed if library.startswith("libcuda.so")], needed
