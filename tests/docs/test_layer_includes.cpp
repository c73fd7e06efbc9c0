// docs/architecture.md's layer table matches the includes: every quoted #include of kernels/,
// configs/, profiling/ and explorer/ goes to its own layer or one the table lets it include, and
// a step's folder includes no other step's. The check itself is tried on a fixture tree first,
// so that a check that could not fail would fail here.
#include <doctest/doctest.h>

#include <filesystem>
#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

#include "tests/docs/layer_rules.hpp"

using namespace flashscope::layer_check;
namespace fs = std::filesystem;

namespace {

const std::string kSourceDir = FLASHSCOPE_SOURCE_DIR;

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

void write_file(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << text;
}

constexpr const char* kFixtureTable = R"(Some prose.

<!-- layers:begin (the test reads this table) -->
| layer | paths | may include |
| --- | --- | --- |
| base | `base/` | — |
| a step | `steps/*/` | `base`, `a step's descriptor` |
| a step's descriptor | `steps/*/step.hpp` | `base` |
| the list | `steps/list.hpp` | `a step's descriptor` |
| top | `top/` | `base`, `the list` |
<!-- layers:end -->
)";

// The files under `folders` of `root` that include `target`: a quoted #include, or one that a
// CMake script writes into a generated source (its quotes escaped). Relative paths, sorted.
std::vector<std::string> files_including(const fs::path& root,
                                         const std::vector<std::string>& folders,
                                         const std::string& target) {
  const std::string plain = "#include \"" + target + "\"";
  const std::string escaped = "#include \\\"" + target + "\\\"";
  std::vector<std::string> out;
  for (const std::string& folder : folders) {
    if (!fs::exists(root / folder)) continue;
    for (const auto& entry : fs::recursive_directory_iterator(root / folder)) {
      if (!entry.is_regular_file()) continue;
      const std::string extension = entry.path().extension().string();
      if (extension != ".cpp" && extension != ".hpp" && extension != ".cu" && extension != ".cuh" &&
          extension != ".h" && extension != ".cmake" && entry.path().filename() != "CMakeLists.txt")
        continue;
      const std::string text = read_text(entry.path());
      if (text.find(plain) != std::string::npos || text.find(escaped) != std::string::npos)
        out.push_back(fs::relative(entry.path(), root).generic_string());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

// The paths listed as "- `path`: ..." between the page's step-list-includers markers, sorted.
std::vector<std::string> documented_step_list_includers(const std::string& page) {
  const std::size_t begin = page.find("<!-- step-list-includers:begin");
  const std::size_t end = page.find("<!-- step-list-includers:end -->");
  REQUIRE_MESSAGE(begin != std::string::npos,
                  "docs/architecture.md has no step-list-includers list");
  REQUIRE(end > begin);
  std::vector<std::string> out;
  std::istringstream lines(page.substr(begin, end - begin));
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("- `", 0) != 0) continue;
    const std::size_t close = line.find('`', 3);
    if (close != std::string::npos) out.push_back(line.substr(3, close - 3));
  }
  std::sort(out.begin(), out.end());
  return out;
}

const std::vector<std::string> kSourceFolders = {"kernels", "configs", "profiling", "explorer",
                                                 "tests",   "scripts", "python"};

}  // namespace

TEST_CASE("only the files docs/architecture.md lists include the step list") {
  // The search itself, on a fixture tree: a plain include, a CMake-written one, a mention in a
  // comment (not an include) and another header. (The includes are split in two literals so
  // that this file is not one of the tree's includers.)
  const fs::path root =
      fs::temp_directory_path() / ("flashscope_test_step_list_" + std::to_string(::getpid()));
  fs::remove_all(root);
  write_file(root / "configs/a.cpp",
             "#include \"kernels/versions/"
             "steps.hpp\"\n");
  write_file(root / "explorer/embed.cmake",
             "set(code \"#include \\\"kernels/versions/"
             "steps.hpp\\\"\")\n");
  write_file(root / "explorer/b.cpp", "// reads kernels/versions/steps.hpp through configs\n");
  write_file(root / "tests/c.hpp", "#include \"kernels/versions/v08/step.hpp\"\n");
  CHECK(files_including(root, {"configs", "explorer", "tests"}, "kernels/versions/steps.hpp") ==
        std::vector<std::string>{"configs/a.cpp", "explorer/embed.cmake"});
  fs::remove_all(root);

  const std::vector<std::string> documented =
      documented_step_list_includers(read_text(fs::path(kSourceDir) / "docs/architecture.md"));
  const std::vector<std::string> found =
      files_including(kSourceDir, kSourceFolders, "kernels/versions/steps.hpp");
  std::string listed;
  for (const std::string& path : found)
    listed += "  " + path + "\n";
  INFO("files that include kernels/versions/steps.hpp:\n" << listed);
  CHECK(!documented.empty());
  CHECK(found == documented);
}

