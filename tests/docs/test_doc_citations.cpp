// Every section a source or doc cites exists in docs/ (the check of docs/spec/README.md), and the
// check itself reports what it must on a fixture tree. Fixture texts are assembled from pieces so
// that this file does not cite the missing sections it tests with.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <unistd.h>

#include "tests/docs/doc_citations.hpp"

using namespace flashscope::doc_check;
namespace fs = std::filesystem;

namespace {

const std::string kSourceDir = FLASHSCOPE_SOURCE_DIR;
const std::string kS = "\xC2\xA7";  // the section sign
const std::string kMd = ".md";

void write_file(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << text;
}

struct FixtureTree {
  fs::path root;
  FixtureTree() {
    root = fs::temp_directory_path() / ("flashscope_doc_citations_" + std::to_string(::getpid()));
    fs::remove_all(root);
    write_file(root / ("docs/spec/kernel-progression" + kMd),
               "# Spec\n\n## 1. Scope\n\n### 1.2 Shapes\n\n### 1.4 Correctness\n\n## 4. Steps\n\n"
               "### 4.8 Step 8\n\n### 4.10 Step 10\n\n```\n## 5. Not a heading (code)\n```\n");
    write_file(root / ("docs/spec/hopper-track" + kMd),
               "# Hopper\n\n## 2. Config record\n\n## 3. The steps\n\nBare " + kS +
                   "2 resolves here, " + kS + "5 does not.\n");
    write_file(root / ("docs/profiling" + kMd),
               "# Profiling\n\n### SM clock\n\n* **Ratio metrics.** A label.\n\n"
               "### Several GPUs and hosts\n");
    write_file(root / "kernels/fixture.cpp",
               "// spec " + kS + "1.2 and " + kS +
                   "1.4\n"  // 1
                   "// spec " +
                   kS + "4.8\xE2\x80\x93" + "4.10, " + kS +
                   "4.9\n"  // 2
                   "// hopper-track" +
                   kMd + " " + kS + "3, step 17; " + kS +
                   "1.4\n"  // 3
                   "// hopper-track" +
                   kMd + " " + kS + "2/" + kS +
                   "4\n"         // 4
                   "// (spec\n"  // 5
                   "// " +
                   kS +
                   "9.9)\n"  // 6
                   "// docs/profiling" +
                   kMd +
                   ", \"SM clock\", \"Ratio metrics\"\n"  // 7
                   "// docs/profiling" +
                   kMd +
                   " (\"No such section\")\n"  // 8
                   "// see docs/missing" +
                   kMd +
                   ".\n"  // 9
                   "// ../"
                   "shared/docs/kernel-progression" +
                   kMd +
                   "\n"  // 10
                   "// kernel-progression" +
                   kMd + " " + kS +
                   "7\n"  // 11
                   "const char* p = \"docs/profiling" +
                   kMd +
                   "\";\n"  // 12
                   "// docs/profiling" +
                   kMd +
                   ", \"Several\n"                          // 13
                   "// GPUs\" spans two comment lines\n");  // 14
    write_file(root / ("docs/page" + kMd),
               "See [the track](spec/hopper-track" + kMd + "#3-the-steps) and [gone](gone" + kMd +
                   ").\n"  // 1
                   "Bare " +
                   kS + "1.2 cites the progression; docs/profiling" + kMd +
                   " \"SM\nclock\" spans lines.\n");  // 2-3
  }
  ~FixtureTree() { fs::remove_all(root); }
};

std::vector<std::string> described(const CheckResult& result) {
  std::vector<std::string> out;
  for (const BrokenCitation& broken : result.broken)
    out.push_back(describe(broken));
  return out;
}

}  // namespace

TEST_CASE("every section, docs page and link the repository cites exists") {
  const std::vector<std::string> sources = scanned_sources(kSourceDir);
  REQUIRE(sources.size() > 100);
  const CheckResult result = check_citations(kSourceDir, sources);
  for (const BrokenCitation& broken : result.broken)
    FAIL_CHECK(describe(broken));
  MESSAGE(result.resolved_sections
          << " section citations and " << result.resolved - result.resolved_sections
          << " document references resolved in " << sources.size() << " files");
  // The code cites the specification a few hundred times: a scanner that found next to nothing
  // would pass vacuously.
  CHECK(result.resolved_sections > 250);
}

