// A SYNTHETIC SASS artifact for the explorer's GUI tests: listings written by this program, not by
// a disassembler (its manifest says so). Each step's kernel has the shape of the real ones (a
// prologue, a main loop of LDSM and HMMA, an epilogue) and the seed's documented trends (IADD3,
// LOP3 and SHF fall at step 8, MOV at 9, CS2R is gone from 10, the body doubles from 10; the
// Hopper steps issue HGMMA, UTMALDG and SYNCS instead of HMMA, LDSM and LDGSTS), so the SASS tab
// and the opcode annotation have something to show.
#pragma once

#include <filesystem>

namespace flashscope::testing {

// Steps 1..last_step, fp16 and bf16, sm_80 and sm_90a (the Hopper steps sm_90a only):
// kernels.tsv, manifest.txt, listings/.
void write_synthetic_sass(const std::filesystem::path& directory, int last_step);

}  // namespace flashscope::testing
