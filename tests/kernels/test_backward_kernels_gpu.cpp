// Every built backward kernel (steps B1, B2, ...) against the references of
// docs/spec/backward-track.md §2, on a small shape matrix at its own config's dtype and d_head,
// without and with the causal mask: one KV block, a length of 1, lengths that are not multiples of
// any block (the last blocks partial), an odd head count, a KV block count that is not a multiple
// of the SM count, and inputs scaled x16 and x1/16. The forward O and log-sum-exp come from the
// references' forward, so a failure is the backward's alone. dQ, dK, dV and the workspace are
// poisoned (NaN) before every launch, so an element the kernel never writes, or a workspace word
// it reads before writing, fails. Inputs are fresh per run (the seed is printed; FLASHSCOPE_SEED
// reproduces it).
//
// First, the GPU references themselves against the fp64 CPU backward at small shapes: the rule
// judges kernels against them, so they must be the gradients.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <vector>

#include "configs/config_sets.hpp"
#include "configs/launch_validation.hpp"
#include "kernels/common/cuda_check.hpp"
#include "kernels/common/reference_backward.hpp"
#include "kernels/common/registry.hpp"
#include "tests/support/device_tensors.hpp"
#include "tests/support/gpu_presence.hpp"

using namespace flashscope;
using namespace flashscope::testing;

namespace {

struct ShapeCase {
  const char* name;
  int batch, seq_len, heads;  // seq_len 0: one KV block of the kernel's own B_c
  float input_scale;
};

int compute_capability() {
  int device = 0, major = 0, minor = 0;
  FS_CUDA_CHECK(cudaGetDevice(&device));
  FS_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  FS_CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
  return major * 10 + minor;
}

TensorView view_of(const DeviceTensor& tensor, const Problem& problem, int heads) {
  const std::array<std::int64_t, 4> shape{problem.batch, problem.seq_len, heads, problem.d_head};
  return TensorView{tensor.data(), problem.dtype, MemoryLocation::device, shape,
                    contiguous_strides(shape)};
}

// The inputs of one backward problem, the references' forward O and log-sum-exp, and the
// gradients' buffers.
struct BackwardProblemData {
  explicit BackwardProblemData(const Problem& p, std::uint64_t seed, float scale)
      : problem(p),
        q(p.query_elements(), p.dtype),
        k(p.key_value_elements(), p.dtype),
        v(p.key_value_elements(), p.dtype),
        o(p.query_elements(), p.dtype),
        d_o(p.query_elements(), p.dtype),
        dq(p.query_elements(), p.dtype),
        dk(p.key_value_elements(), p.dtype),
        dv(p.key_value_elements(), p.dtype),
        lse(sizeof(float) * static_cast<std::size_t>(p.batch) * p.heads *
            static_cast<std::size_t>(p.seq_len)) {
    fill_random_normal(q.data(), p.dtype, p.query_elements(), seed * 4 + 0, scale);
    fill_random_normal(k.data(), p.dtype, p.key_value_elements(), seed * 4 + 1, scale);
    fill_random_normal(v.data(), p.dtype, p.key_value_elements(), seed * 4 + 2, scale);
    fill_random_normal(d_o.data(), p.dtype, p.query_elements(), seed * 4 + 3, scale);
    gpu_reference_forward_with_lse(p, p.dtype, q.data(), k.data(), v.data(), o.data(), lse_ptr());
  }

  float* lse_ptr() const { return static_cast<float*>(lse.get()); }

  BackwardTensors tensors() const {
    BackwardTensors out{
        view_of(q, problem, problem.heads),     view_of(k, problem, problem.heads_kv),
        view_of(v, problem, problem.heads_kv),  view_of(o, problem, problem.heads),
        view_of(d_o, problem, problem.heads),   view_of(dq, problem, problem.heads),
        view_of(dk, problem, problem.heads_kv), view_of(dv, problem, problem.heads_kv)};
    out.softmax_lse = lse_ptr();
    out.causal = problem.causal;
    return out;
  }

  Problem problem;
  DeviceTensor q, k, v, o, d_o, dq, dk, dv;
  DeviceBuffer lse;
};

double max_abs(const std::vector<double>& values) {
  double out = 0;
  for (const double x : values)
    out = std::max(out, std::abs(x));
  return out;
}

}  // namespace

