// Every section a source or doc cites exists in docs/ (the check of docs/spec/README.md), and the
// check itself reports what it must on a fixture tree. Fixture texts are written with placeholders
// (expand) so that this file does not itself cite the missing sections it tests with.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <unistd.h>

#include "tests/docs/doc_citations.hpp"

using namespace flashscope::doc_check;
namespace fs = std::filesystem;

namespace {

const std::string kSourceDir = FLASHSCOPE_SOURCE_DIR;

// Fixture text with placeholders, so that this file does not itself cite what it tests with:
// "@S" is the section sign, "@md" the markdown extension, "@out" the path outside the repository.
std::string expand(std::string text) {
  const std::string outside = std::string("..") + "/shared/";
  const std::pair<std::string, std::string> kPlaceholders[] = {
      {"@S", "\xC2\xA7"}, {"@md", ".md"}, {"@out", outside}, {"@-", "\xE2\x80\x93"}};
  for (const auto& [placeholder, value] : kPlaceholders)
    for (std::size_t at = text.find(placeholder); at != std::string::npos;
         at = text.find(placeholder, at + value.size()))
      text.replace(at, placeholder.size(), value);
  return text;
}

void write_file(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << expand(text);
}

constexpr const char* kFixtureSource = R"(// spec @S1.2 and @S1.4
// spec @S4.8@-4.10, @S4.9
// hopper-track@md @S3, step 17; @S1.4
// hopper-track@md @S2/@S4
// (spec
// @S9.9)
// docs/profiling@md, "SM clock", "Ratio metrics"
// docs/profiling@md ("No such section")
// see docs/missing@md.
// @outdocs/kernel-progression@md
// kernel-progression@md @S7
const char* p = "docs/profiling@md";
// docs/profiling@md, "Several
// GPUs" spans two comment lines
// (docs/profiling@md, Several GPUs) unquoted, and docs/profiling@md (Nope) too
)";

constexpr const char* kFixturePage =
    R"(See [the track](spec/hopper-track@md#3-the-steps) and [gone](gone@md).
Bare @S1.2 cites the progression; docs/profiling@md "SM
clock" spans lines.

```cpp
auto f = [](int value) { return value; };  // code: neither this nor [x](also-gone@md) is a link
```
)";

struct FixtureTree {
  fs::path root;
  FixtureTree() {
    root = fs::temp_directory_path() / ("flashscope_doc_citations_" + std::to_string(::getpid()));
    fs::remove_all(root);
    write_file(root / "docs/spec/kernel-progression.md",
               "# Spec\n\n## 1. Scope\n\n### 1.2 Shapes\n\n### 1.4 Correctness\n\n## 4. Steps\n\n"
               "### 4.8 Step 8\n\n### 4.10 Step 10\n\n```\n## 5. Not a heading (code)\n```\n");
    write_file(root / "docs/spec/hopper-track.md",
               "# Hopper\n\n## 2. Config record\n\n## 3. The steps\n\nBare @S2 resolves here, @S5 "
               "does not.\n");
    write_file(root / "docs/spec/README.md", "# Index\n\nA bare @S1.4 cites the progression.\n");
    write_file(root / "docs/profiling.md",
               "# Profiling\n\n### SM clock\n\n* **Ratio metrics.** A label.\n\n"
               "### Several GPUs and hosts\n");
    write_file(root / "kernels/fixture.cpp", kFixtureSource);
    write_file(root / "docs/PAGE.md", kFixturePage);
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
      tree.root,
      {"kernels/fixture.cpp", "docs/PAGE.md", "docs/spec/hopper-track.md", "docs/spec/README.md"});
  const std::vector<std::string> expected = {
      expand("kernels/fixture.cpp:2: @S4.9: docs/spec/kernel-progression@md has no section 4.9"),
      expand("kernels/fixture.cpp:4: @S4: docs/spec/hopper-track@md has no section 4"),
      expand(
          "kernels/fixture.cpp:6: spec @S9.9: docs/spec/kernel-progression@md has no section 9.9"),
      expand("kernels/fixture.cpp:8: docs/profiling@md \"No such section\": docs/profiling@md has "
             "no heading or bold label \"No such section\""),
      expand("kernels/fixture.cpp:9: docs/missing@md: docs/missing@md does not exist"),
      expand("kernels/fixture.cpp:10: @outdocs/kernel-progression@md: points outside the "
             "repository (a clone has no @outdocs/kernel-progression@md); cite docs/ instead"),
      expand("kernels/fixture.cpp:11: kernel-progression@md @S7: docs/spec/kernel-progression@md "
             "has no section 7"),
      expand("kernels/fixture.cpp:15: docs/profiling@md, Nope: docs/profiling@md has no heading or "
             "bold label \"Nope\""),
      expand("docs/PAGE.md:1: ](gone@md): docs/gone@md does not exist"),
      expand("docs/spec/hopper-track.md:7: @S5: docs/spec/hopper-track@md has no section 5"),
  };
  CHECK(described(result) == expected);
  // fixture.cpp: lines 1 (two), 2 (two of three), 3 (two), 4 (one of two), 7 (two), 13, 15 (one
  // of two); the page's 1.2 and its split title; the track's 2; the index's 1.4.
  CHECK(result.resolved_sections == 15);
}

