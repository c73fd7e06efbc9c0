#include "tests/docs/doc_citations.hpp"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>

namespace flashscope::doc_check {

namespace {

namespace fs = std::filesystem;

constexpr std::string_view kSectionSign = "\xC2\xA7";  // "§" in UTF-8
constexpr std::string_view kEnDash = "\xE2\x80\x93";   // "–"
constexpr std::string_view kSpecDirectory = "docs/spec/";
constexpr std::string_view kDefaultSpec = "docs/spec/kernel-progression.md";
// Split so that this file does not itself cite the path it reports.
constexpr std::string_view kOutside =
    "../"
    "shared/";

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}
bool is_alnum(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0;
}
bool is_path_char(char c) {
  return is_alnum(c) || c == '_' || c == '-' || c == '.' || c == '/' || c == '*';
}
char lower(char c) {
  return static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
}
bool is_markdown(std::string_view path) {
  return path.ends_with(".md");
}

// Maps byte offsets to 1-based line numbers.
class LineIndex {
 public:
  explicit LineIndex(std::string_view text) {
    starts_.push_back(0);
    for (std::size_t i = 0; i < text.size(); ++i)
      if (text[i] == '\n') starts_.push_back(i + 1);
  }
  int line_of(std::size_t offset) const {
    return static_cast<int>(std::upper_bound(starts_.begin(), starts_.end(), offset) -
                            starts_.begin());
  }

