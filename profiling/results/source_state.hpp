// The source tree this binary was built from, stamped at build time (cmake/SourceState.cmake):
// the commit, and whether the tree had changes that commit does not hold. Every sweep row
// records both (git_commit, git_dirty), so a number measured with uncommitted code says so.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace flashscope {

struct SourceState {
  std::string_view commit;    // 12-digit short hash; "unknown" without git or FLASHSCOPE_GIT_COMMIT
  std::optional<bool> dirty;  // nullopt: unknown (an exported tree without .git)
};

const SourceState& source_state();

// "3babb06a1b2c", "3babb06a1b2c+dirty" or "3babb06a1b2c (dirty state unknown)".
std::string source_state_label();

}  // namespace flashscope
