// flashscope's one executable: lists kernels and config sets, and (added by later modes) runs
// headless sweeps, checks one kernel, or opens the desktop explorer.
#include <CLI/CLI.hpp>

#include <iostream>
#include <string>

#include "configs/config_sets.hpp"
#include "explorer/check_mode.hpp"
#include "explorer/sweep_mode.hpp"
#include "kernels/common/build_info.hpp"
#include "kernels/common/registry.hpp"

namespace {

using namespace flashscope;

int list_built_kernels() {
  for (const KernelEntry* entry : built_kernels().entries())
    std::cout << entry->step << " " << to_short_form(entry->config) << "\n";
  return 0;
}

int list_selection(const std::string& key) {
  for (const KernelConfig& c : configs::select(key))
    std::cout << to_short_form(c) << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "flashscope explorer: the 16-step FlashAttention-2 forward progression, built, checked and "
      "measured.\nBuilt kernel set: " +
      std::string(build_info().kernel_set) + ", CUDA architectures " +
      std::string(build_info().cuda_architectures) + "."};
  app.set_version_flag("--version", "flashscope " + std::string(build_info().git_commit));

  bool list = false;
  std::string list_set;
  app.add_flag("--list", list,
               "Print every kernel built into this binary, one per line: step, space, short form");
  app.add_option("--list-set", list_set,
                 "Print the configs a selection key yields, built or not: " +
                     configs::selection_keys_help())
      ->excludes("--list");
  cli::SweepCli sweep;
  cli::add_sweep_options(app, sweep);
  cli::CheckCli check;
  CLI::App* check_command = cli::add_check_command(app, check);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    return app.exit(error);
  }
  if (sweep.csv) return cli::run_sweep_mode(sweep);
  if (check_command->parsed()) return cli::run_check_mode(check);

  try {
    if (list) return list_built_kernels();
    if (!list_set.empty()) return list_selection(list_set);
  } catch (const std::exception& error) {
    std::cerr << "explorer: " << error.what() << "\n";
    return 1;
  }
  std::cout << app.help();
  return 0;
}
