#include "explorer/sass/sass_listing.hpp"

#include <cxxabi.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>

#include "kernels/common/text.hpp"

namespace flashscope::sass {

namespace {

using text::trim;

bool is_hex_digit(char c) {
  return std::isxdigit(static_cast<unsigned char>(c)) != 0;
}

std::optional<std::uint32_t> parse_hex(std::string_view digits) {
  if (digits.empty() || digits.size() > 8) return std::nullopt;
  std::uint32_t value = 0;
  const auto [end, error] =
      std::from_chars(digits.data(), digits.data() + digits.size(), value, 16);
  if (error != std::errc() || end != digits.data() + digits.size()) return std::nullopt;
  return value;
}

// Opcodes whose operand list may end with a code address (a jump, call or reconvergence point).
bool takes_code_address(std::string_view opcode) {
  for (std::string_view branch : {"BRA", "BRX", "JMP", "JMX", "CALL", "BSSY", "SSY", "PBK", "PCNT"})
    if (opcode == branch) return true;
  return false;
}

// "/*0a30*/" at the start of `line` (after blanks and an optional "[B------:R-:W-:Y:S04]"
// scheduling prefix that some tools print): the address and what follows it.
std::optional<std::pair<std::uint32_t, std::string_view>> split_address(std::string_view line) {
  line = trim(line);
  if (!line.empty() && line.front() == '[') {
    const std::size_t close = line.find(']');
    if (close == std::string_view::npos) return std::nullopt;
    line = trim(line.substr(close + 1));
  }
  if (!line.starts_with("/*")) return std::nullopt;
  const std::size_t close = line.find("*/", 2);
  if (close == std::string_view::npos) return std::nullopt;
  const std::string_view digits = line.substr(2, close - 2);
  if (digits.empty() || !std::all_of(digits.begin(), digits.end(), is_hex_digit))
    return std::nullopt;  // "/* 0x000fc400078e00ff */": an encoding line, not an address
  const auto address = parse_hex(digits);
  if (!address) return std::nullopt;
  return std::make_pair(*address, line.substr(close + 2));
}

struct PendingBranch {
  std::size_t instruction;
  std::string label;
  long line;
};

class ListingReader {
 public:
  explicit ListingReader(const std::string& source) : source_(source) {}

  std::vector<SassFunction> read(std::string_view text) {
    long line_number = 0;
    while (!text.empty()) {
      const std::size_t end = text.find('\n');
      const std::string_view line = text.substr(0, end);
      text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
      ++line_number;
      read_line(line, line_number);
    }
    finish_function();
    return std::move(functions_);
  }

 private:
  [[noreturn]] void fail(long line, const std::string& problem) const {
    throw SassFormatError(source_ + ":" + std::to_string(line) + ": " + problem);
  }

  void read_line(std::string_view raw, long line_number) {
    const std::string_view line = trim(raw);
    if (line.empty()) return;
    if (line.starts_with("code for ")) {
      finish_function();
      arch_ = std::string(trim(line.substr(9)));
      return;
    }
    if (line.starts_with("Function : ")) {
      finish_function();
      current_ = SassFunction{};
      current_->arch = arch_;
      current_->name = std::string(trim(line.substr(11)));
      if (current_->name.empty()) fail(line_number, "a function header without a name");
      return;
    }
    if (line.starts_with(".L") && line.back() == ':' && line.find(' ') == std::string_view::npos) {
      if (!current_) fail(line_number, "label " + std::string(line) + " outside a function");
      pending_labels_.emplace_back(line.substr(0, line.size() - 1));
      return;
    }
    const auto split = split_address(line);
    if (!split) return;  // fatbin headers, .headerflags, encoding lines, "......"
    if (!current_) fail(line_number, "an instruction before any 'Function :' header");
    read_instruction(split->first, split->second, line_number);
  }

