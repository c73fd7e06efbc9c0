#include "explorer/model/markdown.hpp"

#include <cctype>

#include "kernels/common/text.hpp"

namespace flashscope::explorer {

namespace {

using text::trim;

std::string without_comments(std::string_view markdown) {
  std::string out;
  while (!markdown.empty()) {
    const std::size_t open = markdown.find("<!--");
    if (open == std::string_view::npos) {
      out += markdown;
      break;
    }
    out += markdown.substr(0, open);
    const std::size_t close = markdown.find("-->", open + 4);
    if (close == std::string_view::npos) break;  // an unterminated comment hides the rest
    markdown.remove_prefix(close + 3);
  }
  return out;
}

void append(MarkdownLine& line, std::string text, bool code, bool strong) {
  if (text.empty()) return;
  if (!line.empty() && line.back().code == code && line.back().strong == strong)
    line.back().text += text;
  else
    line.push_back({std::move(text), code, strong});
}

// The list marker's length ("* ", "- ", "12. "), or 0.
std::size_t list_marker(std::string_view line) {
  if (line.size() >= 2 && (line[0] == '*' || line[0] == '-' || line[0] == '+') && line[1] == ' ')
    return 2;
  std::size_t digits = 0;
  while (digits < line.size() && std::isdigit(static_cast<unsigned char>(line[digits])))
    ++digits;
  if (digits > 0 && digits + 1 < line.size() && line[digits] == '.' && line[digits + 1] == ' ')
    return digits + 2;
  return 0;
}

std::size_t indentation(std::string_view line) {
  std::size_t spaces = 0;
  while (spaces < line.size() && line[spaces] == ' ')
    ++spaces;
  return spaces;
}

// A table row's cells: split on '|' outside code spans, the outer pipes dropped.
std::vector<std::string_view> table_cells(std::string_view row) {
  row = trim(row);
  if (!row.empty() && row.front() == '|') row.remove_prefix(1);
  if (!row.empty() && row.back() == '|') row.remove_suffix(1);
  std::vector<std::string_view> cells;
  bool in_code = false;
  std::size_t start = 0;
  for (std::size_t i = 0; i < row.size(); ++i) {
    if (row[i] == '\\') {
      ++i;
    } else if (row[i] == '`') {
      in_code = !in_code;
    } else if (row[i] == '|' && !in_code) {
      cells.push_back(trim(row.substr(start, i - start)));
      start = i + 1;
    }
  }
  cells.push_back(trim(row.substr(start)));
  return cells;
}

bool is_separator_row(std::string_view row) {
  for (const std::string_view cell : table_cells(row)) {
    if (cell.empty()) return false;
    for (const char c : cell)
      if (c != '-' && c != ':' && c != ' ') return false;
  }
  return true;
}

void add_space(MarkdownLine& line) {
  if (!line.empty() && !line.back().text.empty() && line.back().text.back() != ' ')
    append(line, " ", line.back().code, line.back().strong);
}

void join(MarkdownLine& line, const MarkdownLine& more) {
  if (more.empty()) return;
  add_space(line);
  for (const MarkdownSpan& span : more)
    append(line, span.text, span.code, span.strong);
}

}  // namespace

MarkdownLine parse_markdown_inline(std::string_view text) {
  MarkdownLine line;
  bool strong = false;
  std::string plain;
  const auto flush = [&] {
    append(line, plain, false, strong);
    plain.clear();
  };
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\\' && i + 1 < text.size() && std::ispunct(static_cast<unsigned char>(text[i + 1]))) {
      plain += text[++i];
    } else if (c == '`') {
      // A code span: up to the same number of backticks (a run of n opens, n closes).
      std::size_t ticks = 1;
      while (i + ticks < text.size() && text[i + ticks] == '`')
        ++ticks;
      const std::string fence(ticks, '`');
      const std::size_t close = text.find(fence, i + ticks);
      if (close == std::string_view::npos) {  // no closing: not code, and no stray backticks
        i += ticks - 1;
        continue;
      }
      flush();
      append(line, std::string(trim(text.substr(i + ticks, close - i - ticks))), true, strong);
      i = close + ticks - 1;
    } else if (c == '*' && i + 1 < text.size() && text[i + 1] == '*') {
      flush();
      strong = !strong;
      ++i;
    } else if (c == '[') {
      // [text](target): the text, parsed for its own code spans.
      const std::size_t close = text.find("](", i);
      const std::size_t end = close == std::string_view::npos ? close : text.find(')', close);
      if (close == std::string_view::npos || end == std::string_view::npos) {
        plain += c;
        continue;
      }
      flush();
      for (const MarkdownSpan& span : parse_markdown_inline(text.substr(i + 1, close - i - 1)))
        append(line, span.text, span.code, span.strong || strong);
      i = end;
    } else {
      plain += c;
    }
  }
  flush();
  return line;
}

