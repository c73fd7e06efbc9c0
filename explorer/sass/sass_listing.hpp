// SASS listings: the text `cuobjdump -sass` prints for every function of every architecture in
// a binary, read into instructions. The same reader takes the compact form the build stores
// (write_sass_listing: the same lines without the instruction encodings), so a stored listing
// and the disassembler's own output give identical instructions.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace flashscope::sass {

struct SassInstruction {
  std::uint32_t address = 0;  // byte offset in the function, as /*0a30*/ shows it
  std::string predicate;      // "@P0", "@!PT", "@!UP1"; empty when unpredicated
  std::string mnemonic;       // opcode with its modifiers: "HMMA.16816.F32", "LDSM.16.M88.4"
  std::string operands;       // as printed, e.g. "R4, R8, R12, R4"; empty for EXIT
  // Where a branch goes: a hex operand (cuobjdump) or a `(.L_x_N) label (nvdisasm style).
  std::optional<std::uint32_t> branch_target;

  std::string_view opcode() const;  // the mnemonic up to its first '.': "HMMA"
};

struct SassLabel {
  std::string name;  // ".L_x_12"
  std::uint32_t address = 0;
};

struct SassFunction {
  std::string arch;  // "sm_80", "sm_90a"
  std::string name;  // as the listing names it (mangled)
  std::vector<SassInstruction> instructions;
  std::vector<SassLabel> labels;  // label lines of the listing, in address order
};

// A listing that cannot be read; the message names the source, line and problem.
class SassFormatError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Every function of `text`, in listing order. Lines that are neither an architecture header
// ("code for sm_80"), a function header ("Function : NAME"), a label (".L_x_3:") nor an
// instruction ("/*0040*/ IMAD.MOV.U32 R1, RZ, RZ, c[0x0][0x28] ;", with or without its encoding
// comments) are ignored: cuobjdump surrounds listings with fatbin headers and .headerflags.
// Throws SassFormatError for an instruction outside a function, a line that starts like an
// instruction but does not end with ';', or a branch to a label the function never defines.
std::vector<SassFunction> parse_sass_listing(std::string_view text, const std::string& source_name);

// The compact, re-readable form of one function: "code for ARCH", "Function : NAME", then one
// line per instruction and label without the encoding comments.
std::string write_sass_listing(const SassFunction& function);

// `name` demangled with the C++ ABI demangler; `name` itself when it is not a mangled name.
std::string demangle(const std::string& name);

}  // namespace flashscope::sass
