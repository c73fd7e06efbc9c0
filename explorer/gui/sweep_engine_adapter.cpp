#include "explorer/gui/sweep_engine_adapter.hpp"

#include <charconv>
#include <iostream>
#include <random>
#include <set>
#include <stdexcept>

#include "configs/config_sets.hpp"
#include "explorer/sweep_mode.hpp"
#include "kernels/common/registry.hpp"
#include "profiling/device.hpp"
#include "profiling/baselines/baseline_attention.hpp"
#include "profiling/sweep/sweep_plan.hpp"
#include "profiling/sweep/sweep_parent.hpp"

namespace flashscope::explorer {

namespace {

// The headless sweep's options for a run panel request (seed: drawn by the caller).
SweepOptions sweep_options_for(const SweepRequest& request) {
  SweepOptions options;
  options.set_key = request.config_set;
  options.steps = request.steps;
  options.axes = request.axes;
  if (!request.include_baselines) options.baselines.clear();
  return options;
}

class ProfilingSweepPlanner final : public SweepPlanner {
 public:
  std::vector<RunnableStep> steps() const override {
    std::vector<RunnableStep> steps;
    for (const int step : built_kernels().steps())
      steps.push_back({step, std::string(configs::step_info(step).title)});
    return steps;
  }

  SweepPreview preview(const SweepRequest& request) const override {
    SweepPreview preview;
    try {
      const SweepPlan plan =
          plan_sweep(sweep_options_for(request), built_kernels(), built_baselines());
      std::map<int, std::set<KernelConfig>> kernels;
      for (const SweepUnit& unit : plan.units)
        for (const MeasurementItem& item : unit.items)
          if (const auto step = item.subject.step()) kernels[*step].insert(*item.config);
      for (const auto& [step, configs] : kernels)
        preview.configs_per_step[step] = configs.size();
      preview.rows = plan.recorded_count();
      preview.notes = plan.notes;
    } catch (const std::exception& error) {
      preview.error = error.what();
    }
    return preview;
  }
};

class ProfilingSweepRunner final : public SweepRunner {
 public:
  ProfilingSweepRunner(int device, std::string name) : device_(device), name_(std::move(name)) {}

  std::string device_name() const override { return name_; }

  // NVIDIA's GLX names the GPU it draws on ("NVIDIA H100 80GB HBM3/PCIe/SSE2").
  void set_display_renderer(const std::string& gl_renderer) override {
    draws_the_window_ = gl_renderer.find(name_) != std::string::npos;
  }

  void run(const SweepRequest& request, const SweepCallbacks& callbacks,
           std::stop_token stop) override {
    SweepOptions options = sweep_options_for(request);
    options.device = device_;
    // Every worker of one sweep must use the same input seed; a fresh one per sweep.
    std::random_device entropy;
    options.seed = (static_cast<std::uint64_t>(entropy()) << 32 | entropy()) % 1'000'000'000'000ull;
    // The window's OpenGL context shares this GPU with the measured kernels: on an H100 under
    // Xvfb with NVIDIA's GLX, CUPTI's range profiler failed to start there (CUPTI_ERROR_UNKNOWN,
    // after a launch failure), so a run from the window measures times only.
    if (draws_the_window_) {
      options.collect_metrics = false;
      std::cerr << "explorer: this window draws on " << name_
                << ", the GPU being measured: hardware counters are off for runs from the window "
                   "(explorer --csv collects them)\n";
    }
    validate_sweep_options(options);

    SweepObserver observer;
    observer.on_row = [&](const ResultRow& row) { callbacks.on_row(row); };
    observer.on_progress = [&](const SweepPosition& position) {
      callbacks.on_progress({static_cast<int>(position.completed), static_cast<int>(position.total),
                             position.current});
    };
    observer.stop_requested = [&stop] { return stop.stop_requested(); };
    // Workers are this executable started with the sweep's own (hidden) worker options.
    run_sweep(
        options, [](const SweepOptions&, int fd) { return cli::sweep_worker_arguments(fd); },
        observer, std::cerr);
  }

 private:
  int device_;
  std::string name_;
  bool draws_the_window_ = false;
};

}  // namespace

std::shared_ptr<SweepRunner> make_sweep_engine_runner(int device, std::string& unavailable_reason) {
  try {
    const DeviceDescription description = describe_device(device);
    return std::make_shared<ProfilingSweepRunner>(device, description.name);
  } catch (const NoCudaDevice& error) {
    unavailable_reason = error.what();
    return nullptr;
  }
}

std::shared_ptr<SweepPlanner> make_sweep_engine_planner() {
  return std::make_shared<ProfilingSweepPlanner>();
}

}  // namespace flashscope::explorer
