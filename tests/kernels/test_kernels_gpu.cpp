// Every built kernel against the §1.4 rule on the shape matrix of issues 3–5: the seed's test
// shape, a single KV block, an odd head count, a long sequence and inputs scaled x4. Inputs
// are fresh per run (the seed is printed; FLASHSCOPE_SEED reproduces it) and the output is
// poisoned before every launch, so an element a kernel never writes fails. Each kernel runs the
// matrix at its own config's d_head (64, 128 or 256 for steps 22+; 128 for the others), in every
// workload its step's descriptor declares (configs::step_refusal_message): a step with the causal
// mask runs each case without and with it, a step with grouped K/V heads at group sizes 1, 2, 4,
// 8 and H (those that divide the case's heads), each against references of that problem.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <numeric>
#include <vector>

#include "kernels/common/cuda_check.hpp"
#include "configs/config_sets.hpp"
#include "configs/launch_validation.hpp"
#include "kernels/common/problem_axes.hpp"
#include "kernels/common/registry.hpp"
#include "tests/support/device_tensors.hpp"

using namespace flashscope;
using namespace flashscope::testing;

namespace {

struct ShapeCase {
  const char* name;
  int batch, seq_len, heads;  // seq_len 0: one KV block of the kernel's own shape
  float input_scale;
  int first_step = 1;  // the cases of a persistent grid (steps 22+) run on those steps only
};

// The first step whose kernels are persistent (a tile scheduler hands tiles to about one CTA per
// SM, kernels/common/tile_scheduler.hpp): the tile count against the SM count matters from here.
constexpr int kFirstPersistentStep = 22;
// The first step with the causal mask: its extreme-scale cases run from here on.
constexpr int kFirstCausalStep = 23;

// The kernel's own variant of a named case: its config's dtype and d_head, heads forced to a
// compiled static head count, and the single-block case sized to the kernel's block shape.
Problem shape_for(const KernelEntry& entry, const ShapeCase& shape_case) {
  Problem shape = multi_head_problem(entry.config.dtype, shape_case.batch, shape_case.seq_len,
                                     shape_case.heads, entry.config.d_head);
  if (shape.seq_len == 0)  // one KV block, or the smallest valid length when B_r does not divide it
    shape.seq_len = std::lcm(entry.config.B_c, entry.config.B_r);
  const auto& heads = entry.static_head_counts;
  if (!heads.empty() && std::find(heads.begin(), heads.end(), shape.heads) == heads.end())
    shape.heads = heads.front();
  shape.heads_kv = shape.heads;
  return shape;
}

// Every workload of `base` the kernel's step declares: the mask on and off, and K/V head counts
// for group sizes 1, 2, 4, 8 and all heads (those dividing the heads).
std::vector<Problem> workloads_for(const KernelEntry& entry, const Problem& base) {
  std::vector<Problem> out;
  for (const bool causal : {false, true})
    for (const int group : {1, 2, 4, 8, base.heads}) {
      if (base.heads % group != 0) continue;
      Problem problem = base;
      problem.causal = causal;
      problem.heads_kv = base.heads / group;
      if (std::find(out.begin(), out.end(), problem) != out.end()) continue;
      if (!configs::step_refusal_message(entry.step, problem)) out.push_back(problem);
    }
  return out;
}

int compute_capability() {
  int device = 0, major = 0, minor = 0;
  FS_CUDA_CHECK(cudaGetDevice(&device));
  FS_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  FS_CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
  return major * 10 + minor;
}

}  // namespace

