#include "explorer/gui/profiling_sweep_runner.hpp"

#include <iostream>
#include <random>
#include <stdexcept>

#include "explorer/sweep_mode.hpp"
#include "profiling/device.hpp"
#include "profiling/sweep_runner.hpp"

namespace flashscope::explorer {

namespace {

class ProfilingSweepRunner final : public SweepRunner {
 public:
  ProfilingSweepRunner(int device, std::string name) : device_(device), name_(std::move(name)) {}

  std::string device_name() const override { return name_; }

  void run(const SweepRequest& request, const SweepCallbacks& callbacks,
           std::stop_token stop) override {
    SweepOptions options;
    options.set_key = request.config_set;
    options.steps = request.steps;
    options.seq_lens = request.seq_lens;
    options.dtypes.clear();
    for (const std::string& name : request.dtypes) {
      const auto dtype = dtype_from_string(name);
      if (!dtype) throw std::invalid_argument("unknown dtype \"" + name + "\"");
      options.dtypes.push_back(*dtype);
    }
    if (!request.include_references) options.references.clear();
    options.device = device_;
    // Every worker of one sweep must use the same input seed; a fresh one per sweep.
    std::random_device entropy;
    options.seed = (static_cast<std::uint64_t>(entropy()) << 32 | entropy()) % 1'000'000'000'000ull;
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
        options,
        [](const SweepOptions& worker_options, int fd) {
          return cli::sweep_worker_arguments(worker_options, fd);
        },
        observer, std::cerr);
  }

 private:
  int device_;
  std::string name_;
};

}  // namespace

std::shared_ptr<SweepRunner> make_profiling_sweep_runner(int device,
                                                         std::string& unavailable_reason) {
  try {
    const DeviceDescription description = describe_device(device);
    return std::make_shared<ProfilingSweepRunner>(device, description.name);
  } catch (const NoCudaDevice& error) {
    unavailable_reason = error.what();
    return nullptr;
  }
}

}  // namespace flashscope::explorer
