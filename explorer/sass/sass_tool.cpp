// flashscope-sass: the build's SASS recorder (docs/explorer.md, "SASS").
//
//   record   after one kernel instantiation compiled: keep its ptxas log and, with a disassembler,
//            its listings (run by cmake/record_kernel_build.sh, the kernels' compiler launcher)
//   collect  after the kernel library linked: kernels.tsv and manifest.txt of the whole build
//   export   copy an artifact, optionally only the progression's kernels, for results/<gpu>/sass
//   merge    join two artifacts (a build of some steps into a shipped one), saying which source
//            made which steps
#include <CLI/CLI.hpp>

#include <sys/wait.h>

#include <cstdio>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <algorithm>
#include <map>
#include <set>
#include <tuple>
#include <string>
#include <vector>

#include "configs/config_sets.hpp"
#include "explorer/sass/ptxas_log.hpp"
#include "explorer/sass/sass_artifact.hpp"
#include "explorer/sass/sass_listing.hpp"
#include "explorer/sass/sass_merge.hpp"
#include "explorer/sass/sass_selection.hpp"

namespace fs = std::filesystem;
using namespace flashscope;
using namespace flashscope::sass;

namespace {

class ToolError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// "…/instantiations/s08/s08_fp16_….cu" -> folder "s08", id "s08_fp16_…".
struct InstantiationName {
  std::string folder;
  std::string id;
};

InstantiationName instantiation_name(const fs::path& source) {
  return {source.parent_path().filename().string(), source.stem().string()};
}

// The generator writes "// step N: <short form>" as the second line of every instantiation.
std::pair<int, KernelConfig> read_instantiation_header(const fs::path& source) {
  const std::string text = read_text_file(source);
  const std::size_t first = text.find('\n');
  const std::size_t second = first == std::string::npos ? first : text.find('\n', first + 1);
  const std::string line =
      first == std::string::npos ? "" : text.substr(first + 1, second - first - 1);
  int step = 0;
  int consumed = 0;
  if (std::sscanf(line.c_str(), "// step %d: %n", &step, &consumed) != 1 || consumed == 0)
    throw ToolError(source.string() + ":2: expected '// step N: <short form>', got '" + line + "'");
  try {
    return {step, parse_short_form(line.substr(static_cast<std::size_t>(consumed)))};
  } catch (const ConfigParseError& error) {
    throw ToolError(source.string() + ":2: " + error.what());
  }
}

// Runs `command` through the shell and returns its standard output; throws with its exit status.
std::string capture(const std::string& command) {
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) throw ToolError("cannot run: " + command);
  std::string output;
  char buffer[1 << 16];
  std::size_t count = 0;
  while ((count = std::fread(buffer, 1, sizeof buffer, pipe)) > 0)
    output.append(buffer, count);
  const int status = ::pclose(pipe);
  if (status != 0)
    throw ToolError("'" + command + "' failed (exit status " +
                    std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : status) + ")");
  return output;
}

std::string shell_quote(const std::string& text) {
  std::string quoted = "'";
  for (const char c : text) {
    if (c == '\'')
      quoted += "'\\''";
    else
      quoted += c;
  }
  return quoted + "'";
}

void remove_listings_of(const fs::path& root, const InstantiationName& name) {
  const fs::path folder = root / "listings" / name.folder;
  std::error_code error;
  if (!fs::is_directory(folder, error)) return;
  for (const fs::directory_entry& entry : fs::directory_iterator(folder))
    if (entry.path().filename().string().starts_with(name.id + ".")) fs::remove(entry.path());
}

fs::path ptxas_record(const fs::path& root, const InstantiationName& name) {
  return root / "ptxas" / name.folder / (name.id + ".log");
}

// ---- record ---------------------------------------------------------------------------------

struct RecordOptions {
  std::string source;
  std::string object;
  std::string ptxas_log;
  std::string out;
  std::string cuobjdump;
};