TEST_CASE("every built kernel passes the §1.4 rule on the shape matrix") {
  const std::vector<ShapeCase> cases = {
      {"seed test shape", 16, 2048, 16, 1.0f},
      {"single KV block", 1, 0, 3, 1.0f},
      {"odd head count", 2, 512, 3, 1.0f},
      {"long sequence", 1, 16384, 2, 1.0f},
      {"inputs x4", 4, 1024, 8, 4.0f},
      // Persistent grids: fewer tiles than SMs, a tile count that is not a multiple of the grid,
      // and far more tiles than SMs.
      {"one tile", 1, 128, 1, 1.0f, kFirstPersistentStep},
      {"tiles off grid", 3, 1152, 7, 1.0f, kFirstPersistentStep},
      {"many tiles", 1, 16384, 64, 1.0f, kFirstPersistentStep},
      // The causal steps, at extreme input scales: nearly one-hot rows (scores in the
      // thousands) next to the masked score, and nearly uniform rows.
      {"inputs x16", 2, 1024, 4, 16.0f, kFirstCausalStep},
      {"inputs x1/16", 2, 1024, 4, 1.0f / 16, kFirstCausalStep},
  };
  const std::uint64_t seed = fresh_seed();
  std::printf("test_kernels_gpu: seed %llu (set FLASHSCOPE_SEED to reproduce)\n",
              static_cast<unsigned long long>(seed));
  const auto entries = built_kernels().entries();
  REQUIRE_MESSAGE(!entries.empty(), "this build has no kernels");
  const int cc = compute_capability();

  // Group kernels by (case, problem) so each reference pair is computed once.
  std::map<std::pair<int, Problem>, std::vector<const KernelEntry*>> groups;
  for (std::size_t c = 0; c < cases.size(); ++c)
    for (const KernelEntry* entry : entries) {
      if (entry->step < cases[c].first_step) continue;
      // e4m3 kernels (the FP8 track) are judged by fp8-track.md §2's CPU references, which this
      // shape matrix is too large for: `explorer check --dtype e4m3` runs them on small problems.
      if (needs_descales(entry->config.dtype)) continue;
      for (const Problem& problem : workloads_for(*entry, shape_for(*entry, cases[c])))
        groups[{static_cast<int>(c), problem}].push_back(entry);
    }

  int checked = 0, failed = 0, skipped = 0, checked_causal = 0, checked_grouped = 0;
  std::map<int, int> checked_per_d_head;
  for (const auto& [key, group] : groups) {
    const auto& [case_index, shape] = key;
    const ShapeCase& shape_case = cases[static_cast<std::size_t>(case_index)];
    const DType dtype = shape.dtype;
    const bool causal = shape.causal;
    const AttentionInputs inputs(shape, seed + static_cast<std::uint64_t>(case_index),
                                 shape_case.input_scale);
    const ReferenceOutputs references(shape, inputs.q(), inputs.k(), inputs.v());
    for (const KernelEntry* entry : group) {
      CAPTURE(entry->display_name);
      CAPTURE(shape_case.name);
      CAPTURE(problem_label(shape));
      const AttentionTensors tensors = inputs.tensors();
      // The Hopper steps are compiled for sm_90a only: elsewhere they are skipped, visibly.
      if (entry->exact_compute_capability != 0 && entry->exact_compute_capability != cc) {
        std::printf("skip %-80s %-16s step %d needs an sm_%da GPU; this one is sm_%d\n",
                    entry->display_name.c_str(), shape_case.name, entry->step,
                    entry->exact_compute_capability, cc);
        ++skipped;
        continue;
      }
      validate_launch(*entry, tensors, cc);
      poison_output(inputs.o(), dtype, shape.query_elements());
      FS_CUDA_CHECK(entry->launch(make_forward_args(*entry, tensors), nullptr));
      FS_CUDA_CHECK(cudaDeviceSynchronize());
      const CorrectnessVerdict verdict = references.check(inputs.o());
      std::printf("%-4s %-80s %-16s B=%-2d N=%-5d H=%-2d H_kv=%-2d d=%-3d x%g %-6s %s\n",
                  verdict.passed ? "ok" : "FAIL", entry->display_name.c_str(), shape_case.name,
                  shape.batch, shape.seq_len, shape.heads, shape.heads_kv, shape.d_head,
                  shape_case.input_scale, causal ? "causal" : "", verdict.summary().c_str());
      CHECK_MESSAGE(verdict.passed, verdict.summary());
      ++checked;
      ++checked_per_d_head[shape.d_head];
      checked_causal += causal;
      checked_grouped += shape.grouped();
      failed += !verdict.passed;
    }
  }
  std::printf(
      "test_kernels_gpu: %d kernel/shape checks (%d of them causal, %d grouped-query), %d failed, "
      "%d skipped (wrong GPU)\n",
      checked, checked_causal, checked_grouped, failed, skipped);
  for (const auto& [d_head, count] : checked_per_d_head)
    std::printf("test_kernels_gpu: d_head %d: %d kernel/shape checks\n", d_head, count);
  CHECK_MESSAGE(checked > 0, "no kernel of this build runs on this GPU");
}
