#include "profiling/results/source_state.hpp"

namespace flashscope {

std::string source_state_label() {
  const SourceState& state = source_state();
  std::string label(state.commit);
  if (!state.dirty) return label + " (dirty state unknown)";
  return *state.dirty ? label + "+dirty" : label;
}

}  // namespace flashscope
