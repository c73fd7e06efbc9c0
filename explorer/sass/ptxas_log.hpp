// What ptxas reports per compiled entry function with `-v` (nvcc --resource-usage): registers,
// barriers, stack frame and spill bytes. ptxas is part of every CUDA toolkit, so these numbers
// exist for every build, disassembler or not.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace flashscope::sass {

struct PtxasResources {
  std::string function;  // mangled entry name
  std::string arch;      // "sm_80", "sm_90a"
  int registers = 0;
  int barriers = 0;
  int stack_frame_bytes = 0;
  int spill_store_bytes = 0;
  int spill_load_bytes = 0;
};

// One entry per "Compiling entry function 'NAME' for 'ARCH'" of the log, in log order, with the
// "Function properties for NAME" and "Used N registers" lines that follow it. Device functions
// that are not entries are left out. Throws std::runtime_error naming `source_name` and the line
// when an entry has no "Used N registers" line.
std::vector<PtxasResources> parse_ptxas_log(std::string_view text, const std::string& source_name);

}  // namespace flashscope::sass
