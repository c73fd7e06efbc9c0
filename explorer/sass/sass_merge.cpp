#include "explorer/sass/sass_merge.hpp"

#include <algorithm>
#include <cctype>
#include <map>
#include <tuple>

#include "configs/config_sets.hpp"

namespace flashscope::sass {

namespace fs = std::filesystem;

namespace {

// The function's name without its template arguments and parameters: "void
// flashscope::b01::flash_backward_kernel" for every config of that kernel.
std::string function_family(const std::string& function) {
  const std::string readable = demangle(function);
  return readable.substr(0, std::min(readable.find('<'), readable.find('(')));
}

std::string part_line(const std::set<int>& steps, const SassManifest& manifest) {
  std::string text = "steps " + step_list_text(steps);
  for (const char* key : {"commit", "nvcc", "disassembler", "made_on", "created_utc"}) {
    const auto found = manifest.find(key);
    text += std::string(" | ") + key + " " + (found == manifest.end() ? "-" : found->second);
  }
  return text;
}

}  // namespace

std::string step_list_text(const std::set<int>& steps) {
  std::string text;
  for (auto it = steps.begin(); it != steps.end();) {
    const int first = *it;
    int last = first;
    while (++it != steps.end() && *it == last + 1)
      last = *it;
    text += (text.empty() ? "" : ",") + std::to_string(first);
    if (last > first + 1) text += "-" + std::to_string(last);
    if (last == first + 1) text += "," + std::to_string(last);
  }
  return text;
}

std::vector<SassPart> artifact_parts(const SassManifest& manifest) {
  std::map<int, SassPart> parts;
  for (const auto& [key, value] : manifest) {
    if (!key.starts_with("part.")) continue;
    const std::size_t bar = value.find(" | ");
    int number = 0;
    try {
      number = std::stoi(key.substr(5));
      if (!value.starts_with("steps ") || bar == std::string::npos) throw std::invalid_argument("");
      const std::vector<int> steps = configs::parse_step_list(value.substr(6, bar - 6));
      parts[number] = SassPart{{steps.begin(), steps.end()}, value};
    } catch (const std::exception&) {
      throw SassArtifactError("manifest " + key + ": '" + value +
                              "' is not 'steps LIST | commit ... | ...'");
    }
  }
  std::vector<SassPart> out;
  for (auto& [number, part] : parts)
    out.push_back(std::move(part));
  return out;
}

namespace {

// `operands` with every hex immediate ("0x170", "c[0x0][0x210]"'s offsets) replaced by "#".
std::string without_immediates(const std::string& operands) {
  std::string out;
  for (std::size_t i = 0; i < operands.size();) {
    if (operands.compare(i, 2, "0x") == 0 &&
        (i == 0 || !std::isalnum(static_cast<unsigned char>(operands[i - 1])))) {
      i += 2;
      while (i < operands.size() && std::isxdigit(static_cast<unsigned char>(operands[i])))
        ++i;
      out += '#';
    } else {
      out += operands[i++];
    }
  }
  return out;
}

}  // namespace

bool same_but_immediates(const SassFunction& a, const SassFunction& b) {
  if (a.instructions.size() != b.instructions.size()) return false;
  for (std::size_t i = 0; i < a.instructions.size(); ++i) {
    const SassInstruction& x = a.instructions[i];
    const SassInstruction& y = b.instructions[i];
    if (x.predicate != y.predicate || x.mnemonic != y.mnemonic ||
        without_immediates(x.operands) != without_immediates(y.operands) ||
        x.branch_target != y.branch_target)
      return false;
  }
  return true;
}

bool same_instructions(const SassFunction& a, const SassFunction& b) {
  if (a.instructions.size() != b.instructions.size()) return false;
  for (std::size_t i = 0; i < a.instructions.size(); ++i) {
    const SassInstruction& x = a.instructions[i];
    const SassInstruction& y = b.instructions[i];
    if (x.predicate != y.predicate || x.mnemonic != y.mnemonic || x.operands != y.operands ||
        x.branch_target != y.branch_target)
      return false;
  }
  return true;
}

std::string merge_artifacts(const fs::path& base_dir, const fs::path& with_dir, const fs::path& to,
                            bool replace, const SassManifest& extra) {
  const SassArtifact base = SassArtifact::load(base_dir);
  const SassArtifact with = SassArtifact::load(with_dir);
  std::error_code error;
  if (fs::exists(to, error) && !(fs::is_directory(to, error) && fs::is_empty(to, error))) {
    if (!fs::exists(to / "manifest.txt", error) || !replace)
      throw SassArtifactError("--to: '" + to.string() +
                              "' is not empty; name a new folder (or, with --replace, an earlier "
                              "artifact)");
    if (fs::equivalent(to, base_dir, error) || fs::equivalent(to, with_dir, error))
      throw SassArtifactError("--to: '" + to.string() +
                              "' is one of the artifacts merged; name another folder");
    fs::remove_all(to);
  }
  const std::vector<int> with_list = with.steps();
  const std::set<int> with_steps(with_list.begin(), with_list.end());

  std::vector<SassKernelRecord> kept;
  std::set<int> base_steps;
  std::map<std::string, const SassArtifact*> listings;  // relative path -> its source
  for (const SassKernelRecord& record : base.kernels()) {
    if (with_steps.contains(record.step)) continue;
    base_steps.insert(record.step);
    kept.push_back(record);
    if (!record.listing.empty()) listings.emplace(record.listing, &base);
  }
  for (const SassKernelRecord& record : with.kernels()) {
    kept.push_back(record);
    if (!record.listing.empty()) listings[record.listing] = &with;
  }
  std::sort(kept.begin(), kept.end(), [](const SassKernelRecord& a, const SassKernelRecord& b) {
    return std::tie(a.step, a.config, a.arch, a.function) <
           std::tie(b.step, b.config, b.arch, b.function);
  });

  // Overlap: each step both have, kernel by kernel (same config, arch and function family).
  std::string overlap;
  for (const int step : with_steps) {
    int same = 0;
    int same_but_offsets = 0;
    int compared = 0;
    std::string differing;
    for (const SassKernelRecord& record : with.kernels()) {
      if (record.step != step || record.listing.empty()) continue;
      const std::string family = function_family(record.function);
      for (const SassKernelRecord* other : base.functions_of(step, record.config, record.arch)) {
        if (other->listing.empty() || function_family(other->function) != family) continue;
        ++compared;
        const SassFunction before = base.load_function(*other);
        const SassFunction after = with.load_function(record);
        if (same_instructions(before, after))
          ++same;
        else if (same_but_immediates(before, after))
          ++same_but_offsets;
        else
          differing +=
              (differing.empty() ? "" : ", ") + to_short_form(record.config) + " " + record.arch;
        break;
      }
    }
    if (compared == 0) continue;
    overlap += (overlap.empty() ? "" : "; ") + std::string("step ") + std::to_string(step) + ": " +
               std::to_string(same) + " of " + std::to_string(compared) +
               " kernels instruction-identical in both" +
               (same_but_offsets == 0 ? ""
                                      : ", " + std::to_string(same_but_offsets) +
                                            " identical but for immediate operands") +
               (differing.empty() ? "" : " (differ in instructions: " + differing + ")");
  }

  for (const auto& [relative, source] : listings) {
    fs::create_directories((to / relative).parent_path());
    fs::copy_file(source->directory() / relative, to / relative);
  }
  // The raw cuobjdump output of either side whose object a kept listing comes from.
  for (const SassArtifact* side : {&base, &with}) {
    if (!fs::is_directory(side->directory() / "raw", error)) continue;
    for (const fs::directory_entry& entry : fs::directory_iterator(side->directory() / "raw")) {
      const std::string file = entry.path().filename().string();
      const std::string id = file.substr(0, file.find('.'));
      const bool used = std::any_of(listings.begin(), listings.end(), [&](const auto& listing) {
        return listing.second == side &&
               fs::path(listing.first).filename().string().starts_with(id + ".");
      });
      if (!used) continue;
      fs::create_directories(to / "raw");
      fs::copy_file(entry.path(), to / "raw" / file, fs::copy_options::overwrite_existing);
    }
  }

  SassManifest manifest = with.manifest();
  std::erase_if(manifest, [](const auto& item) {
    return item.first.starts_with("part.") || item.first == "overlap_check";
  });
  std::vector<std::string> parts;
  const std::vector<SassPart> base_parts = artifact_parts(base.manifest());
  for (const SassPart& part : base_parts) {
    std::set<int> steps;
    for (const int step : part.steps)
      if (base_steps.contains(step)) steps.insert(step);
    if (!steps.empty())
      parts.push_back("steps " + step_list_text(steps) + part.text.substr(part.text.find(" | ")));
  }
  if (base_parts.empty() && !base_steps.empty())
    parts.push_back(part_line(base_steps, base.manifest()));
  const std::vector<SassPart> with_parts = artifact_parts(with.manifest());
  if (with_parts.empty()) {
    parts.push_back(part_line(with_steps, with.manifest()));
  } else {
    for (const SassPart& part : with_parts)
      parts.push_back(part.text);
  }
  for (std::size_t i = 0; i < parts.size(); ++i)
    manifest["part." + std::to_string(i + 1)] = parts[i];
  std::set<int> all_steps = base_steps;
  all_steps.insert(with_steps.begin(), with_steps.end());
  manifest["steps"] = step_list_text(all_steps);
  if (!overlap.empty()) manifest["overlap_check"] = overlap;
  for (const auto& [key, value] : extra)
    manifest[key] = value;
  write_text_file(to / "kernels.tsv", format_kernel_index(kept));
  write_text_file(to / "manifest.txt", format_manifest(manifest));
  return "merged " + std::to_string(kept.size()) + " kernels (" + std::to_string(listings.size()) +
         " listings) into " + to.string() + ": steps " + step_list_text(base_steps) + " of " +
         base_dir.string() + ", steps " + step_list_text(with_steps) + " of " + with_dir.string() +
         (overlap.empty() ? "" : "; " + overlap);
}

}  // namespace flashscope::sass
