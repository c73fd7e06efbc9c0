// The step descriptors (kernels/versions/vNN/step.hpp, listed in kernels/versions/steps.hpp)
// against the source tree: every folder under kernels/versions is a step with a descriptor in the
// list, every descriptor has its folder, kernel and docs page, and every step's validation goes
// through the rules its descriptor names (docs/adding-a-step.md).
#include <doctest/doctest.h>

#include <cstdio>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "configs/config_sets.hpp"
#include "configs/launch_validation.hpp"
#include "kernels/versions/steps.hpp"

using namespace flashscope;

namespace fs = std::filesystem;

namespace {

const fs::path kSourceDir = FLASHSCOPE_SOURCE_DIR;

// "07.md" for a forward step, "B1.md" for backward step 101 (its name, step_name).
std::string page_name(int step) {
  if (is_backward_step_number(step)) return step_name(step) + ".md";
  char name[16];
  std::snprintf(name, sizeof name, "%02d.md", step);
  return name;
}

// Configs of both tracks around the shapes the steps run, statically valid or not: enough for
// every rule set to accept some and reject others.
std::vector<KernelConfig> probe_configs() {
  std::vector<KernelConfig> out;
  for (const int n_warps : {2, 3, 4, 8})
    for (const int B_r : {64, 128})
      for (const int B_c : {16, 32, 64, 128}) {
        KernelConfig c{DType::FP16, 128, B_r, B_c,   n_warps, true, true, true,
                       0,           2,   2,   false, true,    0,    0};
        out.push_back(c);
      }
  for (const int B_r : {64, 128})
    for (const int B_c : {64, 128})
      for (const int n_warps : {4, 8, 12})
        for (const int stages : {1, 2, 3})
          for (const int regs : {0, 224, 240}) {
            KernelConfig c{};
            c.dtype = DType::BF16;
            c.d_head = 128;
            c.B_r = B_r;
            c.B_c = B_c;
            c.n_warps = n_warps;
            c.stages = stages;
            c.consumer_regs = regs;
            out.push_back(c);
          }
  return out;
}

}  // namespace

TEST_CASE("every folder under kernels/versions is a listed step with a step.hpp") {
  const fs::path versions = kSourceDir / "kernels" / "versions";
  REQUIRE(fs::is_directory(versions));
  std::set<std::string> described;
  for (const StepDescriptor& step : versions::kEvery)
    described.insert(std::string(step.source_folder));
  int folders = 0;
  for (const auto& entry : fs::directory_iterator(versions)) {
    if (!entry.is_directory()) continue;
    ++folders;
    const std::string folder = entry.path().filename().string();
    CHECK_MESSAGE(fs::is_regular_file(entry.path() / "step.hpp"),
                  "kernels/versions/" << folder << " has no step.hpp (its step descriptor)");
    CHECK_MESSAGE(described.contains(folder),
                  "kernels/versions/"
                      << folder << " is not a step of kernels/versions/steps.hpp "
                      << "(include its step.hpp and add its descriptor to kAll, or kBackward for a "
                      << "backward step)");
  }
  CHECK(folders == static_cast<int>(described.size()));
}

TEST_CASE("every descriptor has its folder, kernel and docs page") {
  for (const StepDescriptor& step : versions::kEvery) {
    CAPTURE(step.number);
    const fs::path folder = kSourceDir / "kernels" / "versions" / step.source_folder;
    CHECK_MESSAGE(fs::is_regular_file(folder / "step.hpp"),
                  "kernels/versions/" << step.source_folder << "/step.hpp is missing");
    CHECK_MESSAGE(
        fs::is_regular_file(folder / step.kernel.header),
        "kernels/versions/" << step.source_folder << "/" << step.kernel.header << " is missing");
    const fs::path page = kSourceDir / "docs" / "versions" / page_name(step.number);
    CHECK_MESSAGE(fs::is_regular_file(page), "step " << step.number << " has no docs page docs/"
                                                     << "versions/" << page_name(step.number));
    CHECK_FALSE(step.title.empty());
    CHECK_FALSE(step.cpp_namespace.empty());
    CHECK_FALSE(step.kernel.register_function.empty());
  }
}

TEST_CASE("every step states its own validation rules and launch validation applies them") {
  const std::vector<KernelConfig> probes = probe_configs();
  for (const StepDescriptor& step : versions::kEvery) {
    CAPTURE(step.number);
    // A descriptor cannot leave `.rules` out or set it to nullptr (StepRules does not compile
    // then); a null function pointer variable is the one way left, caught here.
    const bool has_rules = step.rules.function() != nullptr;
    REQUIRE_MESSAGE(has_rules, "step " << step.number << " declares no validation rules");
    int checked = 0;
    for (const KernelConfig& c : probes) {
      if (!is_statically_valid(c, step.pass)) continue;
      if (is_hopper_config(c) != (step.track == Track::hopper)) continue;
      CHECK(unsupported_combination(step.number, c) == step.rules(step.number, c));
      ++checked;
    }
    CHECK(checked > 0);
  }
  const int past_last = versions::kLast + 1;
  const auto unknown = unsupported_combination(past_last, configs::headline_config(1));
  REQUIRE(unknown.has_value());
  CHECK(unknown->find("step " + std::to_string(past_last) + " does not exist") !=
        std::string::npos);
}

TEST_CASE("every step's picks, dtypes, head dimensions and tune axes are consistent") {
  for (const StepDescriptor& step : versions::kEvery) {
    CAPTURE(step.number);
    CHECK_FALSE(step.d_heads.empty());
    const configs::StepPicks picks = configs::step_picks(step.number);
    REQUIRE_FALSE(picks.all().empty());
    for (const KernelConfig& pick : picks.all()) {
      CAPTURE(to_short_form(pick));
      CHECK(step.d_heads.contains(pick.d_head));
      CHECK(is_hopper_config(pick) == (step.track == Track::hopper));
      for (const DType dtype : step.dtypes)
        CHECK_FALSE(unsupported_combination(step.number, configs::with_dtype(pick, dtype)));
    }
    if (step.pass == Pass::backward) {
      // A backward step has no tune space yet (configs::select_for_step): it is built and
      // measured with its picks alone, whatever its track.
      CHECK(step.tuning.B_r.empty());
      CHECK(step.tuning.stages.empty());
    } else if (step.track == Track::hopper) {
      CHECK_FALSE(step.tuning.B_r.empty());
      CHECK_FALSE(step.tuning.B_c.empty());
      CHECK_FALSE(step.tuning.stages.empty());
      CHECK_FALSE(step.tuning.consumer_regs.empty());
      CHECK_FALSE(configs::hopper_tune_set(step.number).empty());
      // Every head dimension the step declares has a progression config and tune configs.
      for (const int d_head : step.d_heads) {
        CAPTURE(d_head);
        CHECK(configs::headline_config(step.number, d_head).d_head == d_head);
        int tuned = 0;
        for (const KernelConfig& c : configs::hopper_tune_set(step.number))
          tuned += c.d_head == d_head;
        CHECK(tuned > 0);
      }
    } else {
      // Ampere steps are tuned over the seed's space (spec §5.2), not axes of their own.
      CHECK(step.tuning.B_r.empty());
      CHECK(step.tuning.stages.empty());
    }
  }
}