int record(const RecordOptions& options) {
  const InstantiationName name = instantiation_name(options.source);
  const fs::path root = options.out;
  write_text_file(ptxas_record(root, name), read_text_file(options.ptxas_log));
  remove_listings_of(root, name);
  if (options.cuobjdump.empty()) return 0;

  const std::string command =
      shell_quote(options.cuobjdump) + " -sass " + shell_quote(options.object);
  const std::string listing = capture(command);
  std::map<std::string, std::string> by_arch;
  for (const SassFunction& function :
       parse_sass_listing(listing, "cuobjdump -sass " + options.object))
    by_arch[function.arch] += write_sass_listing(function);
  if (by_arch.empty())
    throw ToolError("'" + command + "' printed no SASS function for " + options.source);
  for (const auto& [arch, text] : by_arch)
    write_text_file(
        root / "listings" / name.folder / (name.id + "." + arch + std::string(listing_extension())),
        text);
  return 0;
}

// ---- collect --------------------------------------------------------------------------------

struct CollectOptions {
  std::string out;
  std::string sources;                // file with one instantiation source per line
  std::vector<std::string> manifest;  // key=value
};

SassManifest manifest_from(const std::vector<std::string>& pairs) {
  SassManifest manifest;
  for (const std::string& pair : pairs) {
    const std::size_t equals = pair.find('=');
    if (equals == std::string::npos || equals == 0)
      throw ToolError("--manifest '" + pair + "' is not key=value");
    manifest[pair.substr(0, equals)] = pair.substr(equals + 1);
  }
  return manifest;
}

std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm parts{};
  gmtime_r(&now, &parts);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &parts);
  return text;
}

// Files under root/`sub` that `keep` does not list are left over from an earlier configuration.
void remove_stale(const fs::path& root, const std::string& sub, const std::set<fs::path>& keep) {
  std::error_code error;
  if (!fs::is_directory(root / sub, error)) return;
  std::vector<fs::path> stale;
  for (const fs::directory_entry& entry : fs::recursive_directory_iterator(root / sub))
    if (entry.is_regular_file() && !keep.contains(entry.path())) stale.push_back(entry.path());
  for (const fs::path& path : stale)
    fs::remove(path);
}

