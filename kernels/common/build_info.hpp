// What this binary was built with; defined by the generated registry source.
#pragma once

#include <string_view>
#include <vector>

namespace flashscope {

struct BuildInfo {
  std::string_view kernel_set;     // FLASHSCOPE_KERNEL_SET: ci, prog, tune or all
  std::string_view step_filter;    // FLASHSCOPE_STEPS ("" = every step)
  std::string_view tune_steps;     // FLASHSCOPE_TUNE_STEPS ("" = the default, 7-16)
  std::vector<int> written_steps;  // steps whose kernels/versions folder exists
  std::string_view cuda_architectures;
  std::string_view git_commit;  // at configure time
};

const BuildInfo& build_info();

}  // namespace flashscope