std::vector<MarkdownBlock> parse_markdown(std::string_view markdown) {
  const std::string text = without_comments(markdown);
  std::vector<std::string_view> lines;
  for (std::string_view rest = text; !rest.empty();) {
    const std::size_t end = rest.find('\n');
    std::string_view line = rest.substr(0, end);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    lines.push_back(line);
    rest.remove_prefix(end == std::string_view::npos ? rest.size() : end + 1);
  }

  std::vector<MarkdownBlock> blocks;
  // A paragraph or list item still open: the next plain line continues it.
  bool open_text = false;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const std::string_view raw = lines[i];
    const std::string_view line = trim(raw);
    if (line.empty()) {
      open_text = false;
      continue;
    }
    if (line.starts_with("```")) {
      MarkdownBlock block{MarkdownBlockKind::code};
      for (++i; i < lines.size() && !trim(lines[i]).starts_with("```"); ++i)
        block.code_lines.emplace_back(lines[i]);
      blocks.push_back(std::move(block));
      open_text = false;
      continue;
    }
    if (line.front() == '#') {
      MarkdownBlock block{MarkdownBlockKind::heading};
      while (static_cast<std::size_t>(block.level) < line.size() && line[block.level] == '#')
        ++block.level;
      block.text = parse_markdown_inline(trim(line.substr(block.level)));
      blocks.push_back(std::move(block));
      open_text = false;
      continue;
    }
    if (line.front() == '|') {
      MarkdownBlock block{MarkdownBlockKind::table};
      for (; i < lines.size() && trim(lines[i]).starts_with("|"); ++i) {
        const std::string_view row = trim(lines[i]);
        if (block.rows.size() == 1 && block.right_aligned.empty() && is_separator_row(row)) {
          for (const std::string_view cell : table_cells(row))
            block.right_aligned.push_back(cell.back() == ':' && cell.front() != ':');
          continue;
        }
        std::vector<MarkdownLine> cells;
        for (const std::string_view cell : table_cells(row))
          cells.push_back(parse_markdown_inline(cell));
        block.rows.push_back(std::move(cells));
      }
      --i;
      blocks.push_back(std::move(block));
      open_text = false;
      continue;
    }
    if (const std::size_t marker = list_marker(line); marker > 0) {
      MarkdownBlock block{MarkdownBlockKind::list_item};
      block.level = static_cast<int>(indentation(raw) / 2);
      block.text = parse_markdown_inline(line.substr(marker));
      blocks.push_back(std::move(block));
      open_text = true;
      continue;
    }
    if (open_text && !blocks.empty()) {  // a continuation line of a paragraph or list item
      join(blocks.back().text, parse_markdown_inline(line));
      continue;
    }
    MarkdownBlock block{MarkdownBlockKind::paragraph};
    block.text = parse_markdown_inline(line);
    blocks.push_back(std::move(block));
    open_text = true;
  }
  return blocks;
}

std::vector<std::string> visible_texts(const std::vector<MarkdownBlock>& blocks) {
  std::vector<std::string> texts;
  const auto add_line = [&](const MarkdownLine& line) {
    for (const MarkdownSpan& span : line)
      texts.push_back(span.text);
  };
  for (const MarkdownBlock& block : blocks) {
    add_line(block.text);
    for (const auto& row : block.rows)
      for (const MarkdownLine& cell : row)
        add_line(cell);
    for (const std::string& line : block.code_lines)
      texts.push_back(line);
  }
  return texts;
}

}  // namespace flashscope::explorer