int collect(const CollectOptions& options) {
  const fs::path root = options.out;
  SassManifest manifest = manifest_from(options.manifest);
  manifest["created_utc"] = utc_now();
  const bool expect_listings = manifest["disassembler"] != "none";

  std::vector<fs::path> sources;
  {
    const std::string list = read_text_file(options.sources);
    std::size_t begin = 0;
    while (begin < list.size()) {
      const std::size_t end = std::min(list.find('\n', begin), list.size());
      if (end > begin) sources.emplace_back(list.substr(begin, end - begin));
      begin = end + 1;
    }
  }

  std::vector<SassKernelRecord> records;
  std::set<fs::path> keep;
  for (const fs::path& source : sources) {
    const auto [step, config] = read_instantiation_header(source);
    const InstantiationName name = instantiation_name(source);
    const fs::path log = ptxas_record(root, name);
    std::error_code error;
    if (!fs::is_regular_file(log, error))
      throw ToolError(log.string() + ": no ptxas record of " + source.string() +
                      " (it was compiled without flashscope's compiler launcher; rebuild it, e.g. "
                      "cmake --build <build> --clean-first)");
    keep.insert(log);
    const std::string prefix =
        "flashscope::" + std::string(configs::step_info(step).cpp_namespace) + "::";
    std::vector<PtxasResources> entries;
    std::string seen;
    for (PtxasResources& entry : parse_ptxas_log(read_text_file(log), log.string())) {
      const std::string readable = demangle(entry.function);
      seen += "\n  " + readable;
      // "void flashscope::v08::flash_forward_kernel<…>(…)": the name before the template
      // arguments says which namespace defines the function.
      if (readable.substr(0, readable.find('<')).find(prefix) != std::string::npos)
        entries.push_back(std::move(entry));
    }
    if (entries.empty())
      throw ToolError(log.string() + ": no entry function of step " + std::to_string(step) +
                      " (namespace " + prefix + ") among:" + (seen.empty() ? " none" : seen));

    std::map<std::string, std::vector<SassFunction>> listings;  // by arch
    std::map<std::string, std::string> listing_paths;
    for (const PtxasResources& entry : entries) {
      if (listings.contains(entry.arch) || !expect_listings) continue;
      const std::string relative = "listings/" + name.folder + "/" + name.id + "." + entry.arch +
                                   std::string(listing_extension());
      const fs::path path = root / relative;
      if (!fs::is_regular_file(path, error))
        throw ToolError(path.string() + ": no " + entry.arch + " listing of " + source.string() +
                        " although a disassembler was configured; rebuild it");
      keep.insert(path);
      listings[entry.arch] = parse_sass_listing(read_text_file(path), path.string());
      listing_paths[entry.arch] = relative;
    }
    for (const PtxasResources& entry : entries) {
      SassKernelRecord record;
      record.step = step;
      record.config = config;
      record.arch = entry.arch;
      record.function = entry.function;
      record.registers = entry.registers;
      record.barriers = entry.barriers;
      record.stack_frame_bytes = entry.stack_frame_bytes;
      record.spill_store_bytes = entry.spill_store_bytes;
      record.spill_load_bytes = entry.spill_load_bytes;
      if (expect_listings) {
        const std::vector<SassFunction>& functions = listings[entry.arch];
        const auto found =
            std::find_if(functions.begin(), functions.end(), [&](const SassFunction& f) {
              return f.name == entry.function && f.arch == entry.arch;
            });
        if (found == functions.end())
          throw ToolError(listing_paths[entry.arch] + ": ptxas compiled " + entry.function +
                          " for " + entry.arch + " but the listing lacks it");
        record.instructions = static_cast<int>(found->instructions.size());
        record.listing = listing_paths[entry.arch];
      }
      records.push_back(std::move(record));
    }
  }
  std::sort(records.begin(), records.end(),
            [](const SassKernelRecord& a, const SassKernelRecord& b) {
              return std::tie(a.step, a.config, a.arch, a.function) <
                     std::tie(b.step, b.config, b.arch, b.function);
            });
  remove_stale(root, "listings", keep);
  remove_stale(root, "ptxas", keep);
  write_text_file(root / "kernels.tsv", format_kernel_index(records));
  write_text_file(root / "manifest.txt", format_manifest(manifest));
  std::cout << "flashscope-sass: " << records.size() << " kernels recorded in " << root.string()
            << (expect_listings ? " with listings" : " (ptxas resources only: no disassembler)")
            << "\n";
  return 0;
}

// ---- export ---------------------------------------------------------------------------------

struct ExportOptions {
  std::string from;
  std::string to;
  bool progression_only = false;
  bool replace = false;
  std::vector<std::string> manifest;
};

