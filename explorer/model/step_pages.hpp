// Each step's documentation page and the source diff to the previous step's kernel folder,
// embedded at build time (explorer/model/embed_step_pages.cmake) so the explorer needs no
// checkout at run time. Steps 1-7 share kernels/versions/v01_07; every later step has its vNN
// folder, the backward steps their bNN folders. One page per step of kernels/versions/steps.hpp.
#pragma once

#include <span>
#include <string_view>

#include "configs/config_sets.hpp"

namespace flashscope::explorer {

struct StepPage {
  int step = 0;
  std::string_view doc_path;       // "docs/versions/08.md"
  std::string_view doc_markdown;   // empty when the page did not exist at build time
  std::string_view source_folder;  // "kernels/versions/v08"
  std::string_view diff_summary;   // what was diffed against what, or why there is no diff
  std::string_view source_diff;    // `diff -ruN previous current`, empty when none
};

// Every step's page, one per step of both passes: the forward steps 1..configs::kLastStep, then
// the backward steps (docs/versions/B1.md, ...), in order.
std::span<const StepPage> embedded_step_pages();
const StepPage* embedded_step_page(int step);  // nullptr for a step no descriptor declares

}  // namespace flashscope::explorer
