// The layer rules of docs/architecture.md ("Layers"), read from the page's table, and the check
// of every quoted #include of the source tree against them (tests/docs/test_layer_includes.cpp).
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace flashscope::layer_check {

// One row of the table: a layer's name, the paths it holds and the layers it may include.
// A path ending in '/' holds every file below that folder; one without, that file alone; '*'
// stands for one folder name ("kernels/versions/*/": each step's folder).
struct Layer {
  std::string name;
  std::vector<std::string> paths;
  std::vector<std::string> may_include;  // layer names
};

// The rows between the page's `<!-- layers:begin` and `<!-- layers:end -->` markers; each cell
// of the paths and may-include columns lists backquoted items ("—" for none). Throws
// std::runtime_error naming what is malformed: a missing marker, a row without three cells, a
// may-include name that is no layer's.
std::vector<Layer> parse_layer_table(std::string_view page);

// Where a repository-relative file belongs: the layer whose path matches it most specifically
// (the longest pattern), and what its '*' stood for ("v26"; empty without one).
struct Placement {
  const Layer* layer = nullptr;
  std::string wildcard;
};
Placement place(const std::vector<Layer>& layers, std::string_view path);

// Every include of a C++/CUDA file under `roots` (repository-relative folders of `repository`)
// that the table forbids, one line each: "FILE:LINE: includes TARGET (layer B), which layer A
// may not include". An include resolves against the repository root, then the including file's
// folder; one found in neither (a system, third-party or generated header) is not checked. A
// file in no layer is reported too. Within a layer every include is allowed, except that two
// files of a '*' pattern must agree on what it stands for: a step's code never includes
// another step's.
std::vector<std::string> layer_violations(const std::vector<Layer>& layers,
                                          const std::filesystem::path& repository,
                                          const std::vector<std::string>& roots,
                                          int* includes_checked = nullptr);

}  // namespace flashscope::layer_check
