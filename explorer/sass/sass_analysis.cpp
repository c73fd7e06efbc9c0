#include "explorer/sass/sass_analysis.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <unordered_map>

namespace flashscope::sass {

std::string_view grouping_name(OpcodeGrouping grouping) {
  return grouping == OpcodeGrouping::opcode ? "opcode" : "mnemonic";
}

std::optional<OpcodeGrouping> grouping_from_name(std::string_view name) {
  if (name == "opcode") return OpcodeGrouping::opcode;
  if (name == "mnemonic") return OpcodeGrouping::mnemonic;
  return std::nullopt;
}

OpcodeCounts count_opcodes(const SassFunction& function, OpcodeGrouping grouping) {
  OpcodeCounts counts;
  for (const SassInstruction& instruction : function.instructions) {
    const std::string_view key =
        grouping == OpcodeGrouping::opcode ? instruction.opcode() : instruction.mnemonic;
    const auto found = counts.find(key);
    if (found == counts.end())
      counts.emplace(std::string(key), 1);
    else
      ++found->second;
  }
  return counts;
}

int total_instructions(const OpcodeCounts& counts) {
  int total = 0;
  for (const auto& [name, count] : counts)
    total += count;
  return total;
}

int count_of(const OpcodeCounts& counts, std::string_view name) {
  const auto found = counts.find(name);
  return found == counts.end() ? 0 : found->second;
}

std::vector<OpcodeChange> compare_counts(const OpcodeCounts& before, const OpcodeCounts& after) {
  std::vector<OpcodeChange> changes;
  for (const auto& [name, count] : before)
    changes.push_back({name, count, count_of(after, name)});
  for (const auto& [name, count] : after)
    if (!before.contains(name)) changes.push_back({name, 0, count});
  std::stable_sort(changes.begin(), changes.end(),
                   [](const OpcodeChange& a, const OpcodeChange& b) {
                     const int magnitude_a = std::abs(a.delta()), magnitude_b = std::abs(b.delta());
                     if (magnitude_a != magnitude_b) return magnitude_a > magnitude_b;
                     return a.name < b.name;
                   });
  return changes;
}

bool is_tensor_core_opcode(std::string_view opcode) {
  return opcode.size() > 3 && opcode.ends_with("MMA");
}

namespace {

bool is_word_character(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
}

// Replaces register numbers in `text`: a register token is R, UR, P, UP or B followed by digits,
// not preceded or followed by a word character (so RZ, PT, SR_TID.X and 0x1f stay).
std::string strip_register_numbers(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  std::size_t i = 0;
  while (i < text.size()) {
    const bool at_word_start = i == 0 || !is_word_character(text[i - 1]);
    if (at_word_start) {
      std::size_t prefix = 0;
      for (std::string_view candidate : {"UR", "UP", "R", "P", "B"})
        if (text.substr(i).starts_with(candidate)) {
          prefix = candidate.size();
          break;
        }
      if (prefix > 0) {
        std::size_t digits_end = i + prefix;
        while (digits_end < text.size() &&
               std::isdigit(static_cast<unsigned char>(text[digits_end])))
          ++digits_end;
        const bool has_digits = digits_end > i + prefix;
        const bool at_word_end = digits_end == text.size() || !is_word_character(text[digits_end]);
        if (has_digits && at_word_end) {
          out.append(text.substr(i, prefix));
          i = digits_end;
          continue;
        }
      }
    }
    out.push_back(text[i]);
    ++i;
  }
  return out;
}

void erase_all(std::string& text, std::string_view what) {
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at))
    text.erase(at, what.size());
}

}  // namespace

std::string normalize_instruction(const SassInstruction& instruction) {
  std::string operands = instruction.operands;
  if (instruction.branch_target) {
    // The address operand is the last one, as a hex number or a `(label).
    const std::size_t label = operands.find("`(");
    if (label != std::string::npos) {
      const std::size_t end = operands.find(')', label);
      operands.replace(label, end == std::string::npos ? std::string::npos : end - label + 1,
                       "<target>");
    } else {
      const std::size_t comma = operands.rfind(',');
      const std::size_t start = comma == std::string::npos ? 0 : comma + 2;
      if (start <= operands.size()) operands.replace(start, std::string::npos, "<target>");
    }
  }
  erase_all(operands, ".reuse");
  std::string text = strip_register_numbers(instruction.predicate);
  if (!text.empty()) text += ' ';
  text += instruction.mnemonic;
  if (!operands.empty()) text += ' ' + strip_register_numbers(operands);
  return text;
}

// ---- Diff ----------------------------------------------------------------------------------