  void read_instruction(std::uint32_t address, std::string_view rest, long line_number) {
    const std::size_t semicolon = rest.find(';');
    if (semicolon == std::string_view::npos)
      fail(line_number, "the instruction at /*" + hex(address) + "*/ does not end with ';'");
    std::string_view body = trim(rest.substr(0, semicolon));
    SassInstruction instruction;
    instruction.address = address;
    if (body.starts_with("@")) {
      const std::size_t space = body.find_first_of(" \t");
      if (space == std::string_view::npos) fail(line_number, "a predicate without an instruction");
      instruction.predicate = std::string(body.substr(0, space));
      body = trim(body.substr(space));
    }
    const std::size_t space = body.find_first_of(" \t");
    instruction.mnemonic = std::string(body.substr(0, space));
    if (instruction.mnemonic.empty()) fail(line_number, "an empty instruction");
    if (space != std::string_view::npos)
      instruction.operands = std::string(trim(body.substr(space)));

    const std::size_t label_start = instruction.operands.find("`(");
    if (label_start != std::string::npos) {
      const std::size_t label_end = instruction.operands.find(')', label_start);
      if (label_end == std::string::npos) fail(line_number, "an unterminated `( label operand");
      const std::string label =
          instruction.operands.substr(label_start + 2, label_end - label_start - 2);
      // `(.L_x_3) is a place in this function; `(_Z...) names another function (a call).
      if (label.starts_with(".L"))
        branches_.push_back({current_->instructions.size(), label, line_number});
    } else if (takes_code_address(instruction.opcode())) {
      std::string_view last = instruction.operands;
      if (const std::size_t comma = last.rfind(','); comma != std::string_view::npos)
        last = last.substr(comma + 1);
      last = trim(last);
      if (last.starts_with("0x")) instruction.branch_target = parse_hex(last.substr(2));
    }
    for (std::string& label : pending_labels_)
      current_->labels.push_back({std::move(label), address});
    pending_labels_.clear();
    current_->instructions.push_back(std::move(instruction));
  }

  void finish_function() {
    if (!current_) return;
    // A label after the last instruction marks the function's end.
    const std::uint32_t end =
        current_->instructions.empty() ? 0 : current_->instructions.back().address + 16;
    for (std::string& label : pending_labels_)
      current_->labels.push_back({std::move(label), end});
    pending_labels_.clear();
    std::map<std::string, std::uint32_t, std::less<>> addresses;
    for (const SassLabel& label : current_->labels)
      addresses.emplace(label.name, label.address);
    for (const PendingBranch& branch : branches_) {
      const auto found = addresses.find(branch.label);
      if (found == addresses.end())
        fail(branch.line, "a branch to " + branch.label + ", which function " + current_->name +
                              " does not define");
      current_->instructions[branch.instruction].branch_target = found->second;
    }
    branches_.clear();
    functions_.push_back(std::move(*current_));
    current_.reset();
  }

  static std::string hex(std::uint32_t value) {
    char text[16];
    std::snprintf(text, sizeof text, "%04x", value);
    return text;
  }

  const std::string& source_;
  std::string arch_;
  std::optional<SassFunction> current_;
  std::vector<std::string> pending_labels_;
  std::vector<PendingBranch> branches_;
  std::vector<SassFunction> functions_;
};

}  // namespace

std::string_view SassInstruction::opcode() const {
  const std::string_view text = mnemonic;
  return text.substr(0, text.find('.'));
}

std::vector<SassFunction> parse_sass_listing(std::string_view text,
                                             const std::string& source_name) {
  return ListingReader(source_name).read(text);
}

std::string write_sass_listing(const SassFunction& function) {
  std::string out = "code for " + function.arch + "\n";
  out += "Function : " + function.name + "\n";
  std::size_t next_label = 0;
  char address[32];
  for (const SassInstruction& instruction : function.instructions) {
    while (next_label < function.labels.size() &&
           function.labels[next_label].address <= instruction.address)
      out += function.labels[next_label++].name + ":\n";
    std::snprintf(address, sizeof address, "/*%04x*/ ", instruction.address);
    out += address;
    if (!instruction.predicate.empty()) out += instruction.predicate + " ";
    out += instruction.mnemonic;
    if (!instruction.operands.empty()) out += " " + instruction.operands;
    out += " ;\n";
  }
  for (; next_label < function.labels.size(); ++next_label)
    out += function.labels[next_label].name + ":\n";
  return out;
}

std::string demangle(const std::string& name) {
  int status = 0;
  std::unique_ptr<char, decltype(&std::free)> demangled(
      abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status), &std::free);
  if (status != 0 || !demangled) return name;
  return demangled.get();
}

}  // namespace flashscope::sass