 private:
  std::vector<std::size_t> starts_;
};

// Skips spaces and tabs from `pos`, and at most one line break together with the comment marker
// that continues a comment on the next line ("//", "#", "*"; markdown has none).
std::size_t skip_blank(std::string_view text, std::size_t pos, bool markdown) {
  auto spaces = [&](std::size_t p) {
    while (p < text.size() && (text[p] == ' ' || text[p] == '\t' || text[p] == '\r'))
      ++p;
    return p;
  };
  pos = spaces(pos);
  if (pos < text.size() && text[pos] == '\n') {
    pos = spaces(pos + 1);
    if (!markdown) {
      if (text.substr(pos).starts_with("//"))
        pos += 2;
      else if (pos < text.size() && (text[pos] == '#' || text[pos] == '*'))
        pos += 1;
      pos = spaces(pos);
    }
  }
  return pos;
}

// The counterpart of skip_blank going backwards from `pos` (exclusive end).
std::size_t skip_blank_backward(std::string_view text, std::size_t pos, bool markdown) {
  auto spaces = [&](std::size_t p) {
    while (p > 0 && (text[p - 1] == ' ' || text[p - 1] == '\t' || text[p - 1] == '\r'))
      --p;
    return p;
  };
  pos = spaces(pos);
  std::size_t line_start = pos;
  while (line_start > 0 && text[line_start - 1] != '\n')
    --line_start;
  if (line_start == 0) return pos;
  std::string_view prefix = text.substr(line_start, pos - line_start);
  while (!prefix.empty() && (prefix.front() == ' ' || prefix.front() == '\t'))
    prefix.remove_prefix(1);
  const bool only_marker =
      prefix.empty() || (!markdown && (prefix == "//" || prefix == "#" || prefix == "*"));
  if (!only_marker) return pos;
  return spaces(line_start - 1);
}

// A section number "4.13" starting at `pos`; returns its end, or `pos` when there is none.
std::size_t number_end(std::string_view text, std::size_t pos) {
  std::size_t end = pos;
  while (end < text.size() && is_digit(text[end]))
    ++end;
  if (end == pos) return pos;
  while (end + 1 < text.size() && text[end] == '.' && is_digit(text[end + 1])) {
    ++end;
    while (end < text.size() && is_digit(text[end]))
      ++end;
  }
  return end;
}

// The document a file name or "spec" ending at `end` designates, and where the designator starts.
struct Designator {
  std::string document;  // empty: none found
  std::size_t start = 0;
};

Designator designator_before(std::string_view text, std::size_t end) {
  // A file name may be quoted in backticks or be a markdown link: `x.md`, [x.md](x.md).
  while (end > 0 && (text[end - 1] == '`' || text[end - 1] == ')' || text[end - 1] == ']' ||
                     text[end - 1] == '*'))
    --end;
  if (end >= 4) {
    std::string word;
    for (std::size_t i = end - 4; i < end; ++i)
      word += lower(text[i]);
    if (word == "spec" && (end == 4 || !is_alnum(text[end - 5])))
      return {std::string(kDefaultSpec), end - 4};
  }
  if (end >= 3 && text.substr(end - 3, 3) == ".md") {
    std::size_t start = end - 3;
    while (start > 0 && is_path_char(text[start - 1]) && text[start - 1] != '*')
      --start;
    const std::string_view path = text.substr(start, end - start);
    if (path.find('/') == std::string_view::npos)
      return {std::string(kSpecDirectory) + std::string(path), start};
    // A path names its document from the root ("docs/spec/hopper-track.md").
    std::string_view rooted = path;
    if (const std::size_t docs = rooted.rfind("docs/"); docs != std::string_view::npos)
      rooted = rooted.substr(docs);
    return {std::string(rooted), start};
  }
  return {};
}

// Whether the text between two section references only separates them ("§4.8, §4.15",
// "§5.2/§5.3", "§1.4 and §4.2"), so that the second one cites the same document.
bool only_separators(std::string_view between) {
  if (between.size() > 16) return false;
  std::string rest(between);
  for (const std::string_view word : {" and ", " or "}) {
    for (std::size_t at = rest.find(word); at != std::string::npos; at = rest.find(word))
      rest.replace(at, word.size(), " ");
  }
  for (std::size_t at = rest.find(kEnDash); at != std::string::npos; at = rest.find(kEnDash))
    rest.replace(at, kEnDash.size(), "-");
  return std::all_of(rest.begin(), rest.end(), [](char c) {
    return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == ',' || c == ';' || c == '/' ||
           c == '-' || c == '*' || c == '#';
  });
}

// A bare "§N" cites the progression, except inside one of the numbered specification documents,
// where it cites that document (the folder's README is an index without numbered sections).
std::string default_document(std::string_view source) {
  if (source.starts_with(kSpecDirectory) && is_markdown(source) && !source.ends_with("/README.md"))
    return std::string(source);
  return std::string(kDefaultSpec);
}

void find_numbered(std::string_view text, std::string_view source, const LineIndex& lines,
                   std::vector<Citation>& out) {
  const bool markdown = is_markdown(source);
  std::size_t previous_end = std::string_view::npos;
  std::string previous_document;
  for (std::size_t at = text.find(kSectionSign); at != std::string_view::npos;
       at = text.find(kSectionSign, at + kSectionSign.size())) {
    std::size_t number = at + kSectionSign.size();
    while (number < text.size() && text[number] == ' ')
      ++number;
    std::size_t end = number_end(text, number);
    if (end == number) continue;  // a "§" that cites nothing

    std::string document;
    std::string designator_text;  // "spec", "hopper-track.md": how the citation names its document
    if (previous_end != std::string_view::npos && previous_end <= at &&
        only_separators(text.substr(previous_end, at - previous_end))) {
      document = previous_document;
    } else {
      const std::size_t before = skip_blank_backward(text, at, markdown);
      const Designator designator = designator_before(text, before);
      document = designator.document.empty() ? default_document(source) : designator.document;
      if (!designator.document.empty())
        designator_text =
            std::string(text.substr(designator.start, before - designator.start)) + " ";
    }

    std::vector<std::string> sections = {std::string(text.substr(number, end - number))};
    // A range or an alternative without its own "§": "§5.2–5.3", "§4.8-4.10", "§5.2/5.3".
    for (const std::string_view joiner : {kEnDash, std::string_view("-"), std::string_view("/")}) {
      if (!text.substr(end).starts_with(joiner)) continue;
      const std::size_t second = end + joiner.size();
      const std::size_t second_end = number_end(text, second);
      if (second_end != second) {
        sections.emplace_back(text.substr(second, second_end - second));
        end = second_end;
      }
      break;
    }
    const std::string written = designator_text + std::string(text.substr(at, end - at));
    for (const std::string& section : sections)
      out.push_back({CitationKind::numbered, std::string(source), lines.line_of(at), written,
                     document, section});
    previous_end = end;
    previous_document = document;
  }
}

// A quoted title starting at `pos` (a '"' or '\"'); its text and the position after it.
bool read_title(std::string_view text, std::size_t pos, bool markdown, std::string& title,
                std::size_t& after) {
  const bool escaped = text.substr(pos).starts_with("\\\"");
  if (!escaped && (pos >= text.size() || text[pos] != '"')) return false;
  std::size_t p = pos + (escaped ? 2 : 1);
  title.clear();
  int line_breaks = 0;
  while (p < text.size() && title.size() <= 100) {
    if (escaped ? text.substr(p).starts_with("\\\"") : text[p] == '"') {
      after = p + (escaped ? 2 : 1);
      return !title.empty();
    }
    if (text[p] == '\n') {
      if (++line_breaks > 1) return false;
      p = skip_blank(text, p, markdown);
      title += ' ';
      continue;
    }
    title += text[p++];
  }
  return false;
}

void find_documents(std::string_view text, std::string_view source, const LineIndex& lines,
                    std::vector<Citation>& out) {
  const bool markdown = is_markdown(source);
  for (std::size_t at = text.find("docs/"); at != std::string_view::npos;
       at = text.find("docs/", at + 5)) {
    if (at > 0 && (is_alnum(text[at - 1]) || text[at - 1] == '_' || text[at - 1] == '-' ||
                   text[at - 1] == '.'))
      continue;
    std::size_t end = at;
    while (end < text.size() && is_path_char(text[end]))
      ++end;
    while (end > at && text[end - 1] == '.')
      --end;  // sentence punctuation
    const std::string_view path = text.substr(at, end - at);
    if (!path.ends_with(".md")) continue;
    if (at >= kOutside.size() && text.substr(at - kOutside.size(), kOutside.size()) == kOutside)
      continue;  // reported as pointing outside the repository
    // Placeholders ("docs/versions/NN.md") and globs ("docs/versions/*.md") name no one file.
    if (std::any_of(path.begin(), path.end(),
                    [](char c) { return c == '*' || std::isupper(static_cast<unsigned char>(c)); }))
      continue;
    const int line = lines.line_of(at);
    out.push_back({CitationKind::document, std::string(source), line, std::string(path),
                   std::string(path), ""});

    // Titles: `docs/NAME.md, "A", "B"`, `docs/NAME.md "A"`, `docs/NAME.md ("A")`. A quote right
    // after
    // ".md" closes a string literal instead.
    std::size_t p = end;
    if (p < text.size() && text[p] == '`') ++p;
    const std::size_t separator_start = p;
    bool comma_or_parenthesis = false;
    if (p < text.size() && text[p] == ',') {
      ++p;
      comma_or_parenthesis = true;
    }
    p = skip_blank(text, p, markdown);
    if (p < text.size() && text[p] == '(') {
      p = skip_blank(text, p + 1, markdown);
      comma_or_parenthesis = true;
    }
    if (p == separator_start) continue;
    std::string title;
    std::size_t after = 0;
    // Unquoted, after a comma or in parentheses: `docs/csv-schema.md, Limits`,
    // `docs/hardening.md (Limits)`; a capitalised title up to the next punctuation.
    if (comma_or_parenthesis && p < text.size() &&
        std::isupper(static_cast<unsigned char>(text[p]))) {
      std::size_t title_end = p;
      while (title_end < text.size() && title_end - p <= 40 &&
             std::string_view("),;:.`\"\n").find(text[title_end]) == std::string_view::npos)
        ++title_end;
      title = std::string(text.substr(p, title_end - p));
      while (!title.empty() && title.back() == ' ')
        title.pop_back();
      if (title_end - p <= 40 && std::count(title.begin(), title.end(), ' ') < 6)
        out.push_back({CitationKind::titled, std::string(source), line,
                       std::string(path) + ", " + title, std::string(path), title});
      continue;
    }
    while (read_title(text, p, markdown, title, after)) {
      out.push_back({CitationKind::titled, std::string(source), line,
                     std::string(path) + " \"" + title + "\"", std::string(path), title});
      p = after;
      if (p >= text.size() || text[p] != ',') break;
      p = skip_blank(text, p + 1, markdown);
    }
  }
}

void find_outside(std::string_view text, std::string_view source, const LineIndex& lines,
                  std::vector<Citation>& out) {
  for (std::size_t at = text.find(kOutside); at != std::string_view::npos;
       at = text.find(kOutside, at + kOutside.size())) {
    std::size_t end = at + kOutside.size();
    while (end < text.size() && is_path_char(text[end]))
      ++end;
    const std::string path(text.substr(at, end - at));
    out.push_back({CitationKind::outside, std::string(source), lines.line_of(at), path, path, ""});
  }
}

// The byte ranges [begin, end) of a markdown text's fenced code blocks, fences included: what
// they hold is code, and `[](int value)` there is a C++ lambda, not a link.
std::vector<std::pair<std::size_t, std::size_t>> fenced_ranges(std::string_view markdown) {
  std::vector<std::pair<std::size_t, std::size_t>> ranges;
  std::optional<std::size_t> open;
  for (std::size_t start = 0; start < markdown.size();) {
    std::size_t end = markdown.find('\n', start);
    if (end == std::string_view::npos) end = markdown.size();
    std::string_view line = markdown.substr(start, end - start);
    while (!line.empty() && line.front() == ' ')
      line.remove_prefix(1);
    if (line.starts_with("```")) {
      if (open) {
        ranges.emplace_back(*open, end);
        open.reset();
      } else {
        open = start;
      }
    }
    start = end + 1;
  }
  if (open) ranges.emplace_back(*open, markdown.size());  // an unclosed fence runs to the end
  return ranges;
}

// Relative link targets of a markdown file outside its code blocks: `[text](path)`,
// `![alt](path#anchor)`.
void find_links(std::string_view text, std::string_view source, const LineIndex& lines,
                std::vector<Citation>& out) {
  const fs::path directory = fs::path(source).parent_path();
  const auto code = fenced_ranges(text);
  const auto in_code = [&code](std::size_t at) {
    return std::any_of(code.begin(), code.end(),
                       [at](const auto& range) { return at >= range.first && at < range.second; });
  };
  for (std::size_t at = text.find("]("); at != std::string_view::npos;
       at = text.find("](", at + 2)) {
    if (in_code(at)) continue;
    const std::size_t start = at + 2;
    std::size_t end = start;
    while (end < text.size() && text[end] != ')' && text[end] != ' ' && text[end] != '\n')
      ++end;
    std::string_view target = text.substr(start, end - start);
    if (target.empty() || target.front() == '#' || target.find("://") != std::string_view::npos ||
        target.starts_with("mailto:") || target.find('<') != std::string_view::npos)
      continue;
    if (target.starts_with(kOutside)) continue;  // reported as pointing outside
    if (const std::size_t hash = target.find('#'); hash != std::string_view::npos)
      target = target.substr(0, hash);
    const std::string resolved = (directory / std::string(target)).lexically_normal().string();
    out.push_back({CitationKind::document, std::string(source), lines.line_of(at),
                   "](" + std::string(target) + ")", resolved, ""});
  }
}

std::string normalise_title(std::string_view title) {
  std::string out;
  for (const char c : title) {
    if (c == '`' || c == '*') continue;
    const bool space = c == ' ' || c == '\t' || c == '\n' || c == '\r';
    if (space) {
      if (!out.empty() && out.back() != ' ') out += ' ';
      continue;
    }
    out += lower(c);
  }
  while (!out.empty() && (out.back() == ' ' || out.back() == '.' || out.back() == ':'))
    out.pop_back();
  return out;
}

// Lines of a markdown document outside fenced code blocks.
std::vector<std::string_view> prose_lines(std::string_view markdown) {
  std::vector<std::string_view> out;
  bool fenced = false;
  std::size_t start = 0;
  while (start <= markdown.size()) {
    std::size_t end = markdown.find('\n', start);
    if (end == std::string_view::npos) end = markdown.size();
    std::string_view line = markdown.substr(start, end - start);
    std::string_view trimmed = line;
    while (!trimmed.empty() && trimmed.front() == ' ')
      trimmed.remove_prefix(1);
    if (trimmed.starts_with("```"))
      fenced = !fenced;
    else if (!fenced)
      out.push_back(line);
    start = end + 1;
  }
  return out;
}

// The text of an ATX heading ("## Title" gives "Title"), or nullopt.
bool heading_text(std::string_view line, std::string_view& text) {
  std::size_t hashes = 0;
  while (hashes < line.size() && line[hashes] == '#')
    ++hashes;
  if (hashes == 0 || hashes > 6 || hashes >= line.size() || line[hashes] != ' ') return false;
  text = line.substr(hashes + 1);
  while (!text.empty() && text.front() == ' ')
    text.remove_prefix(1);
  return true;
}

std::string read_text_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream content;
  content << in.rdbuf();
  return content.str();
}

}  // namespace

