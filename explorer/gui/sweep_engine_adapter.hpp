// The run panel's engine: the headless sweep of `explorer --csv`
// (profiling/sweep/sweep_parent.hpp), with its worker processes and fault isolation, adapted to
// explorer::SweepRunner, and its plan adapted to explorer::SweepPlanner.
#pragma once

#include <memory>
#include <string>

#include "explorer/model/sweep_session.hpp"

namespace flashscope::explorer {

// A runner measuring on CUDA device `device`, or nullptr when there is no usable device; then
// `unavailable_reason` says why (the run panel shows it). Creates no CUDA context.
std::shared_ptr<SweepRunner> make_sweep_engine_runner(int device, std::string& unavailable_reason);

// The steps built into this binary and the sweep plan of a request
// (profiling/sweep/sweep_plan.hpp), over the registry of built kernels: available with or without a
// GPU.
std::shared_ptr<SweepPlanner> make_sweep_engine_planner();

}  // namespace flashscope::explorer
