"""backward(), forward(return_lse=True) and attention() on a GPU, against PyTorch's SDPA gradients
under the rule of docs/spec/backward-track.md §2: each of dQ, dK, dV passes when no element is NaN
and max|G - G_32| <= 2 max|G_lp - G_32| + floor. Every test skips with the reason where no GPU (or
no PyTorch) is usable."""

import math

import pytest

import flashscope
from conftest import require_gpu

# backward-track.md §2: the floor is 2^-20 of the largest |G_32| over the three gradients.
RELATIVE_FLOOR = 2.0 ** -20


@pytest.fixture(scope="module")
def torch():
    require_gpu()
    torch = pytest.importorskip("torch", reason="PyTorch is the reference (SDPA) and allocator")
    if not torch.cuda.is_available():
        pytest.skip("PyTorch sees no CUDA device (a CPU-only build?)")
    return torch


@pytest.fixture(scope="module")
def capability():
    require_gpu()
    return flashscope._core.describe_gpu(0)[0]


def runs_here(step, config, capability):
    required = flashscope.kernel_info(step, config)["exact_compute_capability"]
    return capability == required if required else capability >= 80


BACKWARD_KERNELS = [(s, c) for s, c in flashscope.kernels()
                    if flashscope.kernel_info(s, c)["pass"] == "backward"]


def torch_dtype(torch, name):
    return {"fp16": torch.float16, "bf16": torch.bfloat16}[name]


def random(torch, shape, dtype, generator, scale=1.0):
    return (torch.randn(shape, generator=generator, device="cuda", dtype=torch.float32)
            * scale).to(dtype)


def forward_fp32(torch, q, k, v, causal):
    """O (in the input dtype) and the natural-log row log-sum-exp (fp32 [B, H, N]) of the scaled
    scores, in fp32: the forward a backward differentiates, without any flashscope kernel."""
    qf, kf, vf = (t.float().transpose(1, 2) for t in (q, k, v))  # [B, H, N, d]
    s = (qf @ kf.transpose(-1, -2)) * (q.shape[-1] ** -0.5)
    if causal:
        n = s.shape[-1]
        s = s.masked_fill(torch.ones(n, n, dtype=torch.bool, device=s.device).triu(1),
                          float("-inf"))
    lse = torch.logsumexp(s, dim=-1)
    o = torch.softmax(s, dim=-1) @ vf
    return o.to(q.dtype).transpose(1, 2).contiguous(), lse.contiguous()


