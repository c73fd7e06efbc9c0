#include <doctest/doctest.h>

#include <algorithm>
#include <set>

#include "configs/config_sets.hpp"
#include "kernels/common/build_info.hpp"
#include "kernels/common/registry.hpp"

using namespace flashscope;

namespace {

std::set<configs::Instantiation> expected_instantiations() {
  const BuildInfo& info = build_info();
  const auto set = configs::build_set_from_string(info.kernel_set);
  REQUIRE(set.has_value());
  const std::vector<int> filter =
      info.step_filter.empty() ? std::vector<int>{} : configs::parse_step_list(info.step_filter);
  const std::vector<int> tuned =
      info.tune_steps.empty() ? std::vector<int>{} : configs::parse_step_list(info.tune_steps);
  std::set<configs::Instantiation> expected;
  for (const auto& item : configs::build_plan(*set, filter, tuned).instantiations)
    if (std::find(info.written_steps.begin(), info.written_steps.end(), item.step) !=
        info.written_steps.end())
      expected.insert(item);
  return expected;
}

}  // namespace

TEST_CASE("the registry holds exactly the build plan of the configured set") {
  std::set<configs::Instantiation> registered;
  for (const KernelEntry* entry : built_kernels().entries())
    registered.insert({entry->step, entry->config});
  const auto expected = expected_instantiations();
  CHECK(registered.size() == built_kernels().size());
  CHECK(registered == expected);
  MESSAGE("kernel set " << build_info().kernel_set << ": " << registered.size()
                        << " kernels over steps with source folders");
}

namespace {

// Dynamic shared memory of the Q, K and V tiles (O reuses Q's), 2-byte elements, worked out by
// hand from the spec (§2.4) for every block shape of the Ampere-track sets at d = 128:
// (B_r + 2·B_c) · d · 2. Written out rather than computed, so a change to the formula in
// config.hpp or to what kernel_entry.cuh registers fails here. The shipped H200 data agrees
// (smem_bytes 49152 for the 64×64 progression configs: cudaFuncGetAttributes, static 0).
int expected_smem_bytes(const KernelConfig& c) {
  if (c.d_head != 128) return -1;
  if (c.B_r == 64 && c.B_c == 32) return 32768;
  if (c.B_r == 64 && c.B_c == 64) return 49152;
  if (c.B_r == 128 && c.B_c == 32) return 49152;
  if (c.B_r == 128 && c.B_c == 64) return 65536;
  if (c.B_r == 128 && c.B_c == 128) return 98304;
  return -1;
}

// A config with a K/V stage count (the Hopper track) lays out shared memory differently.
bool single_stage(const KernelConfig& c) {
  return to_short_form(c).find("stages_") == std::string::npos;
}

}  // namespace

TEST_CASE("entries carry a launcher, the kernel function and the spec's attributes") {
  int checked_smem = 0, single_stage_entries = 0;
  for (const KernelEntry* entry : built_kernels().entries()) {
    CAPTURE(entry->display_name);
    // A step's pass decides its launcher: the forward's, or the backward's with its workspace
    // size (backward-track.md §1.1), never both.
    const StepDescriptor* step = configs::find_step_descriptor(entry->step);
    REQUIRE(step != nullptr);
    const bool backward = step->pass == Pass::backward;
    CHECK(static_cast<bool>(entry->launch) == !backward);
    CHECK(static_cast<bool>(entry->launch_backward) == backward);
    CHECK(static_cast<bool>(entry->backward_workspace_bytes) == backward);
    CHECK(entry->kernel_function != nullptr);
    // The table is the forward's layout; a backward step's main kernel lays out its own tiles.
    if (single_stage(entry->config) && !backward) {
      ++single_stage_entries;
      if (expected_smem_bytes(entry->config) > 0) {
        CHECK(entry->smem_bytes == expected_smem_bytes(entry->config));
        ++checked_smem;
      }
    }
    // One warp is 32 threads; the sets use 4 or 8 warps per CTA.
    if (entry->config.n_warps == 4) CHECK(entry->threads_per_block == 128);
    if (entry->config.n_warps == 8) CHECK(entry->threads_per_block == 256);
    CHECK(entry->display_name == std::to_string(entry->step) + " " + to_short_form(entry->config));
    CHECK(entry->static_head_counts == configs::step_info(entry->step).static_head_counts);
    CHECK(&built_kernels().find(entry->step, entry->config) == entry);
  }
  // The table above covers every block shape of the sets (configs::select("all")): a new shape
  // must be added to it, with its bytes worked out by hand.
  CHECK(checked_smem == single_stage_entries);
}

TEST_CASE("a lookup of an unbuilt config names the closest built configs of that step") {
  KernelRegistry registry;
  const KernelConfig base = configs::progression()[0];
  for (int i = 0; i < 3; ++i) {
    KernelEntry entry;
    entry.step = 1;
    entry.config = base;
    entry.config.B_c = 32 << i;
    entry.display_name = "1 " + to_short_form(entry.config);
    registry.add(entry);
  }
  KernelConfig wanted = base;
  wanted.swizzled = true;
  try {
    registry.find(1, wanted);
    FAIL("lookup of an unbuilt config must throw");
  } catch (const KernelLookupError& error) {
    const std::string message = error.what();
    CHECK(message.find("step 1 has no kernel built for (FP16, 128, 64, 64, 4): "
                       "async+swizzled+load_0_0_0_tiles") != std::string::npos);
    CHECK(message.find("closest built configs of step 1:\n  (FP16, 128, 64, 64, 4): "
                       "async+load_0_0_0_tiles") != std::string::npos);
  }
  CHECK_THROWS_WITH_AS(registry.find(9, base),
                       doctest::Contains("this build has no kernel for step 9"), KernelLookupError);
  KernelEntry duplicate;
  duplicate.step = 1;
  duplicate.config = base;
  duplicate.config.B_c = 32;
  CHECK_THROWS_AS(registry.add(duplicate), std::logic_error);
  CHECK(registry.steps() == std::vector<int>{1});
}

TEST_CASE(
    "every built kernel takes the causal mask exactly when its step's descriptor declares it") {
  // KernelEntry::supports_causal is copied from the descriptor by the step's registration;
  // launch validation and the sweep trust the entry, so a registration that forgets the copy
  // would refuse (or wrongly accept) causal launches.
  for (const KernelEntry* entry : built_kernels().entries()) {
    CAPTURE(entry->display_name);
    const StepDescriptor* descriptor = configs::find_step_descriptor(entry->step);
    REQUIRE(descriptor != nullptr);
    CHECK(entry->supports_causal == descriptor->causal);
  }
}