int export_artifact(const ExportOptions& options) {
  const SassArtifact artifact = SassArtifact::load(options.from);
  const fs::path to = options.to;
  std::error_code error;
  // The destination is written only when it is new or empty, or (--replace) an earlier export.
  if (fs::exists(to, error) && !(fs::is_directory(to, error) && fs::is_empty(to, error))) {
    if (!fs::is_directory(to, error))
      throw ToolError("--to: '" + to.string() + "' is a file; name a folder to export into");
    if (!fs::exists(to / "manifest.txt", error))
      throw ToolError("--to: '" + to.string() +
                      "' holds files and is no SASS artifact (no manifest.txt); name a new or "
                      "empty folder");
    if (!options.replace)
      throw ToolError("--to: '" + to.string() +
                      "' holds an artifact already; give --replace to replace it, or name a new "
                      "folder");
    fs::remove_all(to);
  }
  std::vector<SassKernelRecord> kept;
  std::set<std::string> copied;
  for (const SassKernelRecord& record : artifact.kernels()) {
    if (options.progression_only && !is_progression_kernel(record.step, record.config, true))
      continue;
    kept.push_back(record);
    if (!record.listing.empty() && copied.insert(record.listing).second) {
      fs::create_directories((to / record.listing).parent_path());
      fs::copy_file(artifact.directory() / record.listing, to / record.listing,
                    fs::copy_options::overwrite_existing);
    }
  }
  SassManifest manifest = artifact.manifest();
  for (const auto& [key, value] : manifest_from(options.manifest))
    manifest[key] = value;
  if (options.progression_only)
    manifest["selection"] =
        "each step's progression config and picks, and its neighbours' picks built at the step";
  write_text_file(to / "kernels.tsv", format_kernel_index(kept));
  write_text_file(to / "manifest.txt", format_manifest(manifest));
  std::cout << "flashscope-sass: exported " << kept.size() << " of " << artifact.kernels().size()
            << " kernels (" << copied.size() << " listings) to " << to.string() << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "flashscope-sass: records the SASS and ptxas resources of every kernel a build "
      "compiles (run by the build; docs/explorer.md, \"SASS\")"};
  app.require_subcommand(1);

  RecordOptions record_options;
  CLI::App* record_command =
      app.add_subcommand("record", "Keep one compiled instantiation's ptxas log and listings");
  record_command->add_option("--source", record_options.source, "Instantiation source (.cu)")
      ->required();
  record_command->add_option("--object", record_options.object, "Its object file")->required();
  record_command
      ->add_option("--ptxas-log", record_options.ptxas_log,
                   "The compiler's stderr with --resource-usage output")
      ->required();
  record_command->add_option("--out", record_options.out, "Artifact folder")->required();
  record_command->add_option("--cuobjdump", record_options.cuobjdump,
                             "CUDA 13 cuobjdump; without it only the ptxas log is kept");

  CollectOptions collect_options;
  CLI::App* collect_command =
      app.add_subcommand("collect", "Write kernels.tsv and manifest.txt of the build's artifact");
  collect_command->add_option("--out", collect_options.out, "Artifact folder")->required();
  collect_command
      ->add_option("--sources", collect_options.sources,
                   "File listing the instantiation sources, one per line")
      ->required();
  collect_command->add_option("--manifest", collect_options.manifest,
                              "key=value lines of manifest.txt (repeatable)");

  struct {
    std::string base, with, to;
    bool replace = false;
    std::vector<std::string> manifest;
  } merge_options;
  ExportOptions export_options;
  CLI::App* export_command =
      app.add_subcommand("export", "Copy an artifact (e.g. build-sass/sass to results/<gpu>/sass)");
  export_command->add_option("--from", export_options.from, "Artifact folder to copy")->required();
  export_command
      ->add_option("--to", export_options.to,
                   "Destination folder: new or empty, or with --replace an earlier artifact")
      ->required();
  export_command->add_flag("--replace", export_options.replace,
                           "Replace the artifact (a folder with manifest.txt) already at --to");
  export_command->add_flag("--progression-only", export_options.progression_only,
                           "Keep each step's progression config and picks, and the previous and "
                           "next step's picks built at that step");
  export_command->add_option("--manifest", export_options.manifest,
                             "key=value to add to or replace in the manifest (repeatable)");

  CLI::App* merge_command = app.add_subcommand(
      "merge",
      "Join two artifacts: the steps of --with replace those of --base, every other step of "
      "--base is kept; the manifest says which source made which steps (part.N)");
  merge_command->add_option("--base", merge_options.base, "Artifact whose other steps are kept")
      ->required();
  merge_command
      ->add_option("--with", merge_options.with, "Artifact whose steps replace those of --base")
      ->required();
  merge_command
      ->add_option("--to", merge_options.to,
                   "Destination folder: new or empty, or with --replace an earlier artifact")
      ->required();
  merge_command->add_flag("--replace", merge_options.replace,
                          "Replace the artifact (a folder with manifest.txt) already at --to");
  merge_command->add_option("--manifest", merge_options.manifest,
                            "key=value to add to or replace in the manifest (repeatable)");

  CLI11_PARSE(app, argc, argv);
  try {
    if (record_command->parsed()) return record(record_options);
    if (collect_command->parsed()) return collect(collect_options);
    if (merge_command->parsed()) {
      SassManifest extra = manifest_from(merge_options.manifest);
      std::cout << "flashscope-sass: "
                << merge_artifacts(merge_options.base, merge_options.with, merge_options.to,
                                   merge_options.replace, extra)
                << "\n";
      return 0;
    }
    return export_artifact(export_options);
  } catch (const std::exception& error) {
    std::cerr << "flashscope-sass: " << error.what() << "\n";
    return 1;
  }
}
