#include "tests/docs/layer_rules.hpp"

#include <algorithm>
#include <fstream>
#include <regex>
#include <stdexcept>

namespace flashscope::layer_check {

namespace fs = std::filesystem;

namespace {

constexpr std::string_view kBegin = "<!-- layers:begin";
constexpr std::string_view kEnd = "<!-- layers:end -->";

std::string trimmed(std::string_view text) {
  const auto first = text.find_first_not_of(" \t\r");
  if (first == std::string_view::npos) return {};
  const auto last = text.find_last_not_of(" \t\r");
  return std::string(text.substr(first, last - first + 1));
}

// The cells of a markdown table row "| a | b | c |".
std::vector<std::string> cells_of(std::string_view line) {
  std::vector<std::string> cells;
  std::string row = trimmed(line);
  if (row.size() < 2 || row.front() != '|' || row.back() != '|') return cells;
  row = row.substr(1, row.size() - 2);
  std::size_t start = 0;
  for (std::size_t bar = row.find('|');; bar = row.find('|', start)) {
    cells.push_back(trimmed(std::string_view(row).substr(start, bar - start)));
    if (bar == std::string::npos) break;
    start = bar + 1;
  }
  return cells;
}

// The backquoted items of a cell: "`a/`, `b.hpp`" -> {a/, b.hpp}.
std::vector<std::string> quoted_items(const std::string& cell) {
  std::vector<std::string> items;
  for (std::size_t open = cell.find('`'); open != std::string::npos; open = cell.find('`', open)) {
    const std::size_t close = cell.find('`', open + 1);
    if (close == std::string::npos) break;
    items.push_back(cell.substr(open + 1, close - open - 1));
    open = close + 1;
  }
  return items;
}

// How specifically `pattern` matches `path` (its length; longer wins), or -1; `wildcard`
// receives the folder name '*' stood for.
int match_length(std::string_view pattern, std::string_view path, std::string& wildcard) {
  std::string bound;
  std::size_t p = 0, i = 0;
  while (p < pattern.size()) {
    if (pattern[p] == '*') {
      const std::size_t slash = path.find('/', i);
      if (slash == std::string_view::npos || slash == i) return -1;
      bound = std::string(path.substr(i, slash - i));
      i = slash;
      ++p;
      continue;
    }
    if (i >= path.size() || path[i] != pattern[p]) return -1;
    ++p;
    ++i;
  }
  // A folder pattern holds everything below it; a file pattern that file alone.
  if (pattern.back() != '/' && i != path.size()) return -1;
  wildcard = bound;
  return static_cast<int>(pattern.size());
}

bool is_source(const fs::path& path) {
  static const std::vector<std::string> kExtensions = {".h", ".hpp", ".cpp", ".cu", ".cuh", ".inl"};
  return std::find(kExtensions.begin(), kExtensions.end(), path.extension().string()) !=
         kExtensions.end();
}

std::string describe(const Placement& placement) {
  return placement.layer->name +
         (placement.wildcard.empty() ? std::string() : " '" + placement.wildcard + "'");
}

}  // namespace

std::vector<Layer> parse_layer_table(std::string_view page) {
  const std::size_t begin = page.find(kBegin);
  const std::size_t end = page.find(kEnd);
  if (begin == std::string_view::npos || end == std::string_view::npos || end < begin)
    throw std::runtime_error("the page has no layer table between \"" + std::string(kBegin) +
                             " ...\" and \"" + std::string(kEnd) + "\"");
  std::vector<Layer> layers;
  std::size_t line_start = page.find('\n', begin) + 1;
  while (line_start < end) {
    const std::size_t line_end = page.find('\n', line_start);
    const std::string_view line = page.substr(line_start, line_end - line_start);
    line_start = line_end + 1;
    const std::vector<std::string> cells = cells_of(line);
    if (cells.empty()) continue;
    if (cells.size() != 3)
      throw std::runtime_error("layer table row \"" + trimmed(line) + "\" has " +
                               std::to_string(cells.size()) +
                               " cells, not 3 (layer | paths | may include)");
    if (cells[0] == "layer" || cells[0].starts_with("---")) continue;  // header, separator
    Layer layer{cells[0], quoted_items(cells[1]), {}};
    if (layer.paths.empty())
      throw std::runtime_error("layer \"" + layer.name + "\" names no `path`");
    if (cells[2] != "—")
      for (std::string name : quoted_items(cells[2]))
        layer.may_include.push_back(name);
    if (cells[2] != "—" && layer.may_include.empty())
      throw std::runtime_error("layer \"" + layer.name +
                               "\": may-include cell is neither — nor `layer` names");
    layers.push_back(std::move(layer));
  }
  for (const Layer& layer : layers)
    for (const std::string& name : layer.may_include)
      if (std::none_of(layers.begin(), layers.end(),
                       [&](const Layer& other) { return other.name == name; }))
        throw std::runtime_error("layer \"" + layer.name + "\" may include \"" + name +
                                 "\", which is not a layer of the table");
  return layers;
}

Placement place(const std::vector<Layer>& layers, std::string_view path) {
  Placement best;
  int best_length = -1;
  for (const Layer& layer : layers)
    for (const std::string& pattern : layer.paths) {
      std::string wildcard;
      const int length = match_length(pattern, path, wildcard);
      if (length > best_length) {
        best_length = length;
        best = {&layer, wildcard};
      }
    }
  return best;
}

std::vector<std::string> layer_violations(const std::vector<Layer>& layers,
                                          const fs::path& repository,
                                          const std::vector<std::string>& roots,
                                          int* includes_checked) {
  static const std::regex kInclude(R"re(^\s*#\s*include\s*"([^"]+)")re");
  std::vector<std::string> violations;
  int checked = 0;
  std::vector<fs::path> files;
  for (const std::string& root : roots)
    for (const auto& entry : fs::recursive_directory_iterator(repository / root))
      if (entry.is_regular_file() && is_source(entry.path())) files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  for (const fs::path& file : files) {
    const std::string relative = fs::relative(file, repository).generic_string();
    const Placement from = place(layers, relative);
    if (from.layer == nullptr) {
      violations.push_back(relative + ": in no layer of the table");
      continue;
    }
    std::ifstream in(file);
    std::string line;
    for (int number = 1; std::getline(in, line); ++number) {
      std::smatch match;
      if (!std::regex_search(line, match, kInclude)) continue;
      const std::string target = match[1].str();
      fs::path resolved = repository / target;
      if (!fs::exists(resolved)) resolved = file.parent_path() / target;
      if (!fs::exists(resolved)) continue;  // system, third-party or generated
      const std::string target_relative =
          fs::relative(fs::weakly_canonical(resolved), fs::weakly_canonical(repository))
              .generic_string();
      const Placement to = place(layers, target_relative);
      ++checked;
      const std::string where =
          relative + ":" + std::to_string(number) + ": includes " + target_relative;
      if (to.layer == nullptr) {
        violations.push_back(where + ", which is in no layer of the table");
        continue;
      }
      if (!from.wildcard.empty() && !to.wildcard.empty() && from.wildcard != to.wildcard) {
        violations.push_back(where + " (" + describe(to) + "), another folder than its own (" +
                             describe(from) + ")");
        continue;
      }
      if (to.layer == from.layer) continue;
      const auto& allowed = from.layer->may_include;
      if (std::find(allowed.begin(), allowed.end(), to.layer->name) == allowed.end())
        violations.push_back(where + " (" + describe(to) + "), which " + describe(from) +
                             " may not include");
    }
  }
  if (includes_checked != nullptr) *includes_checked = checked;
  return violations;
}

}  // namespace flashscope::layer_check