TEST_CASE("the GPU backward references agree with the fp64 CPU backward") {
  const std::uint64_t seed = fresh_seed();
  int compared = 0;
  for (const DType dtype : {DType::FP16, DType::BF16})
    for (const bool causal : {false, true})
      for (const int seq_len : {1, 37, 130}) {
        const Problem problem = multi_head_problem(dtype, 2, seq_len, 3, 64, causal);
        CAPTURE(problem_label(problem));
        const BackwardProblemData data(problem, seed + static_cast<std::uint64_t>(seq_len), 1.0f);
        const AttentionBackwardFp64 exact = cpu_attention_backward_fp64(
            problem, data.q.to_host(), data.k.to_host(), data.v.to_host(), data.d_o.to_host());
        const BackwardReferenceOutputs references(problem, dtype, data.q.data(), data.k.data(),
                                                  data.v.data(), data.o.data(), data.d_o.data(),
                                                  data.lse_ptr());
        FS_CUDA_CHECK(cudaDeviceSynchronize());
        const std::vector<double>* exact_gradients[] = {&exact.dq, &exact.dk, &exact.dv};
        double scale = 0;
        for (const auto* g : exact_gradients)
          scale = std::max(scale, max_abs(*g));
        // G_32 rounds an fp32 result to the dtype once: within a few rounding units of the
        // dtype (2^-8 relative for bf16, the coarser) of the problem's gradient scale.
        const double tolerance = std::ldexp(scale, -6) + 1e-6;
        for (int g = 0; g < 3; ++g) {
          DeviceTensor fp32(g == 0 ? problem.query_elements() : problem.key_value_elements(),
                            dtype);
          FS_CUDA_CHECK(cudaMemcpy(fp32.data(), references.fp32(g),
                                   static_cast<std::size_t>(fp32.count()) * element_bytes(dtype),
                                   cudaMemcpyDeviceToDevice));
          const std::vector<double> got = fp32.to_host();
          double error = 0;
          for (std::size_t i = 0; i < got.size(); ++i)
            error = std::max(error, std::abs(got[i] - (*exact_gradients[g])[i]));
          CAPTURE(g);
          CHECK_MESSAGE(error <= tolerance,
                        "G_32 is " << error << " from the fp64 gradient (scale " << scale << ")");
          ++compared;
        }
      }
  CHECK(compared == 2 * 2 * 3 * 3);
}

