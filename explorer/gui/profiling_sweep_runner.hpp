// The run panel's engine: the headless sweep of `explorer --csv` (profiling/sweep_runner.hpp),
// with its worker processes and fault isolation, adapted to explorer::SweepRunner.
#pragma once

#include <memory>
#include <string>

#include "explorer/model/sweep_runner.hpp"

namespace flashscope::explorer {

// A runner measuring on CUDA device `device`, or nullptr when there is no usable device; then
// `unavailable_reason` says why (the run panel shows it). Creates no CUDA context.
std::shared_ptr<SweepRunner> make_profiling_sweep_runner(int device,
                                                         std::string& unavailable_reason);

}  // namespace flashscope::explorer