TEST_CASE("citation grammar: designators, lists, ranges and what is not a citation") {
  SUBCASE("a bare section sign cites the progression, or the spec document it is written in") {
    const auto in_code = find_citations(expand("// the @S1.4 rule\n"), "profiling/x.cpp");
    REQUIRE(in_code.size() == 1);
    CHECK(in_code[0].document == expand("docs/spec/kernel-progression@md"));
    CHECK(in_code[0].section == "1.4");
    const auto in_track = find_citations(expand("see @S3\n"), expand("docs/spec/hopper-track@md"));
    REQUIRE(in_track.size() == 1);
    CHECK(in_track[0].document == expand("docs/spec/hopper-track@md"));
    const auto in_index = find_citations(expand("see @S3\n"), expand("docs/spec/README@md"));
    REQUIRE(in_index.size() == 1);
    CHECK(in_index[0].document == expand("docs/spec/kernel-progression@md"));
  }
  SUBCASE("a file name binds the sections that follow it until other words intervene") {
    const auto found =
        find_citations(expand("(spec @S3.1, @S4.2; hopper-track@md @S3, steps 17@-18) and @S1.4\n"),
                       "kernels/x.cuh");
    REQUIRE(found.size() == 4);
    CHECK(found[0].document == expand("docs/spec/kernel-progression@md"));
    CHECK(found[1].document == expand("docs/spec/kernel-progression@md"));
    CHECK(found[2].document == expand("docs/spec/hopper-track@md"));
    CHECK(found[2].text == expand("hopper-track@md @S3"));
    CHECK(found[3].document == expand("docs/spec/kernel-progression@md"));
  }
  SUBCASE("ranges and alternatives cite both ends; a trailing period is punctuation") {
    const auto found = find_citations(expand("spec @S5.2/5.3 and @S7.\n"), "docs/versions/07.md");
    REQUIRE(found.size() == 3);
    CHECK(found[0].section == "5.2");
    CHECK(found[1].section == "5.3");
    CHECK(found[2].section == "7");
  }
  SUBCASE("a quote right after a path closes a string literal; escaped quotes are titles") {
    const auto literal = find_citations(expand("read(\"/docs/results@md\", \"x\");\n"), "a.cpp");
    REQUIRE(literal.size() == 1);
    CHECK(literal[0].kind == CitationKind::document);
    const auto escaped =
        find_citations(expand("\"(docs/explorer@md, \\\"SASS\\\")\"\n"), "explorer/a.cpp");
    REQUIRE(escaped.size() == 2);
    CHECK(escaped[1].kind == CitationKind::titled);
    CHECK(escaped[1].section == "SASS");
  }
  SUBCASE("placeholders, globs, lower-case words and a bare section sign are not citations") {
    CHECK(find_citations(expand("docs/versions/NN@md, docs/versions/*@md, @S x\n"), "README.md")
              .empty());
    const auto lower_case = find_citations(expand("(docs/profiling@md, columns in it)\n"), "a.cpp");
    REQUIRE(lower_case.size() == 1);
    CHECK(lower_case[0].kind == CitationKind::document);
  }
}

TEST_CASE("section numbers and titles of a markdown document") {
  const std::string markdown = expand(
      "# Title\n## 1. Scope\n### 1.2 Shapes\n### Step 17 @- wgmma\n```\n## 9. in code\n```\n"
      "**Shapes.** text\n* **Ratio metrics.** text\n## Device ceilings (`explorer peak`)\n");
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