TEST_CASE("every built backward kernel passes backward-track.md §2 on the shape matrix") {
  const std::vector<ShapeCase> cases = {
      {"one KV block", 1, 0, 2, 1.0f},
      {"length 1", 2, 1, 2, 1.0f},
      {"partial blocks", 2, 200, 3, 1.0f},
      {"several blocks", 2, 1000, 4, 1.0f},
      // 13 KV blocks of 128 keys a head: not a multiple of any SM count, 65 CTAs.
      {"blocks off the SMs", 1, 1664, 5, 1.0f},
      {"inputs x16", 1, 512, 2, 16.0f},
      {"inputs x1/16", 1, 512, 2, 1.0f / 16},
  };
  const std::uint64_t seed = fresh_seed();
  std::printf("test_backward_kernels_gpu: seed %llu (set FLASHSCOPE_SEED to reproduce)\n",
              static_cast<unsigned long long>(seed));
  std::vector<const KernelEntry*> entries;
  for (const KernelEntry* entry : built_kernels().entries())
    if (configs::step_descriptor(entry->step).pass == Pass::backward) entries.push_back(entry);
  if (entries.empty()) {
    skip_test_case("this build has no backward kernels (FLASHSCOPE_STEPS names none of " +
                   configs::step_list_text({kFirstBackwardStep, configs::kLastBackwardStep}) + ")");
    return;
  }
  const int cc = compute_capability();

  // Group kernels by (case, problem) so each reference pair is computed once.
  std::map<std::pair<int, Problem>, std::vector<const KernelEntry*>> groups;
  for (std::size_t c = 0; c < cases.size(); ++c)
    for (const KernelEntry* entry : entries)
      for (const bool causal : {false, true}) {
        Problem problem = multi_head_problem(entry->config.dtype, cases[c].batch, cases[c].seq_len,
                                             cases[c].heads, entry->config.d_head, causal);
        if (problem.seq_len == 0) problem.seq_len = entry->config.B_c;
        problem.pass = Pass::backward;
        if (configs::step_refusal_message(entry->step, problem)) continue;
        groups[{static_cast<int>(c), problem}].push_back(entry);
      }

  int checked = 0, failed = 0, skipped = 0, checked_causal = 0;
  std::map<std::pair<int, int>, int> checked_per_step_d_head;
  for (const auto& [key, group] : groups) {
    const auto& [case_index, problem] = key;
    const ShapeCase& shape_case = cases[static_cast<std::size_t>(case_index)];
    BackwardProblemData data(problem, seed + static_cast<std::uint64_t>(case_index),
                             shape_case.input_scale);
    const BackwardReferenceOutputs references(problem, problem.dtype, data.q.data(), data.k.data(),
                                              data.v.data(), data.o.data(), data.d_o.data(),
                                              data.lse_ptr());
    for (const KernelEntry* entry : group) {
      CAPTURE(entry->display_name);
      CAPTURE(shape_case.name);
      CAPTURE(problem_label(problem));
      if (entry->exact_compute_capability != 0 && entry->exact_compute_capability != cc) {
        std::printf("skip %-80s %-18s step %s needs an sm_%da GPU; this one is sm_%d\n",
                    entry->display_name.c_str(), shape_case.name, step_name(entry->step).c_str(),
                    entry->exact_compute_capability, cc);
        ++skipped;
        continue;
      }
      const BackwardTensors tensors = data.tensors();
      validate_backward_launch(*entry, tensors, cc);
      const std::size_t workspace_bytes =
          entry->backward_workspace_bytes(make_backward_args(*entry, tensors, nullptr));
      const DeviceBuffer workspace(std::max<std::size_t>(workspace_bytes, 1));
      poison_output(data.dq.data(), problem.dtype, problem.query_elements());
      poison_output(data.dk.data(), problem.dtype, problem.key_value_elements());
      poison_output(data.dv.data(), problem.dtype, problem.key_value_elements());
      // All-ones bytes are NaN as fp32 and as 16-bit values.
      FS_CUDA_CHECK(cudaMemset(workspace.get(), 0xFF, workspace_bytes));
      FS_CUDA_CHECK(
          entry->launch_backward(make_backward_args(*entry, tensors, workspace.get()), nullptr));
      FS_CUDA_CHECK(cudaDeviceSynchronize());
      const BackwardCorrectnessVerdict verdict =
          references.check(data.dq.data(), data.dk.data(), data.dv.data());
      std::printf("%-4s %-80s %-18s B=%-2d N=%-5d H=%-2d d=%-3d x%g %-6s %s\n",
                  verdict.passed ? "ok" : "FAIL", entry->display_name.c_str(), shape_case.name,
                  problem.batch, problem.seq_len, problem.heads, problem.d_head,
                  shape_case.input_scale, problem.causal ? "causal" : "",
                  verdict.summary().c_str());
      CHECK_MESSAGE(verdict.passed, verdict.summary());
      ++checked;
      ++checked_per_step_d_head[{entry->step, problem.d_head}];
      checked_causal += problem.causal;
      failed += !verdict.passed;
    }
  }
  std::printf(
      "test_backward_kernels_gpu: %d kernel/shape checks (%d of them causal), %d failed, %d "
      "skipped (wrong GPU)\n",
      checked, checked_causal, failed, skipped);
  for (const auto& [step_d_head, count] : checked_per_step_d_head)
    std::printf("test_backward_kernels_gpu: step %s, d_head %d: %d kernel/shape checks\n",
                step_name(step_d_head.first).c_str(), step_d_head.second, count);
  CHECK_MESSAGE(checked > 0, "no backward kernel of this build runs on this GPU");
  // Every built backward kernel ran every case, with and without the mask its step declares.
  for (const KernelEntry* entry : entries) {
    int runs = 0;
    for (const auto& [key, group] : groups)
      runs += static_cast<int>(std::count(group.begin(), group.end(), entry));
    CAPTURE(entry->display_name);
    CHECK(runs ==
          static_cast<int>(cases.size()) * (configs::step_descriptor(entry->step).causal ? 2 : 1));
  }
}