std::string describe(const BrokenCitation& broken) {
  return broken.citation.source + ":" + std::to_string(broken.citation.line) + ": " +
         broken.citation.text + ": " + broken.reason;
}

std::set<std::string> numbered_sections(std::string_view markdown) {
  std::set<std::string> out;
  for (const std::string_view line : prose_lines(markdown)) {
    std::string_view text;
    if (!heading_text(line, text)) continue;
    const std::size_t end = number_end(text, 0);
    if (end == 0) continue;
    std::size_t after = end;
    if (after < text.size() && text[after] == '.') ++after;
    if (after == text.size() || text[after] == ' ') out.emplace(text.substr(0, end));
  }
  return out;
}

std::vector<std::string> section_titles(std::string_view markdown) {
  std::vector<std::string> out;
  for (const std::string_view line : prose_lines(markdown)) {
    std::string_view text;
    if (heading_text(line, text)) {
      out.push_back(normalise_title(text));
      continue;
    }
    // A bold run-in label opening a paragraph or a list item: "**Shapes.** N from ...".
    std::string_view rest = line;
    while (!rest.empty() && rest.front() == ' ')
      rest.remove_prefix(1);
    if (rest.starts_with("* ") || rest.starts_with("- ")) rest.remove_prefix(2);
    if (!rest.starts_with("**")) continue;
    rest.remove_prefix(2);
    const std::size_t close = rest.find("**");
    if (close != std::string_view::npos) out.push_back(normalise_title(rest.substr(0, close)));
  }
  return out;
}