def gradient_references(torch, q, k, v, o, do, lse, causal):
    """(G_lp, G_32) for dQ, dK, dV of [B, N, H, d] tensors. G_32: PyTorch SDPA's autograd on the
    inputs upcast to fp32 (math backend, no TF32), cast to the input dtype. G_lp: the backward a
    straightforward 16-bit implementation computes from the given O and L: P and dS rounded to the
    input dtype before they enter a product, fp32 sums."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    dtype = q.dtype
    allow_tf32 = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    try:
        qf, kf, vf = (t.float().transpose(1, 2).detach().requires_grad_(True) for t in (q, k, v))
        dof = do.float().transpose(1, 2)
        with sdpa_kernel(SDPBackend.MATH):
            out = torch.nn.functional.scaled_dot_product_attention(qf, kf, vf, is_causal=causal)
        g32 = torch.autograd.grad(out, (qf, kf, vf), dof)
        with torch.no_grad():
            scale = q.shape[-1] ** -0.5
            s = (qf @ kf.transpose(-1, -2)) * scale
            p = torch.exp(s - lse[..., None])
            if causal:
                n = s.shape[-1]
                p = p.masked_fill(torch.ones(n, n, dtype=torch.bool, device=s.device).triu(1), 0)
            p_lp = p.to(dtype).float()
            d_v = p_lp.transpose(-1, -2) @ dof
            d_p = dof @ vf.transpose(-1, -2)
            d = (dof * o.float().transpose(1, 2)).sum(-1, keepdim=True)
            d_s = (p * (d_p - d)).to(dtype).float()
            d_q = scale * (d_s @ kf)
            d_k = scale * (d_s.transpose(-1, -2) @ qf)
    finally:
        torch.backends.cuda.matmul.allow_tf32 = allow_tf32
    back = lambda t: t.to(dtype).transpose(1, 2)  # noqa: E731
    return [back(g) for g in (d_q, d_k, d_v)], [back(g) for g in g32]


def assert_gradients_correct(torch, grads, lp, g32, label):
    """backward-track.md §2, each gradient on its own."""
    floor = RELATIVE_FLOOR * max(g.float().abs().max().item() for g in g32)
    for name, g, g_lp, g_32 in zip(("dQ", "dK", "dV"), grads, lp, g32):
        assert not torch.isnan(g).any(), f"{label}: NaN in {name}"
        err = (g.float() - g_32.float()).abs().max().item()
        gap = (g_lp.float() - g_32.float()).abs().max().item()
        assert err <= 2 * gap + floor, (
            f"{label}: {name}: max|G - G_32| = {err:.3g} > 2 x max|G_lp - G_32| + floor = "
            f"{2 * gap + floor:.3g}")


@pytest.mark.parametrize("causal", [False, True], ids=["non-causal", "causal"])
@pytest.mark.parametrize("step, config", BACKWARD_KERNELS,
                         ids=[f"{s}-{c}" for s, c in BACKWARD_KERNELS])
def test_every_built_backward_kernel_matches_sdpa_gradients(torch, capability, step, config,
                                                            causal):
    if not runs_here(step, config, capability):
        pytest.skip(f"step {step} does not run on sm_{capability}")
    dtype = torch_dtype(torch, config.dtype)
    generator = torch.Generator(device="cuda").manual_seed(step)
    # 200 rows: no multiple of any block (the last blocks partial); 3 heads.
    for shape in ((2, 200, 3, config.d_head), (1, 1, 2, config.d_head)):
        q, k, v, do = (random(torch, shape, dtype, generator) for _ in range(4))
        o, lse = forward_fp32(torch, q, k, v, causal)
        dq, dk, dv = flashscope.backward(q, k, v, o, do, lse, causal=causal, step=step,
                                         config=config)
        for g, like in ((dq, q), (dk, k), (dv, v)):
            assert isinstance(g, torch.Tensor) and g.shape == like.shape and g.dtype == like.dtype
        lp, g32 = gradient_references(torch, q, k, v, o, do, lse, causal)
        assert_gradients_correct(torch, (dq, dk, dv), lp, g32, f"step {step} {config} {shape}")


def test_gradients_written_into_given_buffers(torch, capability):
    found = next(((s, c) for s, c in BACKWARD_KERNELS if runs_here(s, c, capability)), None)
    if found is None:
        pytest.skip("no backward step built into this module runs on this GPU")
    step, config = found
    dtype = torch_dtype(torch, config.dtype)
    generator = torch.Generator(device="cuda").manual_seed(7)
    shape = (1, 256, 2, config.d_head)
    q, k, v, do = (random(torch, shape, dtype, generator) for _ in range(4))
    o, lse = forward_fp32(torch, q, k, v, False)
    buffers = [torch.full_like(t, float("nan")) for t in (q, k, v)]
    returned = flashscope.backward(q, k, v, o, do, lse, step=step, config=config,
                                   dq=buffers[0], dk=buffers[1], dv=buffers[2])
    assert all(r is b for r, b in zip(returned, buffers))
    lp, g32 = gradient_references(torch, q, k, v, o, do, lse, False)
    assert_gradients_correct(torch, buffers, lp, g32, "dq=, dk=, dv=")


def lse_step(capability):
    """The newest built forward step that writes the log-sum-exp and runs here, or None."""
    steps = [s for s, c in flashscope.kernels()
             if flashscope.kernel_info(s, c)["writes_lse"] and runs_here(s, c, capability)]
    return max(steps) if steps else None


def test_forward_returns_the_log_sum_exp(torch, capability):
    step = lse_step(capability)
    if step is None:
        pytest.skip(f"no forward step that writes the log-sum-exp runs on sm_{capability}")
    generator = torch.Generator(device="cuda").manual_seed(8)
    shape = (2, 512, 4, 128)
    q, k, v = (random(torch, shape, torch.float16, generator) for _ in range(3))
    for causal in (False, True):
        o, lse = flashscope.forward(q, k, v, step=step, causal=causal, return_lse=True)
        assert lse.dtype == torch.float32 and lse.shape == (2, 4, 512) and lse.is_contiguous()
        _, expected = forward_fp32(torch, q, k, v, causal)
        # The kernel's fp32 statistics against fp32 ones: a few fp32 rounding units of |L|.
        error = (lse - expected).abs().max().item()
        assert error <= 1e-3 * max(1.0, expected.abs().max().item()), (
            f"step {step} causal={causal}: max |L - L_32| = {error:.3g}")


def test_attention_is_differentiable_against_sdpa(torch, capability):
    if lse_step(capability) is None:
        pytest.skip(f"no forward step that writes the log-sum-exp runs on sm_{capability}")
    if not any(runs_here(s, c, capability) for s, c in BACKWARD_KERNELS):
        pytest.skip("no backward step built into this module runs on this GPU")
    generator = torch.Generator(device="cuda").manual_seed(9)
    for dtype in (torch.float16, torch.bfloat16):
        for causal in (False, True):
            shape = (2, 512, 4, 128)
            q, k, v, do = (random(torch, shape, dtype, generator) for _ in range(4))
            leaves = [t.clone().requires_grad_(True) for t in (q, k, v)]
            o = flashscope.attention(*leaves, causal=causal)
            o.backward(do)
            _, lse = forward_fp32(torch, q, k, v, causal)
            lp, g32 = gradient_references(torch, q, k, v, o.detach(), do, lse, causal)
            assert_gradients_correct(torch, [t.grad for t in leaves], lp, g32,
                                     f"attention {dtype} causal={causal}")


def test_a_training_loop_loses_as_with_sdpa(torch, capability):
    """backward-track.md §5: a small model on random data trains the same way with either
    attention (the loss curves agree step by step)."""
    if lse_step(capability) is None:
        pytest.skip(f"no forward step that writes the log-sum-exp runs on sm_{capability}")
    if not any(runs_here(s, c, capability) for s, c in BACKWARD_KERNELS):
        pytest.skip("no backward step built into this module runs on this GPU")
    batch, seq_len, heads, d_head = 2, 256, 2, 128
    width = heads * d_head

    def train(attend):
        torch.manual_seed(0)
        projection = torch.nn.Linear(width, 3 * width, device="cuda")
        readout = torch.nn.Linear(width, width, device="cuda")
        optimizer = torch.optim.SGD(list(projection.parameters()) + list(readout.parameters()),
                                    lr=0.05)
        data = torch.Generator(device="cuda").manual_seed(1)
        x = torch.randn(batch, seq_len, width, generator=data, device="cuda")
        target = torch.randn(batch, seq_len, width, generator=data, device="cuda")
        losses = []
        for _ in range(20):
            q, k, v = (t.reshape(batch, seq_len, heads, d_head).to(torch.bfloat16).contiguous()
                       for t in projection(x).chunk(3, dim=-1))
            o = attend(q, k, v).float().reshape(batch, seq_len, width)
            loss = torch.nn.functional.mse_loss(readout(o), target)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        return losses

    def sdpa(q, k, v):
        return torch.nn.functional.scaled_dot_product_attention(
            *(t.transpose(1, 2) for t in (q, k, v)), is_causal=True).transpose(1, 2)

    ours = train(lambda q, k, v: flashscope.attention(q, k, v, causal=True))
    theirs = train(sdpa)
    assert ours[-1] < ours[0], f"the loss did not fall: {ours}"
    for step, (a, b) in enumerate(zip(ours, theirs)):
        assert math.isclose(a, b, rel_tol=2e-2), (
            f"step {step}: loss {a:.5f} with flashscope.attention, {b:.5f} with SDPA")
