#include "explorer/sass_mode.hpp"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

#include "explorer/sass/sass_analysis.hpp"
#include "explorer/sass/sass_artifact.hpp"
#include "explorer/sass/sass_selection.hpp"
#include "explorer/step_option.hpp"
#include "explorer/usage.hpp"

namespace flashscope::cli {

using namespace flashscope::sass;

namespace {

std::string kernel_label(const SassKernelRecord& record) {
  return "step " + step_name(record.step) + " " + to_short_form(record.config) + " " + record.arch;
}

std::string hex_address(std::uint32_t address) {
  char text[16];
  std::snprintf(text, sizeof text, "%04x", address);
  return text;
}

std::string join_steps(const std::vector<int>& steps) {
  std::string text;
  for (const int step : steps)
    text += (text.empty() ? "" : ", ") + std::to_string(step);
  return text;
}

std::string join(const std::vector<std::string>& items) {
  std::string text;
  for (const std::string& item : items)
    text += (text.empty() ? "" : ", ") + item;
  return text;
}

const SassKernelRecord& resolve_kernel(const SassArtifact& artifact, int step,
                                       const std::string& config_text, DType dtype,
                                       const std::string& arch, const std::string& step_option,
                                       const std::string& config_option) {
  const std::vector<int> steps = artifact.steps();
  if (std::find(steps.begin(), steps.end(), step) == steps.end())
    throw std::invalid_argument(step_option + ": step " + std::to_string(step) +
                                " has no kernels in " + artifact.directory().string() +
                                " (its steps: " + join_steps(steps) + ")");
  const std::vector<std::string> arches = artifact.architectures();
  if (std::find(arches.begin(), arches.end(), arch) == arches.end())
    throw std::invalid_argument("--arch: '" + arch + "' is not in " +
                                artifact.directory().string() +
                                " (its architectures: " + join(arches) + ")");
  const auto kernels = artifact.kernels_of(step, arch);
  if (kernels.empty())
    throw std::invalid_argument(step_option + ": step " + std::to_string(step) + " has no " + arch +
                                " kernel in " + artifact.directory().string());
  if (config_text.empty()) return *default_kernel(artifact, step, arch, dtype);
  KernelConfig config{};
  try {
    config = parse_config(config_text);
  } catch (const ConfigParseError& error) {
    throw std::invalid_argument(config_option + ": " + error.what());
  }
  if (const SassKernelRecord* record = artifact.find(step, config, arch)) return *record;
  std::string built;
  for (const SassKernelRecord* record : kernels)
    built += "\n  " + to_short_form(record->config);
  throw std::invalid_argument(config_option + ": step " + std::to_string(step) + " has no " + arch +
                              " kernel " + to_short_form(config) + " in " +
                              artifact.directory().string() + "; it has:" + built);
}

void print_resources(std::ostream& out, const SassKernelRecord& record) {
  out << "  ptxas: " << record.registers << " registers, " << record.barriers << " barriers, "
      << record.stack_frame_bytes << " B stack frame, " << record.spill_store_bytes
      << " B spill stores, " << record.spill_load_bytes << " B spill loads\n";
}

void print_function_summary(std::ostream& out, const SassFunction& function) {
  out << "  " << function.instructions.size() << " instructions";
  if (const auto loop = main_loop(function)) {
    out << "; main loop /*" << hex_address(function.instructions[loop->first].address) << "*/../*"
        << hex_address(function.instructions[loop->last].address)
        << "*/: " << loop->last - loop->first + 1 << " instructions, "
        << loop->tensor_core_instructions << " tensor-core";
  } else {
    out << "; no loop issues tensor-core instructions";
  }
  out << "\n";
}

bool in_loop(const std::optional<SassLoop>& loop, std::size_t index) {
  return loop && index >= loop->first && index <= loop->last;
}

// Unified-diff style hunks of the normalized listings; `context` lines around each change, or
// the whole listing when negative. Main-loop instructions are marked L.
void print_listing_diff(std::ostream& out, const SassFunction& before, const SassFunction& after,
                        int context) {
  std::vector<std::string> a, b;
  for (const SassInstruction& instruction : before.instructions)
    a.push_back(normalize_instruction(instruction));
  for (const SassInstruction& instruction : after.instructions)
    b.push_back(normalize_instruction(instruction));
  const LineDiff diff = diff_lines(a, b);
  const auto loop_before = main_loop(before), loop_after = main_loop(after);
  out << "\nnormalized disassembly diff (register numbers, .reuse and branch targets stripped; L = "
         "main loop): "
      << diff.removed << " removed, " << diff.added << " added\n";
  if (diff.truncated)
    out << "(the listings differ in more lines than the diff searches; every differing line is "
           "shown as removed then added)\n";
  const std::size_t count = diff.lines.size();
  std::vector<bool> shown(count, context < 0);
  if (context >= 0)
    for (std::size_t i = 0; i < count; ++i)
      if (diff.lines[i].kind != DiffKind::same) {
        const std::size_t from = i >= static_cast<std::size_t>(context) ? i - context : 0;
        const std::size_t to = std::min(count - 1, i + static_cast<std::size_t>(context));
        for (std::size_t j = from; j <= to; ++j)
          shown[j] = true;
      }
  bool in_hunk = false;
  for (std::size_t i = 0; i < count; ++i) {
    if (!shown[i]) {
      in_hunk = false;
      continue;
    }
    const DiffLine& line = diff.lines[i];
    if (!in_hunk) {
      out << "@@";
      if (line.before)
        out << " before /*" << hex_address(before.instructions[*line.before].address) << "*/";
      if (line.after)
        out << " after /*" << hex_address(after.instructions[*line.after].address) << "*/";
      out << " @@\n";
      in_hunk = true;
    }
    if (line.kind == DiffKind::removed) {
      out << '-' << (in_loop(loop_before, *line.before) ? 'L' : ' ') << " /*"
          << hex_address(before.instructions[*line.before].address) << "*/ " << a[*line.before]
          << "\n";
    } else {
      const char sign = line.kind == DiffKind::added ? '+' : ' ';
      out << sign << (in_loop(loop_after, *line.after) ? 'L' : ' ') << " /*"
          << hex_address(after.instructions[*line.after].address) << "*/ " << b[*line.after]
          << "\n";
    }
  }
}

void print_listing(std::ostream& out, const SassFunction& function) {
  const auto loop = main_loop(function);
  out << "\nlisting (L = main loop)\n";
  for (std::size_t i = 0; i < function.instructions.size(); ++i) {
    const SassInstruction& instruction = function.instructions[i];
    out << (in_loop(loop, i) ? "L " : "  ") << "/*" << hex_address(instruction.address) << "*/ "
        << (instruction.predicate.empty() ? "" : instruction.predicate + " ")
        << instruction.mnemonic << (instruction.operands.empty() ? "" : " " + instruction.operands)
        << " ;\n";
  }
}

// The kernel's name without namespaces, template arguments and parameters: what tells a backward
// instantiation's three kernels apart ("flash_backward_kernel", "backward_preprocess_kernel").
std::string kernel_name(const std::string& function) {
  std::string name = demangle(function);
  name = name.substr(0, std::min(name.find('<'), name.find('(')));
  if (const std::size_t scope = name.rfind("::"); scope != std::string::npos)
    name = name.substr(scope + 2);
  if (const std::size_t space = name.rfind(' '); space != std::string::npos)
    name = name.substr(space + 1);
  return name;
}

int print_list(std::ostream& out, const SassArtifact& artifact) {
  out << "step\tarch\tregisters\tspill_store_bytes\tspill_load_bytes\tinstructions\tconfig\tkernel"
         "\n";
  for (const SassKernelRecord& record : artifact.kernels())
    out << record.step << '\t' << record.arch << '\t' << record.registers << '\t'
        << record.spill_store_bytes << '\t' << record.spill_load_bytes << '\t'
        << (record.instructions ? std::to_string(*record.instructions) : "-") << '\t'
        << to_short_form(record.config) << '\t' << kernel_name(record.function)
        << (record.entry ? "" : " (not the entry kernel)") << "\n";
  return 0;
}

}  // namespace

CLI::App* add_sass_command(CLI::App& app, SassCli& cli) {
  CLI::App* sass = app.add_subcommand(
      "sass",
      "A step's SASS and ptxas resources from the build (or the shipped results/<gpu>/sass when "
      "this build had no CUDA 13 cuobjdump): the opcode histogram, its change against the previous "
      "step's kernel (--diff-prev) or a named one (--against), and the normalized disassembly "
      "diff. No GPU needed. Exit code 0 done, 2 invalid request, 3 no SASS artifact.");
  sass->add_option("--step", cli.step, "Kernel step: 7, or a backward step as B1 (or 101)")
      ->transform(step_name_transform());
  sass->add_option("--config", cli.config,
                   "Config short form (default: the step's headline config, else its first "
                   "kernel, in --dtype)");
  sass->add_option("--dtype", cli.dtype,
                   dtype_choices_text() + ", for the default kernel (default fp16)");
  sass->add_option("--arch", cli.arch,
                   "sm_80, sm_90a, ... (default: the architecture where the step's kernel is "
                   "largest)");
  CLI::Option* previous = sass->add_flag(
      "--diff-prev", cli.diff_previous,
      "Compare with the previous step's kernel of the same config, else the previous step's "
      "counterpart pick (the output says which)");
  sass->add_option("--against", cli.against,
                   "Compare with this kernel instead: STEP or \"STEP:CONFIG\" (same --arch)")
      ->excludes(previous);
  sass->add_option("--by", cli.by,
                   "Histogram by opcode (HMMA) or by mnemonic, the opcode with its modifiers "
                   "(HMMA.16816.F32)")
      ->capture_default_str();
  sass->add_flag("--csv", cli.csv,
                 "Print the histogram (or its change) as CSV: name,count or "
                 "name,before,after,delta");
  sass->add_flag("--listing", cli.listing, "Also print the kernel's listing");
  sass->add_option("--context", cli.context,
                   "Unchanged lines around each change in the disassembly diff; -1 prints all")
      ->capture_default_str();
  sass->add_flag("--list", cli.list, "List every kernel of the artifact and exit");
  sass->add_option("--sass-dir", cli.sass_dir,
                   "Read this artifact (a build's <build>/sass or a results/<gpu>/sass)");
  sass->add_option(
      "--output", cli.output,
      "Write here instead of stdout (whole or not at all, through FILE.partial: a "
      "failed request leaves the file as it was; an existing FILE.partial is refused)");
  return sass;
}

namespace {

// The checks that need no artifact: every problem at once, before anything is read or written.
UsageProblems sass_usage_problems(const SassCli& cli) {
  UsageProblems problems;
  if (!grouping_from_name(cli.by)) problems.add("--by: '" + cli.by + "' is not opcode or mnemonic");
  if (!cli.dtype.empty() && !dtype_from_string(cli.dtype))
    problems.add("--dtype: '" + cli.dtype + "' is not " + dtype_choices_text());
  if (!cli.list && cli.step == 0) problems.add("--step is required (or --list)");
  if (cli.step < 0) problems.add("--step: " + std::to_string(cli.step) + " is not a step");
  if (cli.context < -1)
    problems.add("--context: " + std::to_string(cli.context) +
                 " is not a line count (0 or more, or -1 for all)");
  if (!cli.config.empty())
    problems.check([&] {
      try {
        parse_config(cli.config);
      } catch (const ConfigParseError& error) {
        throw std::invalid_argument(std::string("--config: ") + error.what());
      }
    });
  if (!cli.against.empty()) {
    const std::size_t colon = cli.against.find(':');
    const std::string step_text = cli.against.substr(0, colon);
    int step = 0;
    const auto [end, error] =
        std::from_chars(step_text.data(), step_text.data() + step_text.size(), step);
    if (step_text.empty() || error != std::errc() || end != step_text.data() + step_text.size())
      problems.add("--against: '" + cli.against +
                   "' does not start with a step number (STEP or STEP:CONFIG)");
    if (colon != std::string::npos)
      problems.check([&] {
        try {
          parse_config(cli.against.substr(colon + 1));
        } catch (const ConfigParseError& error) {
          throw std::invalid_argument(std::string("--against: ") + error.what());
        }
      });
  }
  if (!cli.sass_dir.empty())
    if (const auto problem = input_directory_problem("--sass-dir", cli.sass_dir))
      problems.add(*problem);
  if (!cli.output.empty())
    if (const auto problem = atomic_output_problem("--output", cli.output)) problems.add(*problem);
  return problems;
}

// The report itself, to `out`.
int print_sass_report(const SassCli& cli, std::ostream& out) {
  try {
    const auto grouping = grouping_from_name(cli.by);
    const DType dtype = cli.dtype.empty() ? DType::FP16 : *dtype_from_string(cli.dtype);

    const SassSource source = find_sass_source(cli.sass_dir, build_sass_directory(),
                                               shipped_results_directory_for_sass());
    std::cerr << "explorer sass: " << source.note << "\n";
    if (!source.artifact) return 3;
    const SassArtifact& artifact = *source.artifact;

    if (cli.list) return print_list(out, artifact);

    const std::string arch = cli.arch.empty() ? default_architecture(artifact, cli.step) : cli.arch;
    const SassKernelRecord& current =
        resolve_kernel(artifact, cli.step, cli.config, dtype, arch, "--step", "--config");

    const SassKernelRecord* other = nullptr;
    std::string relation;
    if (cli.diff_previous) {
      const auto counterpart = previous_step_counterpart(artifact, current);
      if (!counterpart)
        throw std::invalid_argument("--diff-prev: no step before " + std::to_string(cli.step) +
                                    " has a " + arch + " kernel in " +
                                    artifact.directory().string());
      other = counterpart->record;
      relation = counterpart->relation;
    } else if (!cli.against.empty()) {
      const std::size_t colon = cli.against.find(':');
      int step = 0;
      const std::string step_text = cli.against.substr(0, colon);
      try {
        std::size_t used = 0;
        step = std::stoi(step_text, &used);
        if (used != step_text.size()) throw std::invalid_argument("trailing text");
      } catch (const std::exception&) {
        throw std::invalid_argument("--against: '" + cli.against +
                                    "' does not start with a step number (STEP or STEP:CONFIG)");
      }
      other = &resolve_kernel(artifact, step,
                              colon == std::string::npos ? "" : cli.against.substr(colon + 1),
                              current.config.dtype, arch, "--against", "--against");
      relation = "named with --against";
    }

    if (current.listing.empty()) {
      out << kernel_label(current) << "\n";
      print_resources(out, current);
      if (other) {
        out << "against " << kernel_label(*other) << " (" << relation << ")\n";
        print_resources(out, *other);
      }
      out << "no listing: " << source.note << "\n";
      return 0;
    }
    const SassFunction function = artifact.load_function(current);
    const OpcodeCounts counts = count_opcodes(function, *grouping);
    std::optional<SassFunction> other_function;
    OpcodeCounts other_counts;
    if (other) {
      other_function = artifact.load_function(*other);
      other_counts = count_opcodes(*other_function, *grouping);
    }

    if (cli.csv) {
      if (other) {
        out << std::string(grouping_name(*grouping)) << ",before,after,delta\n";
        for (const OpcodeChange& change : compare_counts(other_counts, counts))
          out << change.name << ',' << change.before << ',' << change.after << ',' << change.delta()
              << "\n";
      } else {
        out << std::string(grouping_name(*grouping)) << ",count\n";
        std::vector<std::pair<std::string, int>> rows(counts.begin(), counts.end());
        std::stable_sort(rows.begin(), rows.end(),
                         [](const auto& a, const auto& b) { return a.second > b.second; });
        for (const auto& [name, count] : rows)
          out << name << ',' << count << "\n";
      }
      return 0;
    }

    out << kernel_label(current) << "\n";
    print_resources(out, current);
    print_function_summary(out, function);
    if (other) {
      out << "against " << kernel_label(*other) << " (" << relation << ")\n";
      print_resources(out, *other);
      print_function_summary(out, *other_function);
      const std::string before_header = "step " + step_name(other->step);
      const std::string after_header = "step " + step_name(current.step);
      char line[160];
      std::snprintf(line, sizeof line, "\n%-28s %10s %10s %8s\n",
                    std::string(grouping_name(*grouping)).c_str(), before_header.c_str(),
                    after_header.c_str(), "change");
      out << line;
      for (const OpcodeChange& change : compare_counts(other_counts, counts)) {
        std::snprintf(line, sizeof line, "%-28s %10d %10d %+8d\n", change.name.c_str(),
                      change.before, change.after, change.delta());
        out << line;
      }
      std::snprintf(line, sizeof line, "%-28s %10d %10d %+8d\n", "total",
                    total_instructions(other_counts), total_instructions(counts),
                    total_instructions(counts) - total_instructions(other_counts));
      out << line;
      print_listing_diff(out, *other_function, function, cli.context);
    } else {
      std::vector<std::pair<std::string, int>> rows(counts.begin(), counts.end());
      std::stable_sort(rows.begin(), rows.end(),
                       [](const auto& a, const auto& b) { return a.second > b.second; });
      char line[160];
      std::snprintf(line, sizeof line, "\n%-28s %8s\n",
                    std::string(grouping_name(*grouping)).c_str(), "count");
      out << line;
      for (const auto& [name, count] : rows) {
        std::snprintf(line, sizeof line, "%-28s %8d\n", name.c_str(), count);
        out << line;
      }
      std::snprintf(line, sizeof line, "%-28s %8d\n", "total", total_instructions(counts));
      out << line;
    }
    if (cli.listing) print_listing(out, function);
    return 0;
  } catch (const SassArtifactError& error) {
    std::cerr << "explorer sass: " << error.what() << "\n";
    return 2;
  } catch (const SassFormatError& error) {
    std::cerr << "explorer sass: " << error.what() << "\n";
    return 2;
  } catch (const std::invalid_argument& error) {
    std::cerr << "explorer sass: " << error.what() << "\n";
    return 2;
  }
}

}  // namespace

int run_sass_mode(const SassCli& cli) {
  const UsageProblems problems = sass_usage_problems(cli);
  if (!problems.empty()) return problems.report(std::cerr, "explorer sass");
  if (cli.output.empty()) return print_sass_report(cli, std::cout);
  // Written whole or not at all: a request that fails halfway leaves --output as it was.
  std::ostringstream text;
  const int status = print_sass_report(cli, text);
  if (status != 0) return status;
  try {
    AtomicOutputFile out(cli.output);
    out.stream() << text.str();
    out.commit();
  } catch (const std::runtime_error& error) {
    std::cerr << "explorer sass: --output: " << error.what() << "\n";
    return 2;
  }
  std::cerr << "explorer sass: wrote " << cli.output << "\n";
  return 0;
}

}  // namespace flashscope::cli
