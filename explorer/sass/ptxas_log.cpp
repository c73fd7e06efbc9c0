#include "explorer/sass/ptxas_log.hpp"

#include <cctype>
#include <charconv>
#include <stdexcept>

namespace flashscope::sass {

namespace {

// The integer right before `unit` in `line` ("24 bytes stack frame" -> 24 for "bytes stack").
std::optional<int> number_before(std::string_view line, std::string_view unit) {
  const std::size_t at = line.find(unit);
  if (at == std::string_view::npos || at == 0) return std::nullopt;
  std::size_t end = at;
  while (end > 0 && line[end - 1] == ' ')
    --end;
  std::size_t begin = end;
  while (begin > 0 && std::isdigit(static_cast<unsigned char>(line[begin - 1])))
    --begin;
  int value = 0;
  const auto [ptr, error] = std::from_chars(line.data() + begin, line.data() + end, value);
  if (begin == end || error != std::errc() || ptr != line.data() + end) return std::nullopt;
  return value;
}

// The text between the first pair of single quotes after `from`.
std::string quoted(std::string_view line, std::size_t from) {
  const std::size_t open = line.find('\'', from);
  if (open == std::string_view::npos) return {};
  const std::size_t close = line.find('\'', open + 1);
  if (close == std::string_view::npos) return {};
  return std::string(line.substr(open + 1, close - open - 1));
}

}  // namespace

std::vector<PtxasResources> parse_ptxas_log(std::string_view text, const std::string& source_name) {
  std::vector<PtxasResources> entries;
  std::optional<std::size_t> current;  // index of the entry the next lines describe
  long current_line = 0;
  bool current_has_registers = false;
  std::string properties_of;  // "Function properties for NAME": the stack line that follows
  long line_number = 0;
  const auto check_registers = [&] {
    if (current && !current_has_registers)
      throw std::runtime_error(source_name + ":" + std::to_string(current_line) + ": entry " +
                               entries[*current].function + " for " + entries[*current].arch +
                               " has no 'Used N registers' line");
  };
  while (!text.empty()) {
    const std::size_t end = text.find('\n');
    const std::string_view line = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
    ++line_number;

    if (const std::size_t at = line.find("Compiling entry function");
        at != std::string_view::npos) {
      check_registers();
      PtxasResources entry;
      entry.function = quoted(line, at);
      const std::size_t for_at = line.find(" for ", at);
      if (for_at != std::string_view::npos) entry.arch = quoted(line, for_at);
      if (entry.function.empty() || entry.arch.empty())
        throw std::runtime_error(source_name + ":" + std::to_string(line_number) +
                                 ": cannot read the function and architecture of '" +
                                 std::string(line) + "'");
      entries.push_back(std::move(entry));
      current = entries.size() - 1;
      current_line = line_number;
      current_has_registers = false;
      properties_of.clear();
      continue;
    }
    if (const std::size_t at = line.find("Function properties for ");
        at != std::string_view::npos) {
      properties_of = std::string(line.substr(at + 24));
      while (!properties_of.empty() &&
             std::isspace(static_cast<unsigned char>(properties_of.back())))
        properties_of.pop_back();
      continue;
    }
    if (line.find("bytes stack frame") != std::string_view::npos) {
      if (current && properties_of == entries[*current].function) {
        PtxasResources& entry = entries[*current];
        entry.stack_frame_bytes = number_before(line, "bytes stack frame").value_or(0);
        entry.spill_store_bytes = number_before(line, "bytes spill stores").value_or(0);
        entry.spill_load_bytes = number_before(line, "bytes spill loads").value_or(0);
      }
      properties_of.clear();
      continue;
    }
    if (line.find("ptxas info") != std::string_view::npos &&
        line.find("Used ") != std::string_view::npos && current && !current_has_registers) {
      const auto registers = number_before(line, "registers");
      if (!registers)
        throw std::runtime_error(source_name + ":" + std::to_string(line_number) +
                                 ": cannot read the register count of '" + std::string(line) + "'");
      entries[*current].registers = *registers;
      entries[*current].barriers = number_before(line, "barriers").value_or(0);
      current_has_registers = true;
    }
  }
  check_registers();
  return entries;
}

}  // namespace flashscope::sass