TEST_CASE("a citation of a missing section, page, heading or outside path fails, with file:line") {
  const FixtureTree tree;
  const CheckResult result = check_citations(
      tree.root, {"kernels/fixture.cpp", "docs/page" + kMd, "docs/spec/hopper-track" + kMd});
  const std::vector<std::string> expected = {
      "kernels/fixture.cpp:2: " + kS + "4.9: docs/spec/kernel-progression" + kMd +
          " has no section 4.9",
      "kernels/fixture.cpp:4: " + kS + "4: docs/spec/hopper-track" + kMd + " has no section 4",
      "kernels/fixture.cpp:6: spec " + kS + "9.9: docs/spec/kernel-progression" + kMd +
          " has no section 9.9",
      "kernels/fixture.cpp:8: docs/profiling" + kMd + " \"No such section\": docs/profiling" + kMd +
          " has no heading or bold label \"No such section\"",
      "kernels/fixture.cpp:9: docs/missing" + kMd + ": docs/missing" + kMd + " does not exist",
      "kernels/fixture.cpp:10: ../"
      "shared/docs/kernel-progression" +
          kMd +
          ": points outside the repository (a clone has no ../"
          "shared/docs/kernel-progression" +
          kMd + "); cite docs/ instead",
      "kernels/fixture.cpp:11: kernel-progression" + kMd + " " + kS +
          "7: docs/spec/kernel-progression" + kMd + " has no section 7",
      "docs/page" + kMd + ":1: ](gone" + kMd + "): docs/gone" + kMd + " does not exist",
      "docs/spec/hopper-track" + kMd + ":7: " + kS + "5: docs/spec/hopper-track" + kMd +
          " has no section 5",
  };
  CHECK(described(result) == expected);
  // Lines 1, 2 (two), 3 (two), 4, 7 (two), 13; the page's 1.2 and its split title; the track's 2.
  CHECK(result.resolved_sections == 13);
}

TEST_CASE("citation grammar: designators, lists, ranges and what is not a citation") {
  SUBCASE("a bare section sign cites the progression, or the spec document it is written in") {
    const auto in_code = find_citations("// the " + kS + "1.4 rule\n", "profiling/x.cpp");
    REQUIRE(in_code.size() == 1);
    CHECK(in_code[0].document == "docs/spec/kernel-progression" + kMd);
    CHECK(in_code[0].section == "1.4");
    const auto in_track = find_citations("see " + kS + "3\n", "docs/spec/hopper-track" + kMd);
    REQUIRE(in_track.size() == 1);
    CHECK(in_track[0].document == "docs/spec/hopper-track" + kMd);
  }
  SUBCASE("a file name binds the sections that follow it until other words intervene") {
    const auto found =
        find_citations("(spec " + kS + "3.1, " + kS + "4.2; hopper-track" + kMd + " " + kS +
                           "3, steps 17" + "\xE2\x80\x93" + "18) and " + kS + "1.4\n",
                       "kernels/x.cuh");
    REQUIRE(found.size() == 4);
    CHECK(found[0].document == "docs/spec/kernel-progression" + kMd);
    CHECK(found[1].document == "docs/spec/kernel-progression" + kMd);
    CHECK(found[2].document == "docs/spec/hopper-track" + kMd);
    CHECK(found[2].text == "hopper-track" + kMd + " " + kS + "3");
    CHECK(found[3].document == "docs/spec/kernel-progression" + kMd);
  }
  SUBCASE("ranges and alternatives cite both ends; a trailing period is punctuation") {
    const auto found =
        find_citations("spec " + kS + "5.2/5.3 and " + kS + "7.\n", "docs/versions/07" + kMd);
    REQUIRE(found.size() == 3);
    CHECK(found[0].section == "5.2");
    CHECK(found[1].section == "5.3");
    CHECK(found[2].section == "7");
  }
  SUBCASE("a quote right after a path closes a string literal; escaped quotes are titles") {
    const auto literal = find_citations("read(\"/docs/results" + kMd + "\", \"x\");\n", "a.cpp");
    REQUIRE(literal.size() == 1);
    CHECK(literal[0].kind == CitationKind::document);
    const auto escaped =
        find_citations("\"(docs/explorer" + kMd + ", \\\"SASS\\\")\"\n", "explorer/a.cpp");
    REQUIRE(escaped.size() == 2);
    CHECK(escaped[1].kind == CitationKind::titled);
    CHECK(escaped[1].section == "SASS");
  }
  SUBCASE("placeholders, globs and a section sign without a number are not citations") {
    CHECK(find_citations("docs/versions/NN" + kMd + ", docs/versions/*" + kMd + ", " + kS + " x\n",
                         "README" + kMd)
              .empty());
  }
}

TEST_CASE("section numbers and titles of a markdown document") {
  const std::string markdown = "# Title\n## 1. Scope\n### 1.2 Shapes\n### Step 17 " + kS +
                               " wgmma\n```\n## 9. in code\n```\n**Shapes.** text\n"
                               "* **Ratio metrics.** text\n## Device ceilings (`explorer peak`)\n";
  CHECK(numbered_sections(markdown) == std::set<std::string>{"1", "1.2"});
  const std::vector<std::string> titles = section_titles(markdown);
  CHECK(names_section(titles, "Shapes"));
  CHECK(names_section(titles, "ratio metrics"));
  CHECK(names_section(titles, "Device ceilings"));
  CHECK(names_section(titles, "Step 17"));
  CHECK(names_section(titles, "Device"));  // the start of a title, up to a word boundary
  CHECK_FALSE(names_section(titles, "Dev"));
  CHECK_FALSE(names_section(titles, "in code"));
}
