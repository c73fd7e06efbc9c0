// Joining SASS artifacts (docs/explorer.md, "SASS"): a build of some steps (a GPU host's sass
// stage with --sass-steps) merged into a shipped artifact, so that a step added to the
// progression gets its listings without rebuilding every step's kernels for two architectures.
#pragma once

#include <filesystem>
#include <set>
#include <string>

#include "explorer/sass/sass_artifact.hpp"

namespace flashscope::sass {

// "1-20,101,103-105": steps in ascending order, three or more consecutive ones as a range (the
// form configs::parse_step_list reads back).
std::string step_list_text(const std::set<int>& steps);

// One source of a merged artifact, as its manifest's part.N line records it: "steps 1-20 |
// commit ... | nvcc ... | disassembler ... | made_on ... | created_utc ...".
struct SassPart {
  std::set<int> steps;
  std::string text;  // the whole line
};
// The part.N lines of a manifest, in N's order; empty for an artifact made by one build. Throws
// SassArtifactError for a line that does not start with "steps LIST | ".
std::vector<SassPart> artifact_parts(const SassManifest& manifest);

// Whether two functions are the same machine code as listed: every instruction's predicate,
// mnemonic, operands and branch target (their names may differ: a config's C++ type that grew a
// field changes the mangled name, not the code).
bool same_instructions(const SassFunction& a, const SassFunction& b);
// The same, but for the hex immediates among the operands: the instruction stream is unchanged and
// only constants differ, such as the offset of a kernel parameter placed after a struct that
// grew (c[0x0][...] and the address arithmetic on it).
bool same_but_immediates(const SassFunction& a, const SassFunction& b);

// Writes to `to` the kernels of `with` and, for every step `with` lacks, those of `base`, with
// their listings and the raw/ cuobjdump samples whose kernels are kept. The manifest is `with`'s,
// plus `extra`, with: steps (every step in the result), part.N (which source made which steps;
// a merged base keeps its parts for the steps it keeps) and overlap_check (for each step both
// have: how many of its kernels, matched by config, architecture and function family, are
// instruction-identical in the two, how many identical but for immediate operands, and which
// differ in their instructions; a check of whether a step's code changed between the two builds).
// `to` must be new or empty, or with `replace` an earlier artifact other than the two. Returns one
// line for people; throws SassArtifactError.
std::string merge_artifacts(const std::filesystem::path& base, const std::filesystem::path& with,
                            const std::filesystem::path& to, bool replace,
                            const SassManifest& extra = {});

}  // namespace flashscope::sass