LineDiff diff_lines(const std::vector<std::string>& before, const std::vector<std::string>& after,
                    std::size_t max_edits) {
  // Lines become integers, so the search compares numbers.
  std::unordered_map<std::string_view, int> ids;
  const auto to_ids = [&ids](const std::vector<std::string>& lines) {
    std::vector<int> out;
    out.reserve(lines.size());
    for (const std::string& line : lines)
      out.push_back(ids.emplace(line, static_cast<int>(ids.size())).first->second);
    return out;
  };
  const std::vector<int> a = to_ids(before), b = to_ids(after);

  // Common prefix and suffix need no search.
  std::size_t prefix = 0;
  while (prefix < a.size() && prefix < b.size() && a[prefix] == b[prefix])
    ++prefix;
  std::size_t suffix = 0;
  while (suffix < a.size() - prefix && suffix < b.size() - prefix &&
         a[a.size() - 1 - suffix] == b[b.size() - 1 - suffix])
    ++suffix;
  const long n = static_cast<long>(a.size() - prefix - suffix);
  const long m = static_cast<long>(b.size() - prefix - suffix);
  const auto A = [&](long i) { return a[prefix + static_cast<std::size_t>(i)]; };
  const auto B = [&](long j) { return b[prefix + static_cast<std::size_t>(j)]; };

  LineDiff diff;
  const auto same = [&](std::size_t i, std::size_t j) {
    diff.lines.push_back({DiffKind::same, i, j});
  };
  for (std::size_t i = 0; i < prefix; ++i)
    same(i, i);

  // Myers: for each edit count d, the furthest-reaching x on every diagonal k = x - y. Each
  // round's frontier is kept so the path can be traced back; memory grows as d^2, hence the cap.
  const long max_d = std::min<long>(n + m, static_cast<long>(max_edits));
  std::vector<std::vector<int>> frontiers;
  std::vector<int> v(2 * static_cast<std::size_t>(max_d) + 3, 0);
  const long offset = max_d + 1;
  long found_d = -1;
  for (long d = 0; d <= max_d && found_d < 0; ++d) {
    for (long k = -d; k <= d; k += 2) {
      long x = (k == -d || (k != d && v[offset + k - 1] < v[offset + k + 1]))
                   ? v[offset + k + 1]
                   : v[offset + k - 1] + 1;
      long y = x - k;
      while (x < n && y < m && A(x) == B(y)) {
        ++x;
        ++y;
      }
      v[offset + k] = static_cast<int>(x);
      if (x >= n && y >= m) {
        found_d = d;
        break;
      }
    }
    frontiers.emplace_back(v.begin() + (offset - d), v.begin() + (offset + d + 1));
  }

  std::vector<DiffLine> middle;
  if (found_d < 0) {
    diff.truncated = true;
    for (long i = 0; i < n; ++i)
      middle.push_back({DiffKind::removed, prefix + static_cast<std::size_t>(i), std::nullopt});
    for (long j = 0; j < m; ++j)
      middle.push_back({DiffKind::added, std::nullopt, prefix + static_cast<std::size_t>(j)});
  } else {
    // Trace back from (n, m): each round contributes its diagonal run and one edit.
    long x = n, y = m;
    for (long d = found_d; d > 0; --d) {
      const std::vector<int>& previous = frontiers[static_cast<std::size_t>(d - 1)];
      const auto at = [&](long k) -> long {
        return previous[static_cast<std::size_t>(k + (d - 1))];
      };
      const long k = x - y;
      const bool down = k == -d || (k != d && at(k - 1) < at(k + 1));
      const long previous_k = down ? k + 1 : k - 1;
      const long previous_x = at(previous_k);
      const long previous_y = previous_x - previous_k;
      while (x > previous_x + (down ? 0 : 1) && y > previous_y + (down ? 1 : 0)) {
        --x;
        --y;
        middle.push_back({DiffKind::same, prefix + static_cast<std::size_t>(x),
                          prefix + static_cast<std::size_t>(y)});
      }
      if (down) {
        --y;
        middle.push_back({DiffKind::added, std::nullopt, prefix + static_cast<std::size_t>(y)});
      } else {
        --x;
        middle.push_back({DiffKind::removed, prefix + static_cast<std::size_t>(x), std::nullopt});
      }
    }
    while (x > 0 && y > 0) {
      --x;
      --y;
      middle.push_back({DiffKind::same, prefix + static_cast<std::size_t>(x),
                        prefix + static_cast<std::size_t>(y)});
    }
    std::reverse(middle.begin(), middle.end());
  }
  for (const DiffLine& line : middle) {
    if (line.kind == DiffKind::removed) ++diff.removed;
    if (line.kind == DiffKind::added) ++diff.added;
    diff.lines.push_back(line);
  }
  for (std::size_t s = 0; s < suffix; ++s)
    same(a.size() - suffix + s, b.size() - suffix + s);
  return diff;
}

// ---- Loops ---------------------------------------------------------------------------------

std::vector<SassLoop> find_loops(const SassFunction& function) {
  std::vector<SassLoop> loops;
  const auto& instructions = function.instructions;
  for (std::size_t i = 0; i < instructions.size(); ++i) {
    const SassInstruction& branch = instructions[i];
    if (branch.opcode() != "BRA" || !branch.branch_target || *branch.branch_target > branch.address)
      continue;
    if (*branch.branch_target == branch.address) continue;  // the self-loop after EXIT
    const auto head =
        std::lower_bound(instructions.begin(), instructions.end(), *branch.branch_target,
                         [](const SassInstruction& instruction, std::uint32_t address) {
                           return instruction.address < address;
                         });
    SassLoop loop;
    loop.first = static_cast<std::size_t>(head - instructions.begin());
    loop.last = i;
    for (std::size_t j = loop.first; j <= loop.last; ++j)
      if (is_tensor_core_opcode(instructions[j].opcode())) ++loop.tensor_core_instructions;
    loops.push_back(loop);
  }
  return loops;
}

std::optional<SassLoop> main_loop(const SassFunction& function) {
  std::optional<SassLoop> best;
  for (const SassLoop& loop : find_loops(function)) {
    if (loop.tensor_core_instructions == 0) continue;
    if (!best || loop.tensor_core_instructions > best->tensor_core_instructions ||
        (loop.tensor_core_instructions == best->tensor_core_instructions &&
         loop.last - loop.first > best->last - best->first))
      best = loop;
  }
  return best;
}

}  // namespace flashscope::sass
