// The GUI's state without a window (explorer/gui/explorer_state.cpp needs no ImGui): saving a
// file writes through PATH.partial and, like every command line mode, refuses a partial file it
// did not make (docs/explorer.md, "Command-line conventions").
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "explorer/gui/explorer_state.hpp"

using namespace flashscope::explorer;

namespace {

std::string text_of(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace

TEST_CASE("Save refuses a partial file it did not make and leaves it as it was") {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / "flashscope_test_explorer_state";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  ExplorerState state;
  state.load({FLASHSCOPE_SOURCE_DIR "/results/h200/progression-4096.csv"});
  REQUIRE(state.problems().empty());
  REQUIRE(state.files().size() == 1);

  const std::filesystem::path saved = dir / "saved.csv";
  std::ofstream(dir / "saved.csv.partial") << "an interrupted sweep's rows\n";
  const std::string refused = state.save_file(0, saved.string());
  CHECK(refused.find("saved.csv.partial exists") != std::string::npos);
  CHECK(refused.find("move or delete it first") != std::string::npos);
  CHECK(text_of(dir / "saved.csv.partial") == "an interrupted sweep's rows\n");
  CHECK_FALSE(std::filesystem::exists(saved));

  std::filesystem::remove(dir / "saved.csv.partial");
  CHECK(state.save_file(0, saved.string()).empty());
  CHECK(std::filesystem::exists(saved));
  CHECK_FALSE(std::filesystem::exists(dir / "saved.csv.partial"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("a run measured without FA2 shows its percentages of cuDNN") {
  ExplorerState state;
  // Built without libtorch: cuDNN is its only reference (results/h200/MANIFEST.md).
  state.load({FLASHSCOPE_SOURCE_DIR "/results/h200/progression-4096-smem.csv"});
  REQUIRE(state.problems().empty());
  state.repair_selection();
  CHECK(state.selection.baseline == flashscope::Baseline::cudnn);
  // A run with both keeps FA2, the default.
  ExplorerState both;
  both.load({FLASHSCOPE_SOURCE_DIR "/results/h200/progression-4096.csv"});
  both.repair_selection();
  CHECK(both.selection.baseline == flashscope::Baseline::fa2);
}