// The deterministic option (KernelConfig::deterministic, backward-track.md §4, B5): the same
// inputs give the same gradient bits on every run. Each deterministic kernel runs one problem 10
// times, with many KV blocks adding to each query block's dQ (16 KV blocks a sequence, 8
// sequences: 128 work units, about one an SM), with and without the mask; dQ, dK and dV (and the
// workspace) are poisoned before each run, and every run's bytes must equal the first's. The
// first run also passes §2, so the bits compared are right ones. The same loop on the step's
// default config (no `deterministic`) is printed, not checked: its dQ may or may not differ from
// run to run, which is what the option is for.
TEST_CASE("a deterministic backward kernel gives bit-identical gradients over 10 runs") {
  std::vector<const KernelEntry*> entries;
  for (const KernelEntry* entry : built_kernels().entries())
    if (configs::step_descriptor(entry->step).pass == Pass::backward &&
        configs::step_descriptor(entry->step).deterministic_dq)
      entries.push_back(entry);
  if (entries.empty()) {
    skip_test_case("this build has no backward step with the deterministic option");
    return;
  }
  const int cc = compute_capability();
  const std::uint64_t seed = fresh_seed();
  std::printf("deterministic test: seed %llu (set FLASHSCOPE_SEED to reproduce)\n",
              static_cast<unsigned long long>(seed));
  constexpr int kRuns = 10;
  int checked_deterministic = 0;
  for (const KernelEntry* entry : entries) {
    if (entry->exact_compute_capability != 0 && entry->exact_compute_capability != cc) continue;
    for (const bool causal : {false, true}) {
      Problem problem =
          multi_head_problem(entry->config.dtype, 2, 2000, 4, entry->config.d_head, causal);
      problem.pass = Pass::backward;
      CAPTURE(entry->display_name);
      CAPTURE(problem_label(problem));
      const BackwardProblemData data(problem, seed, 1.0f);
      const BackwardTensors tensors = data.tensors();
      validate_backward_launch(*entry, tensors, cc);
      const std::size_t workspace_bytes =
          entry->backward_workspace_bytes(make_backward_args(*entry, tensors, nullptr));
      const DeviceBuffer workspace(std::max<std::size_t>(workspace_bytes, 1));
      const auto bytes_of = [&](const DeviceTensor& tensor) {
        std::vector<unsigned char> out(static_cast<std::size_t>(tensor.count()) *
                                       element_bytes(problem.dtype));
        FS_CUDA_CHECK(cudaMemcpy(out.data(), tensor.data(), out.size(), cudaMemcpyDeviceToHost));
        return out;
      };
      std::vector<unsigned char> first[3];
      int differing_runs[3] = {0, 0, 0};
      for (int run = 0; run < kRuns; ++run) {
        poison_output(data.dq.data(), problem.dtype, problem.query_elements());
        poison_output(data.dk.data(), problem.dtype, problem.key_value_elements());
        poison_output(data.dv.data(), problem.dtype, problem.key_value_elements());
        FS_CUDA_CHECK(cudaMemset(workspace.get(), 0xFF, workspace_bytes));
        FS_CUDA_CHECK(
            entry->launch_backward(make_backward_args(*entry, tensors, workspace.get()), nullptr));
        FS_CUDA_CHECK(cudaDeviceSynchronize());
        const std::vector<unsigned char> now[3] = {bytes_of(data.dq), bytes_of(data.dk),
                                                   bytes_of(data.dv)};
        if (run == 0) {
          if (entry->config.deterministic) {
            const BackwardReferenceOutputs references(problem, problem.dtype, data.q.data(),
                                                      data.k.data(), data.v.data(), data.o.data(),
                                                      data.d_o.data(), data.lse_ptr());
            const BackwardCorrectnessVerdict verdict =
                references.check(data.dq.data(), data.dk.data(), data.dv.data());
            CHECK_MESSAGE(verdict.passed, verdict.summary());
          }
          for (int g = 0; g < 3; ++g)
            first[g] = now[g];
          continue;
        }
        for (int g = 0; g < 3; ++g)
          differing_runs[g] += now[g] != first[g];
      }
      std::printf(
          "%-13s %-80s N=%d H=4 B=2 %-6s: runs 2-%d differing from run 1: dQ %d, dK %d, dV %d\n",
          entry->config.deterministic ? "deterministic" : "default", entry->display_name.c_str(),
          problem.seq_len, causal ? "causal" : "", kRuns, differing_runs[0], differing_runs[1],
          differing_runs[2]);
      if (entry->config.deterministic) {
        CHECK(differing_runs[0] == 0);
        CHECK(differing_runs[1] == 0);
        CHECK(differing_runs[2] == 0);
        ++checked_deterministic;
      }
    }
  }
  CHECK_MESSAGE(checked_deterministic > 0, "no deterministic backward kernel runs on this GPU");
}