TEST_CASE("the layer check reads its table and finds what breaks it, on a fixture tree") {
  const std::vector<Layer> layers = parse_layer_table(kFixtureTable);
  REQUIRE(layers.size() == 5);
  CHECK(layers[1].name == "a step");
  CHECK(layers[1].may_include == std::vector<std::string>{"base", "a step's descriptor"});
  CHECK(layers[0].may_include.empty());
  CHECK(place(layers, "steps/v2/kernel.cuh").layer == &layers[1]);
  CHECK(place(layers, "steps/v2/kernel.cuh").wildcard == "v2");
  CHECK(place(layers, "steps/v2/step.hpp").layer == &layers[2]);  // the longer pattern wins
  CHECK(place(layers, "steps/list.hpp").layer == &layers[3]);
  CHECK(place(layers, "elsewhere/x.hpp").layer == nullptr);

  const fs::path root =
      fs::temp_directory_path() / ("flashscope_test_layers_" + std::to_string(::getpid()));
  fs::remove_all(root);
  write_file(root / "base/a.hpp", "#pragma once\n#include <vector>\n");
  write_file(root / "base/b.hpp", "#include \"base/a.hpp\"\n#include \"top/t.hpp\"\n");
  write_file(root / "steps/v1/kernel.cuh",
             "#include \"base/a.hpp\"\n#include \"steps/v1/step.hpp\"\n#include \"local.cuh\"\n");
  write_file(root / "steps/v1/local.cuh", "#include \"generated_elsewhere.h\"\n");
  write_file(root / "steps/v1/step.hpp", "#include \"base/a.hpp\"\n");
  write_file(root / "steps/v2/kernel.cuh", "#include \"steps/v1/local.cuh\"\n");
  write_file(root / "steps/v2/step.hpp", "#include \"steps/v1/step.hpp\"\n");
  write_file(root / "steps/list.hpp",
             "#include \"steps/v1/step.hpp\"\n#include \"steps/v2/step.hpp\"\n");
  write_file(root / "top/t.hpp", "#include \"steps/list.hpp\"\n#include \"steps/v1/kernel.cuh\"\n");
  write_file(root / "top/stray/x.cpp", "#include \"base/a.hpp\"\n");
  write_file(root / "loose/y.cpp", "int y;\n");
  int checked = 0;
  const std::vector<std::string> found =
      layer_violations(layers, root, {"base", "steps", "top", "loose"}, &checked);
  fs::remove_all(root);
  std::string all;
  for (const std::string& line : found)
    all += line + "\n";
  INFO(all);
  CHECK(checked == 13);
  REQUIRE(found.size() == 5);
  CHECK(found[0] == "base/b.hpp:2: includes top/t.hpp (top), which base may not include");
  CHECK(found[1] == "loose/y.cpp: in no layer of the table");
  CHECK(found[2] ==
        "steps/v2/kernel.cuh:1: includes steps/v1/local.cuh (a step 'v1'), another "
        "folder than its own (a step 'v2')");
  CHECK(found[3] ==
        "steps/v2/step.hpp:1: includes steps/v1/step.hpp (a step's descriptor 'v1'), "
        "another folder than its own (a step's descriptor 'v2')");
  CHECK(found[4] ==
        "top/t.hpp:2: includes steps/v1/kernel.cuh (a step 'v1'), which top may not "
        "include");

  CHECK_THROWS_WITH(parse_layer_table("no table"),
                    doctest::Contains("the page has no layer table"));
  CHECK_THROWS_WITH(parse_layer_table("<!-- layers:begin -->\n| a | `a/` | `b` |\n"
                                      "<!-- layers:end -->\n"),
                    "layer \"a\" may include \"b\", which is not a layer of the table");
  CHECK_THROWS_WITH(parse_layer_table("<!-- layers:begin -->\n| a | `a/` |\n"
                                      "<!-- layers:end -->\n"),
                    doctest::Contains("has 2 cells, not 3"));
}

TEST_CASE("every include of the source tree keeps docs/architecture.md's layer rules") {
  const std::vector<Layer> layers =
      parse_layer_table(read_text(fs::path(kSourceDir) / "docs/architecture.md"));
  int checked = 0;
  const std::vector<std::string> found = layer_violations(
      layers, kSourceDir, {"kernels", "configs", "profiling", "explorer"}, &checked);
  for (const std::string& line : found)
    ADD_FAIL_CHECK_AT(__FILE__, __LINE__, line);
  // The tree has hundreds of project includes; far fewer means the walk or the parse broke.
  CHECK(checked > 500);
  const std::string summary = std::to_string(checked) + " includes checked against " +
                              std::to_string(layers.size()) + " layers";
  MESSAGE(summary);
}
