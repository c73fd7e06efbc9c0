// Finds the section citations in the repository's sources and docs and resolves each against the
// documents in docs/, so that a comment citing "spec §4.13" or "docs/profiling.md, \"SM clock\""
// always names a section a reader can open (docs/spec/README.md lists the forms).
//
// Citation forms (the grammar, decided from what the tree uses):
//   numbered   "§4.13", "spec §4.13", "kernel-progression.md §5.1", "hopper-track.md §3",
//              lists "spec §4.8, §4.15; hopper-track.md §3", ranges "§5.2–5.3", "§4.8–4.10",
//              alternatives "§5.2/5.3" or "§5.2/§5.3". "spec" and no file name mean
//              docs/spec/kernel-progression.md, except inside a numbered document docs/spec/NAME.md
//              (not the folder's README), where a bare "§N" means that document itself;
//              "NAME.md §N" means docs/spec/NAME.md.
//   titled     docs/NAME.md followed by one or more quoted titles: `docs/profiling.md, "SM clock"`,
//              `docs/results.md "Auto-tuning"`, `(docs/explorer.md, "SASS", "Roofline")`,
//              `docs/profiling.md ("Several GPUs and hosts")`. A title names a heading of that
//              document or a bold run-in label (`**Ratio metrics.**`), in full or as its start.
//   documents  every docs/PATH.md mentioned exists (placeholders such as docs/versions/NN.md and
//              globs are skipped); every relative markdown link target `](PATH.md)` in a markdown
//              file exists; nothing points outside the repository (the seed notes under ../shared
//              are not part of a clone).
#pragma once

#include <cstddef>
#include <filesystem>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace flashscope::doc_check {

enum class CitationKind {
  numbered,  // "§4.13" of a specification document
  titled,    // "SM clock" of a docs page
  document,  // a docs/*.md path or a markdown link target, no section
  outside,   // a path that leaves the repository
};

struct Citation {
  CitationKind kind = CitationKind::numbered;
  std::string source;  // the citing file, relative to the root
  int line = 0;        // 1-based line of the citation's start
  std::string text;    // as written, e.g. "spec §4.13" or "docs/profiling.md, \"SM clock\""
  std::string
      document;         // the cited document relative to the root, e.g. "docs/spec/hopper-track.md"
  std::string section;  // "4.13", "SM clock"; empty for a whole document
};

struct BrokenCitation {
  Citation citation;
  std::string reason;  // e.g. "docs/spec/kernel-progression.md has no section 9.9"
};

// "source:line: text: reason".
std::string describe(const BrokenCitation& broken);

// The section numbers of a markdown document's headings: "## 1. Scope" gives "1",
// "### 4.13 Step 13 …" gives "4.13".
std::set<std::string> numbered_sections(std::string_view markdown);

// The normalised titles (lower case, markup and trailing punctuation removed, spaces collapsed)
// of a markdown document's headings and of its bold run-in paragraph labels.
std::vector<std::string> section_titles(std::string_view markdown);

// Whether `title` (as cited) names one of `titles`: equal after normalisation, or the start of
// one followed by a non-alphanumeric character ("Several GPUs" names "Several GPUs and hosts").
bool names_section(const std::vector<std::string>& titles, std::string_view title);

// Every citation in `text`, the contents of the file at `source` (relative to the root; it decides
// what a bare "§N" refers to and how comment markers continue a citation onto the next line).
std::vector<Citation> find_citations(std::string_view text, std::string_view source);

// The files the check reads, relative to `root` and sorted: every text source (C++, CUDA, CMake,
// shell, Python, markdown, text) under `root`, except in hidden folders and build trees (folders
// holding a CMakeCache.txt); under results/, only the markdown manifests.
std::vector<std::string> scanned_sources(const std::filesystem::path& root);

struct CheckResult {
  std::vector<BrokenCitation> broken;
  std::size_t resolved = 0;           // citations of every kind that resolved
  std::size_t resolved_sections = 0;  // of which numbered or titled sections
};

// Resolves every citation of `sources` (paths relative to `root`) against the files under `root`.
CheckResult check_citations(const std::filesystem::path& root,
                            const std::vector<std::string>& sources);

}  // namespace flashscope::doc_check
