// What the explorer computes from a SASS listing: opcode histograms and their change between two
// kernels, a normalized listing (register numbers, addresses and scheduling flags stripped, so
// that a diff shows real changes only), a line diff of two normalized listings, and the loops
// of a function with its main loop (the one that issues the most tensor-core instructions).
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "explorer/sass/sass_listing.hpp"

namespace flashscope::sass {

// How instructions are grouped: by opcode ("HMMA") or by the whole mnemonic, the opcode with
// its modifiers ("HMMA.16816.F32", "LDSM.16.M88.4").
enum class OpcodeGrouping { opcode, mnemonic };
std::string_view grouping_name(OpcodeGrouping grouping);  // "opcode" / "mnemonic"
std::optional<OpcodeGrouping> grouping_from_name(std::string_view name);

using OpcodeCounts = std::map<std::string, int, std::less<>>;

OpcodeCounts count_opcodes(const SassFunction& function, OpcodeGrouping grouping);
int total_instructions(const OpcodeCounts& counts);
// The count of one opcode or mnemonic; with OpcodeGrouping::opcode counts "HMMA" matches every
// HMMA.* mnemonic. 0 when absent.
int count_of(const OpcodeCounts& counts, std::string_view name);

struct OpcodeChange {
  std::string name;
  int before = 0;
  int after = 0;
  int delta() const { return after - before; }
};

// Every name present in either histogram, largest |delta| first, then by name.
std::vector<OpcodeChange> compare_counts(const OpcodeCounts& before, const OpcodeCounts& after);

// Whether an opcode issues tensor-core math: HMMA (mma.sync), HGMMA (wgmma), IMMA, ... all end
// in "MMA".
bool is_tensor_core_opcode(std::string_view opcode);

// One instruction without what register allocation and code placement decide: register numbers
// (R12 -> R, UR4 -> UR, P3 -> P, UP1 -> UP, B0 -> B), `.reuse` operand-cache flags and code
// addresses of branches (-> <target>). Opcode, modifiers, immediates, constant-bank and shared
// memory offsets stay: those change only when the code does.
std::string normalize_instruction(const SassInstruction& instruction);

// ---- Diff ----------------------------------------------------------------------------------

enum class DiffKind { same, removed, added };

struct DiffLine {
  DiffKind kind = DiffKind::same;
  std::optional<std::size_t> before;  // index into the first sequence
  std::optional<std::size_t> after;   // index into the second sequence
};

struct LineDiff {
  std::vector<DiffLine> lines;  // the edit script: every line of both sequences, in order
  std::size_t removed = 0;
  std::size_t added = 0;
  // True when the sequences differ in more lines than `max_edits`: the script then removes
  // every line of the first and adds every line of the second after their common prefix and
  // suffix, instead of a minimal diff.
  bool truncated = false;
};

// A shortest edit script (Myers' O(ND) algorithm) between two line sequences. Memory grows with
// the square of the edit count (4000 edits: 64 MB), hence the cap.
LineDiff diff_lines(const std::vector<std::string>& before, const std::vector<std::string>& after,
                    std::size_t max_edits = 4000);

// ---- Loops ---------------------------------------------------------------------------------

struct SassLoop {
  std::size_t first = 0;  // index of the loop head (the backward branch's target)
  std::size_t last = 0;   // index of the backward branch
  int tensor_core_instructions = 0;
};

// Every backward BRA in the function, as [target, branch], in address order of the branch.
std::vector<SassLoop> find_loops(const SassFunction& function);

// The loop with the most tensor-core instructions (ties: the longer one); nullopt when no loop
// has any.
std::optional<SassLoop> main_loop(const SassFunction& function);

}  // namespace flashscope::sass
