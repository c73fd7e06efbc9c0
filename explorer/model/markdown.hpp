// The markdown of the step pages (docs/versions/NN.md), read into blocks the detail view renders:
// headings, paragraphs, list items, tables, code blocks. GUI-free, so what a reader sees is
// tested headless: no raw markup reaches the screen (no backticks, no `<!-- flashscope:... -->`
// markers that explorer report keeps its generated tables between, no `**`).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace flashscope::explorer {

// A run of text in one style. Code spans are shown in a code colour, without their backticks;
// links show their text.
struct MarkdownSpan {
  std::string text;
  bool code = false;
  bool strong = false;
  bool operator==(const MarkdownSpan&) const = default;
};
using MarkdownLine = std::vector<MarkdownSpan>;

enum class MarkdownBlockKind { heading, paragraph, list_item, table, code };

struct MarkdownBlock {
  MarkdownBlockKind kind = MarkdownBlockKind::paragraph;
  int level = 0;      // heading: 1 for "#"; list_item: nesting depth from 0
  MarkdownLine text;  // heading, paragraph, list_item: the lines of the source joined
  // table: the header row first, then the body rows, each one line per cell
  std::vector<std::vector<MarkdownLine>> rows;
  std::vector<bool> right_aligned;      // table: per column ("---:")
  std::vector<std::string> code_lines;  // code: verbatim
};

// Inline markup of one line: `code`, **strong**, [text](target), and backslash escapes.
MarkdownLine parse_markdown_inline(std::string_view text);

// HTML comments (<!-- ... -->, over several lines too) are dropped before anything else.
std::vector<MarkdownBlock> parse_markdown(std::string_view markdown);

// Every text a reader would see in `blocks`, one string per span or code line (for tests).
std::vector<std::string> visible_texts(const std::vector<MarkdownBlock>& blocks);

}  // namespace flashscope::explorer