bool names_section(const std::vector<std::string>& titles, std::string_view title) {
  const std::string wanted = normalise_title(title);
  if (wanted.empty()) return false;
  return std::any_of(titles.begin(), titles.end(), [&](const std::string& candidate) {
    if (!candidate.starts_with(wanted)) return false;
    return candidate.size() == wanted.size() || !is_alnum(candidate[wanted.size()]);
  });
}

std::vector<Citation> find_citations(std::string_view text, std::string_view source) {
  const LineIndex lines(text);
  std::vector<Citation> out;
  find_numbered(text, source, lines, out);
  find_documents(text, source, lines, out);
  find_outside(text, source, lines, out);
  if (is_markdown(source)) find_links(text, source, lines, out);
  std::stable_sort(out.begin(), out.end(),
                   [](const Citation& a, const Citation& b) { return a.line < b.line; });
  return out;
}

std::vector<std::string> scanned_sources(const fs::path& root) {
  static const std::set<std::string> kTextExtensions = {
      ".cpp", ".hpp", ".h", ".cu", ".cuh", ".md", ".txt", ".cmake", ".sh", ".py", ".in"};
  // Hidden folders (.git) and build trees (any folder holding a CMakeCache.txt, whatever its
  // name) are not sources. Measured data holds no citations except in its manifests.
  const auto skipped_directory = [](const fs::path& path) {
    return path.filename().string().starts_with(".") || fs::exists(path / "CMakeCache.txt");
  };
  const auto wanted = [&](const fs::path& relative) {
    const std::string extension = relative.extension().string();
    if (*relative.begin() == "results") return extension == ".md";
    return kTextExtensions.contains(extension) || relative.filename() == "CMakeLists.txt";
  };
  std::vector<std::string> out;
  for (auto it = fs::recursive_directory_iterator(root); it != fs::recursive_directory_iterator();
       ++it) {
    const fs::path& path = it->path();
    if (it->is_directory()) {
      if (skipped_directory(path)) it.disable_recursion_pending();
      continue;
    }
    if (!it->is_regular_file()) continue;
    const fs::path relative = fs::relative(path, root);
    if (wanted(relative)) out.push_back(relative.generic_string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

CheckResult check_citations(const fs::path& root, const std::vector<std::string>& sources) {
  struct Document {
    bool exists = false;
    std::set<std::string> numbers;
    std::vector<std::string> titles;
  };
  std::map<std::string, Document> documents;
  auto document = [&](const std::string& path) -> const Document& {
    auto found = documents.find(path);
    if (found != documents.end()) return found->second;
    Document loaded;
    const fs::path full = root / path;
    loaded.exists = fs::exists(full);
    if (loaded.exists && fs::is_regular_file(full) && is_markdown(path)) {
      const std::string text = read_text_file(full);
      loaded.numbers = numbered_sections(text);
      loaded.titles = section_titles(text);
    }
    return documents.emplace(path, std::move(loaded)).first->second;
  };

  CheckResult result;
  for (const std::string& source : sources) {
    const std::string text = read_text_file(root / source);
    if (text.find('\0') != std::string::npos) continue;  // not a text file
    for (Citation& citation : find_citations(text, source)) {
      std::string reason;
      if (citation.kind == CitationKind::outside) {
        reason = "points outside the repository (a clone has no " + citation.document +
                 "); cite docs/ instead";
      } else {
        const Document& cited = document(citation.document);
        if (!cited.exists)
          reason = citation.document + " does not exist";
        else if (citation.kind == CitationKind::numbered &&
                 !cited.numbers.contains(citation.section))
          reason = citation.document + " has no section " + citation.section;
        else if (citation.kind == CitationKind::titled &&
                 !names_section(cited.titles, citation.section))
          reason = citation.document + " has no heading or bold label \"" + citation.section + "\"";
      }
      if (!reason.empty()) {
        result.broken.push_back({std::move(citation), std::move(reason)});
        continue;
      }
      ++result.resolved;
      if (citation.kind == CitationKind::numbered || citation.kind == CitationKind::titled)
        ++result.resolved_sections;
    }
  }
  return result;
}

}  // namespace flashscope::doc_check
