#include "explorer/sass/sass_artifact.hpp"

#include <algorithm>
#include <charconv>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

#ifdef FLASHSCOPE_HAVE_ZLIB
#include <zlib.h>

#include "kernels/common/step_descriptor.hpp"
#endif

namespace flashscope::sass {

namespace fs = std::filesystem;

namespace {

std::vector<std::string_view> split(std::string_view text, char separator) {
  std::vector<std::string_view> parts;
  std::size_t begin = 0;
  while (true) {
    const std::size_t end = text.find(separator, begin);
    parts.push_back(text.substr(begin, end == std::string_view::npos ? end : end - begin));
    if (end == std::string_view::npos) break;
    begin = end + 1;
  }
  return parts;
}

std::vector<std::string_view> lines_of(std::string_view text) {
  std::vector<std::string_view> lines = split(text, '\n');
  for (std::string_view& line : lines)
    if (line.ends_with('\r')) line.remove_suffix(1);
  if (!lines.empty() && lines.back().empty()) lines.pop_back();
  return lines;
}

bool ends_with_gz(const fs::path& path) {
  return path.extension() == ".gz";
}

}  // namespace

const std::vector<std::string>& kernel_index_columns() {
  static const std::vector<std::string> columns = {"step",
                                                   "config",
                                                   "arch",
                                                   "function",
                                                   "registers",
                                                   "barriers",
                                                   "stack_frame_bytes",
                                                   "spill_store_bytes",
                                                   "spill_load_bytes",
                                                   "instructions",
                                                   "listing"};
  return columns;
}

std::string format_kernel_index(const std::vector<SassKernelRecord>& records) {
  std::string out;
  for (std::size_t i = 0; i < kernel_index_columns().size(); ++i)
    out += (i ? "\t" : "") + kernel_index_columns()[i];
  out += '\n';
  for (const SassKernelRecord& record : records) {
    out += std::to_string(record.step) + '\t' + to_short_form(record.config) + '\t' + record.arch +
           '\t' + record.function + '\t' + std::to_string(record.registers) + '\t' +
           std::to_string(record.barriers) + '\t' + std::to_string(record.stack_frame_bytes) +
           '\t' + std::to_string(record.spill_store_bytes) + '\t' +
           std::to_string(record.spill_load_bytes) + '\t' +
           (record.instructions ? std::to_string(*record.instructions) : "") + '\t' +
           record.listing + '\n';
  }
  return out;
}

std::vector<SassKernelRecord> parse_kernel_index(std::string_view text,
                                                 const std::string& source_name) {
  const std::vector<std::string_view> lines = lines_of(text);
  const auto fail = [&](std::size_t line, const std::string& problem) -> void {
    throw SassArtifactError(source_name + ":" + std::to_string(line + 1) + ": " + problem);
  };
  if (lines.empty()) fail(0, "empty file (expected a header line)");
  const std::vector<std::string_view> header = split(lines[0], '\t');
  const std::vector<std::string>& columns = kernel_index_columns();
  if (header.size() != columns.size() || !std::equal(header.begin(), header.end(), columns.begin()))
    fail(0, "the header is not the kernels.tsv header (" + std::to_string(columns.size()) +
                " tab-separated columns starting with 'step')");
  std::vector<SassKernelRecord> records;
  for (std::size_t n = 1; n < lines.size(); ++n) {
    const std::vector<std::string_view> fields = split(lines[n], '\t');
    if (fields.size() != columns.size())
      fail(n, "the row has " + std::to_string(fields.size()) + " fields but the header has " +
                  std::to_string(columns.size()));
    const auto integer = [&](std::size_t column, bool optional) -> std::optional<int> {
      const std::string_view field = fields[column];
      if (field.empty()) {
        if (!optional) fail(n, "column '" + columns[column] + "' is empty but required");
        return std::nullopt;
      }
      int value = 0;
      const auto [end, error] = std::from_chars(field.data(), field.data() + field.size(), value);
      if (error != std::errc() || end != field.data() + field.size() || value < 0)
        fail(n, "column '" + columns[column] + "': '" + std::string(field) +
                    "' is not a non-negative integer");
      return value;
    };
    SassKernelRecord record;
    record.step = *integer(0, false);
    try {
      record.config = parse_short_form(fields[1]);
    } catch (const ConfigParseError& error) {
      fail(n, std::string("column 'config': ") + error.what());
    }
    record.arch = std::string(fields[2]);
    if (!record.arch.starts_with("sm_"))
      fail(n, "column 'arch': '" + record.arch + "' is not an architecture such as sm_80");
    record.function = std::string(fields[3]);
    if (record.function.empty()) fail(n, "column 'function' is empty but required");
    record.registers = *integer(4, false);
    record.barriers = *integer(5, false);
    record.stack_frame_bytes = *integer(6, false);
    record.spill_store_bytes = *integer(7, false);
    record.spill_load_bytes = *integer(8, false);
    record.instructions = integer(9, true);
    record.listing = std::string(fields[10]);
    if (record.instructions.has_value() != !record.listing.empty())
      fail(n, "columns 'instructions' and 'listing' must both be filled or both be empty");
    records.push_back(std::move(record));
  }
  return records;
}

std::string format_manifest(const SassManifest& manifest) {
  std::string out;
  for (const auto& [key, value] : manifest)
    out += key + ": " + value + "\n";
  return out;
}

SassManifest parse_manifest(std::string_view text, const std::string& source_name) {
  SassManifest manifest;
  std::size_t number = 0;
  for (std::string_view line : lines_of(text)) {
    ++number;
    if (line.empty() || line.starts_with('#')) continue;
    const std::size_t colon = line.find(": ");
    if (colon == std::string_view::npos || colon == 0)
      throw SassArtifactError(source_name + ":" + std::to_string(number) +
                              ": expected 'key: value', got '" + std::string(line) + "'");
    manifest[std::string(line.substr(0, colon))] = std::string(line.substr(colon + 2));
  }
  return manifest;
}

bool have_gzip() {
#ifdef FLASHSCOPE_HAVE_ZLIB
  return true;
#else
  return false;
#endif
}

std::string_view listing_extension() {
  return have_gzip() ? ".sass.gz" : ".sass";
}

std::string read_text_file(const fs::path& path) {
  if (ends_with_gz(path)) {
#ifdef FLASHSCOPE_HAVE_ZLIB
    gzFile file = gzopen(path.c_str(), "rb");
    if (file == nullptr) throw SassArtifactError(path.string() + ": cannot open the file");
    std::string text;
    char buffer[1 << 16];
    int count = 0;
    while ((count = gzread(file, buffer, sizeof buffer)) > 0)
      text.append(buffer, static_cast<std::size_t>(count));
    int error = Z_OK;
    const char* message = gzerror(file, &error);
    const std::string problem = count < 0 ? message : "";
    gzclose(file);
    if (count < 0)
      throw SassArtifactError(path.string() + ": not a readable gzip file: " + problem);
    return text;
#else
    throw SassArtifactError(path.string() +
                            ": this build has no zlib to read .gz listings (install zlib1g-dev "
                            "and reconfigure)");
#endif
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw SassArtifactError(path.string() + ": cannot open the file");
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

void write_text_file(const fs::path& path, std::string_view text) {
  if (path.has_parent_path()) fs::create_directories(path.parent_path());
  if (ends_with_gz(path)) {
#ifdef FLASHSCOPE_HAVE_ZLIB
    gzFile file = gzopen(path.c_str(), "wb9");
    if (file == nullptr) throw SassArtifactError(path.string() + ": cannot create the file");
    const int written =
        text.empty() ? 0 : gzwrite(file, text.data(), static_cast<unsigned>(text.size()));
    const int closed = gzclose(file);
    if (written != static_cast<int>(text.size()) || closed != Z_OK)
      throw SassArtifactError(path.string() + ": writing the gzip file failed");
    return;
#else
    throw SassArtifactError(path.string() + ": this build has no zlib to write .gz files");
#endif
  }
  std::ofstream out(path, std::ios::binary);
  out << text;
  out.close();
  if (!out) throw SassArtifactError(path.string() + ": writing the file failed");
}

// ---- SassArtifact ---------------------------------------------------------------------------

SassArtifact SassArtifact::load(const fs::path& directory) {
  SassArtifact artifact;
  artifact.directory_ = directory;
  const fs::path manifest = directory / "manifest.txt";
  const fs::path index = directory / "kernels.tsv";
  std::error_code error;
  if (!fs::is_regular_file(manifest, error))
    throw SassArtifactError(manifest.string() + ": no SASS artifact manifest here");
  artifact.manifest_ = parse_manifest(read_text_file(manifest), manifest.string());
  if (!fs::is_regular_file(index, error))
    throw SassArtifactError(index.string() + ": the artifact has a manifest but no kernel index");
  artifact.kernels_ = parse_kernel_index(read_text_file(index), index.string());
  // One entry kernel per instantiation: the `flash_*` function, else (an artifact of other
  // kernels) the longest listing, else the first row.
  std::map<std::tuple<int, KernelConfig, std::string>, SassKernelRecord*> entries;
  const auto rank = [](const SassKernelRecord& record) {
    return std::pair{is_entry_kernel_name(record.function) ? 0 : 1,
                     -record.instructions.value_or(0)};
  };
  for (SassKernelRecord& record : artifact.kernels_) {
    SassKernelRecord*& entry = entries[{record.step, record.config, record.arch}];
    if (entry == nullptr || rank(record) < rank(*entry)) entry = &record;
  }
  for (SassKernelRecord& record : artifact.kernels_)
    record.entry = entries.at({record.step, record.config, record.arch}) == &record;
  return artifact;
}

std::string SassArtifact::manifest_value(std::string_view key) const {
  const auto found = manifest_.find(key);
  return found == manifest_.end() ? std::string() : found->second;
}

bool SassArtifact::has_listings() const {
  return std::any_of(kernels_.begin(), kernels_.end(),
                     [](const SassKernelRecord& record) { return !record.listing.empty(); });
}

std::string SassArtifact::describe() const {
  std::string text =
      directory_.string() + ": " + std::to_string(kernels_.size()) + " kernel listings";
  if (!has_listings())
    text = directory_.string() + ": ptxas resources of " + std::to_string(kernels_.size()) +
           " kernels, no listings";
  // A merged artifact (flashscope-sass merge) names each build's steps, commit and host instead
  // of the newest build's alone: "steps 1-20 from commit ec87a84 on NVIDIA H100 ...".
  std::string parts;
  for (const auto& [key, value] : manifest_) {
    if (!key.starts_with("part.")) continue;
    std::map<std::string, std::string, std::less<>> fields;  // "commit" -> "ec87a84..."
    for (const std::string_view field : split(value, '|')) {
      std::string_view trimmed = field;
      while (trimmed.starts_with(' '))
        trimmed.remove_prefix(1);
      while (trimmed.ends_with(' '))
        trimmed.remove_suffix(1);
      const std::size_t space = trimmed.find(' ');
      if (space != std::string_view::npos)
        fields[std::string(trimmed.substr(0, space))] = std::string(trimmed.substr(space + 1));
    }
    parts += std::string(parts.empty() ? "" : "; ") + "steps " + fields["steps"] + " from commit " +
             fields["commit"].substr(0, 12) + " on " + fields["made_on"];
  }
  for (const char* key :
       {"commit", "nvcc", "disassembler", "architectures", "kernel_set", "made_on"}) {
    if (!parts.empty() && (key == std::string_view("commit") || key == std::string_view("made_on")))
      continue;
    const std::string value = manifest_value(key);
    if (!value.empty()) text += std::string(", ") + key + " " + value;
  }
  if (!parts.empty()) text += " (merged: " + parts + ")";
  return text;
}

std::vector<std::string> SassArtifact::architectures() const {
  std::set<std::string> arches;
  for (const SassKernelRecord& record : kernels_)
    arches.insert(record.arch);
  return {arches.begin(), arches.end()};
}

std::vector<int> SassArtifact::steps() const {
  std::set<int> steps;
  for (const SassKernelRecord& record : kernels_)
    steps.insert(record.step);
  return {steps.begin(), steps.end()};
}

const SassKernelRecord* SassArtifact::find(int step, const KernelConfig& config,
                                           std::string_view arch) const {
  for (const SassKernelRecord& record : kernels_)
    if (record.entry && record.step == step && record.config == config && record.arch == arch)
      return &record;
  return nullptr;
}

std::vector<const SassKernelRecord*> SassArtifact::kernels_of(int step,
                                                              std::string_view arch) const {
  std::vector<const SassKernelRecord*> found;
  for (const SassKernelRecord& record : kernels_)
    if (record.entry && record.step == step && record.arch == arch) found.push_back(&record);
  return found;
}

std::vector<const SassKernelRecord*> SassArtifact::functions_of(int step,
                                                                const KernelConfig& config,
                                                                std::string_view arch) const {
  std::vector<const SassKernelRecord*> found;
  for (const SassKernelRecord& record : kernels_)
    if (record.step == step && record.config == config && record.arch == arch)
      found.insert(record.entry ? found.begin() : found.end(), &record);
  return found;
}

bool is_entry_kernel_name(const std::string& function) {
  // "void flashscope::b01::flash_backward_kernel<...>(flashscope::BackwardArgs)"
  const std::string readable = demangle(function);
  std::string_view name(readable);
  name = name.substr(0, std::min(name.find('<'), name.find('(')));
  const std::size_t scope = name.rfind("::");
  if (scope != std::string_view::npos) name.remove_prefix(scope + 2);
  const std::size_t space = name.rfind(' ');  // a return type when no namespace was named
  if (space != std::string_view::npos) name.remove_prefix(space + 1);
  return name.starts_with("flash_");
}

SassFunction SassArtifact::load_function(const SassKernelRecord& record) const {
  const std::string name = "step " + step_name(record.step) + " " + to_short_form(record.config) +
                           " (" + record.arch + ")";
  if (record.listing.empty())
    throw SassArtifactError(describe() + ": no listing of " + name +
                            " (this artifact was made without a CUDA 13 disassembler)");
  const fs::path path = directory_ / record.listing;
  for (SassFunction& function : parse_sass_listing(read_text_file(path), path.string()))
    if (function.name == record.function && function.arch == record.arch) return function;
  throw SassArtifactError(path.string() + ": the listing has no function " + record.function +
                          " for " + record.arch + " (" + name + ")");
}

// ---- Choosing an artifact -------------------------------------------------------------------

namespace {

std::optional<SassArtifact> try_load(const fs::path& directory, std::string& problem) {
  std::error_code error;
  if (directory.empty() || !fs::is_regular_file(directory / "manifest.txt", error)) return {};
  try {
    return SassArtifact::load(directory);
  } catch (const SassArtifactError& failure) {
    problem = failure.what();
    return {};
  }
}

}  // namespace

SassSource find_sass_source(const fs::path& explicit_directory, const fs::path& build_directory,
                            const fs::path& results_directory) {
  SassSource source;
  if (!explicit_directory.empty()) {
    source.artifact = SassArtifact::load(explicit_directory);
    source.note = "SASS from " + source.artifact->describe();
    return source;
  }
  std::string problems;
  std::string build_problem;
  std::optional<SassArtifact> build = try_load(build_directory, build_problem);
  if (!build_problem.empty()) problems += "\n  " + build_problem;
  if (build && build->has_listings()) {
    source.artifact = std::move(build);
    source.note = "SASS of this build: " + source.artifact->describe();
    return source;
  }

  std::optional<SassArtifact> newest;
  std::error_code error;
  if (!results_directory.empty() && fs::is_directory(results_directory, error)) {
    std::vector<fs::path> candidates;
    for (const fs::directory_entry& entry : fs::directory_iterator(results_directory, error))
      if (entry.is_directory()) candidates.push_back(entry.path() / "sass");
    std::sort(candidates.begin(), candidates.end());
    for (const fs::path& candidate : candidates) {
      std::string problem;
      std::optional<SassArtifact> shipped = try_load(candidate, problem);
      if (!problem.empty()) problems += "\n  " + problem;
      if (shipped && shipped->has_listings() &&
          (!newest ||
           shipped->manifest_value("created_utc") > newest->manifest_value("created_utc")))
        newest = std::move(shipped);
    }
  }
  const std::string why_not_build =
      build ? "this build has no SASS listings (" + build->manifest_value("disassembler_note") + ")"
            : "this build has no SASS artifact at " + build_directory.string();
  if (newest) {
    source.artifact = std::move(newest);
    source.note = why_not_build + "; showing the shipped " + source.artifact->describe();
  } else if (build) {
    source.artifact = std::move(build);
    source.note = why_not_build + " and no shipped listings were found under " +
                  results_directory.string() + "/*/sass; showing ptxas resources only";
  } else {
    source.note =
        why_not_build + " and none was found under " + results_directory.string() + "/*/sass";
  }
  if (!problems.empty()) source.note += "\nunreadable artifacts:" + problems;
  return source;
}

fs::path build_sass_directory() {
#ifdef FLASHSCOPE_BUILD_SASS_DIR
  return FLASHSCOPE_BUILD_SASS_DIR;
#else
  return {};
#endif
}

fs::path shipped_results_directory_for_sass() {
#ifdef FLASHSCOPE_SHIPPED_RESULTS_DIR
  return FLASHSCOPE_SHIPPED_RESULTS_DIR;
#else
  return {};
#endif
}

}  // namespace flashscope::sass
