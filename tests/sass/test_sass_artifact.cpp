// The shipped SASS artifacts (results/<gpu>/sass, made on a GPU host by
// `scripts/gpu_host.sh LOG --stages sass`) against what the seed documents about its own SASS
// (spec §4.8–4.10, §6.4) and what the Hopper track promises (hopper-track.md):
//
//   shipped   every listing reads and matches kernels.tsv; the verbatim cuobjdump output in raw/
//             reads to the same instructions as the stored listing; HMMA counts follow the spec's
//             formula; IADD3+LOP3+SHF fall from step 7 to 8 (step 7's progression config at both),
//             MOV falls from 8 to 9 (the seed's A100 pick at both), CS2R is gone in every 128-row
//             pick of step 10 and present in step 9's A100 pick
//             a merged artifact's part.N lines cover its steps once and its overlap check found
//             no changed instruction; each backward instantiation has its three kernels
//   coverage  the newest artifact has every step's headline config (forward and backward)
//   hopper    HGMMA appears and HMMA.16816 disappears at step 17, and every 16-bit kernel of
//             steps 17+ issues HGMMA
//
// Without a shipped artifact (or, for `hopper`, without step 17 in it) the test prints
// "SKIPPED: ..." and ctest reports it as skipped, never as passed.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <iostream>
#include <optional>
#include <set>

#include "configs/config_sets.hpp"
#include "explorer/sass/sass_analysis.hpp"
#include "explorer/sass/sass_artifact.hpp"
#include "explorer/sass/sass_merge.hpp"

using namespace flashscope;
using namespace flashscope::sass;
namespace fs = std::filesystem;

namespace {

std::vector<SassArtifact>& shipped() {
  static std::vector<SassArtifact> artifacts;
  return artifacts;
}

std::vector<SassArtifact> load_shipped(const fs::path& results) {
  std::vector<SassArtifact> artifacts;
  std::error_code error;
  if (!fs::is_directory(results, error)) return artifacts;
  std::vector<fs::path> folders;
  for (const fs::directory_entry& entry : fs::directory_iterator(results))
    if (fs::is_regular_file(entry.path() / "sass" / "manifest.txt"))
      folders.push_back(entry.path() / "sass");
  std::sort(folders.begin(), folders.end());
  for (const fs::path& folder : folders)
    artifacts.push_back(SassArtifact::load(folder));  // a broken shipped artifact fails loudly
  return artifacts;
}

OpcodeCounts opcodes_of(const SassArtifact& artifact, const SassKernelRecord& record) {
  return count_opcodes(artifact.load_function(record), OpcodeGrouping::opcode);
}

OpcodeCounts mnemonics_of(const SassArtifact& artifact, const SassKernelRecord& record) {
  return count_opcodes(artifact.load_function(record), OpcodeGrouping::mnemonic);
}

// HMMA.16816* instructions (fp16 and bf16 mma.sync m16n8k16).
int hmma_16816(const OpcodeCounts& mnemonics) {
  int count = 0;
  for (const auto& [name, n] : mnemonics)
    if (name.starts_with("HMMA.16816")) count += n;
  return count;
}

// Spec §6.4: HMMA per KV iteration per warp = QK (R/16)(B_c/8)(d/16) + PV (R/16)(d/8)(B_c/16),
// R = B_r / n_warps.
int hmma_per_iteration(const KernelConfig& c) {
  const int rows = c.B_r / c.n_warps;
  return (rows / 16) * (c.B_c / 8) * (c.d_head / 16) + (rows / 16) * (c.d_head / 8) * (c.B_c / 16);
}

// The seed's progression (steps 1-16) issues mma.sync; the Hopper track from step 17 on issues
// wgmma (hopper-track.md).
constexpr int kLastMmaSyncStep = 16;

std::string name_of(const SassKernelRecord& record) {
  return "step " + std::to_string(record.step) + " " + to_short_form(record.config) + " " +
         record.arch;
}

}  // namespace

TEST_SUITE("shipped") {
  TEST_CASE("manifests name the commit, toolkit, disassembler and architectures") {
    for (const SassArtifact& artifact : shipped()) {
      INFO(artifact.directory().string());
      CHECK_FALSE(artifact.manifest_value("commit").empty());
      CHECK(artifact.manifest_value("nvcc").starts_with("13."));
      CHECK(artifact.manifest_value("disassembler").starts_with("cuobjdump 13."));
      const std::vector<std::string> arches = artifact.architectures();
      CHECK(std::find(arches.begin(), arches.end(), "sm_80") != arches.end());
      CHECK(std::find(arches.begin(), arches.end(), "sm_90a") != arches.end());
    }
  }

  TEST_CASE("every listing reads and has the instructions and function kernels.tsv records") {
    for (const SassArtifact& artifact : shipped()) {
      INFO(artifact.directory().string());
      CHECK(artifact.has_listings());
      for (const SassKernelRecord& record : artifact.kernels()) {
        INFO(name_of(record));
        REQUIRE_FALSE(record.listing.empty());
        const SassFunction function = artifact.load_function(record);
        CHECK(static_cast<int>(function.instructions.size()) == record.instructions);
        CHECK(record.registers > 0);
        CHECK(record.registers <= 255);
      }
    }
  }

  TEST_CASE("the verbatim cuobjdump output reads to the stored listing's instructions") {
    int compared = 0;
    for (const SassArtifact& artifact : shipped()) {
      std::error_code error;
      if (!fs::is_directory(artifact.directory() / "raw", error)) continue;
      for (const fs::directory_entry& entry :
           fs::directory_iterator(artifact.directory() / "raw")) {
        INFO(entry.path().string());
        // raw/<id>.cuobjdump-sass.txt.gz is `cuobjdump -sass` of the object listings/sNN/<id>.*
        // came from.
        const std::string file = entry.path().filename().string();
        const std::string id = file.substr(0, file.find('.'));
        const std::vector<SassFunction> raw =
            parse_sass_listing(read_text_file(entry.path()), file);
        int matched = 0;
        for (const SassKernelRecord& record : artifact.kernels()) {
          if (fs::path(record.listing).filename().string().rfind(id + ".", 0) != 0) continue;
          const auto found = std::find_if(raw.begin(), raw.end(), [&](const SassFunction& f) {
            return f.name == record.function && f.arch == record.arch;
          });
          REQUIRE_MESSAGE(found != raw.end(), name_of(record) << " is missing from the raw output");
          const SassFunction stored = artifact.load_function(record);
          REQUIRE(found->instructions.size() == stored.instructions.size());
          for (std::size_t i = 0; i < stored.instructions.size(); ++i) {
            CHECK(found->instructions[i].mnemonic == stored.instructions[i].mnemonic);
            CHECK(found->instructions[i].operands == stored.instructions[i].operands);
            CHECK(found->instructions[i].branch_target == stored.instructions[i].branch_target);
          }
          CHECK(count_opcodes(*found, OpcodeGrouping::mnemonic) ==
                count_opcodes(stored, OpcodeGrouping::mnemonic));
          ++matched;
          ++compared;
        }
        CHECK_MESSAGE(matched > 0, "no kernel of kernels.tsv comes from " << file);
      }
    }
    CHECK_MESSAGE(compared > 0, "no shipped artifact has raw/ cuobjdump output to compare with");
  }

  TEST_CASE("mma.sync steps issue the spec's HMMA count: one KV iteration, twice from step 10") {
    for (const SassArtifact& artifact : shipped()) {
      for (const SassKernelRecord& record : artifact.kernels()) {
        if (record.step > kLastMmaSyncStep) continue;
        INFO(name_of(record));
        const SassFunction function = artifact.load_function(record);
        const int expected = hmma_per_iteration(record.config);
        // Steps 10-16 peel the first KV block out of the loop (spec §4.10): the body twice.
        const int copies = record.step >= 10 ? 2 : 1;
        CHECK(hmma_16816(count_opcodes(function, OpcodeGrouping::mnemonic)) == copies * expected);
        const auto loop = main_loop(function);
        REQUIRE(loop);
        CHECK(loop->tensor_core_instructions == expected);
      }
    }
  }

  TEST_CASE("step 7 -> 8 (step 7's progression config at both): IADD3 + LOP3 + SHF fall") {
    const KernelConfig progression7 = *configs::step_picks(7).progression;
    for (const SassArtifact& artifact : shipped()) {
      for (const std::string& arch : artifact.architectures()) {
        INFO(artifact.directory().string() << " " << arch);
        const SassKernelRecord* before = artifact.find(7, progression7, arch);
        const SassKernelRecord* after = artifact.find(8, progression7, arch);
        REQUIRE_MESSAGE(before, "no step 7 " << to_short_form(progression7));
        REQUIRE_MESSAGE(after,
                        "no step 8 built with step 7's progression config (the sass "
                        "stage of gpu_host.sh builds the tune configs of step 8 for it)");
        const OpcodeCounts a = opcodes_of(artifact, *before), b = opcodes_of(artifact, *after);
        const int sum_before = count_of(a, "IADD3") + count_of(a, "LOP3") + count_of(a, "SHF");
        const int sum_after = count_of(b, "IADD3") + count_of(b, "LOP3") + count_of(b, "SHF");
        MESSAGE(arch << ": IADD3+LOP3+SHF " << sum_before << " -> " << sum_after);
        CHECK(sum_after < sum_before);
      }
    }
  }

  TEST_CASE("step 8 -> 9 (the seed's A100 pick at both): MOV falls") {
    const KernelConfig a100 = *configs::step_picks(9).seed_a100;
    REQUIRE(a100 == *configs::step_picks(8).seed_a100);  // the spec's pair is one config
    for (const SassArtifact& artifact : shipped()) {
      for (const std::string& arch : artifact.architectures()) {
        INFO(artifact.directory().string() << " " << arch);
        const SassKernelRecord* before = artifact.find(8, a100, arch);
        const SassKernelRecord* after = artifact.find(9, a100, arch);
        REQUIRE(before);
        REQUIRE(after);
        const int mov_before = count_of(opcodes_of(artifact, *before), "MOV");
        const int mov_after = count_of(opcodes_of(artifact, *after), "MOV");
        MESSAGE(arch << ": MOV " << mov_before << " -> " << mov_after);
        CHECK(mov_after < mov_before);
      }
    }
  }

  TEST_CASE("step 10 removes CS2R from the 128-row picks") {
    for (const SassArtifact& artifact : shipped()) {
      for (const std::string& arch : artifact.architectures()) {
        INFO(artifact.directory().string() << " " << arch);
        const SassKernelRecord* before = artifact.find(9, *configs::step_picks(9).seed_a100, arch);
        REQUIRE(before);
        const int cs2r_before = count_of(opcodes_of(artifact, *before), "CS2R");
        CHECK_MESSAGE(cs2r_before > 0, "step 9's A100 pick has no CS2R to remove");
        int picks = 0;
        const configs::StepPicks step10 = configs::step_picks(10);
        for (const auto& pick : {step10.seed_a100, step10.seed_rtx3090, step10.hopper}) {
          if (!pick || pick->B_r != 128) continue;
          for (const DType dtype : {DType::FP16, DType::BF16}) {
            const SassKernelRecord* after =
                artifact.find(10, configs::with_dtype(*pick, dtype), arch);
            if (after == nullptr) continue;
            INFO(name_of(*after));
            CHECK(count_of(opcodes_of(artifact, *after), "CS2R") == 0);
            ++picks;
          }
        }
        MESSAGE(arch << ": CS2R " << cs2r_before << " in step 9, 0 in " << picks
                     << " step-10 picks");
        CHECK(picks > 0);
      }
    }
  }
}

TEST_SUITE("coverage") {
  // Issue 36: the SASS tab, `explorer sass --diff-prev` and the progression's opcode row and
  // "% of ceiling" need every step's kernel in the artifact the explorer shows (the newest). A
  // step is added before a GPU host can disassemble it (the after-a-GPU-run row of
  // docs/adding-a-step.md's table), so this is a suite of its own, test_sass_artifact_coverage,
  // which the adding-a-step check leaves out as it does test_shipped_results.
  // Steps a GPU run still owes the artifact, each with its reason (the coverage check skips
  // exactly these and fails once the artifact has one: a debt paid is struck from the list).
  struct OwedSass {
    int step;
    const char* reason;
  };
  // B6 merged on 2026-11-29, part.6.
  static constexpr std::array<OwedSass, 1> kSassOwed{
      {{35,
        "step 35 (2026-11-29, branch edge4): its two GPU calls (a 400 s budget) ran the checks, "
        "sanitizers and sweeps and disassembled the carried binary; a third call's sass stage "
        "(scripts/gpu_host.sh --stages sass --sass-steps 35) ran out of time in its build, "
        "so the merge is owed"}}};

  TEST_CASE("the newest artifact has every step's headline config, forward and backward") {
    const auto newest = std::max_element(
        shipped().begin(), shipped().end(), [](const SassArtifact& a, const SassArtifact& b) {
          return a.manifest_value("created_utc") < b.manifest_value("created_utc");
        });
    REQUIRE(newest != shipped().end());
    INFO(newest->directory().string());
    for (const int step : configs::step_numbers()) {
      const KernelConfig headline = configs::headline_config(step);
      INFO("step " << step << " " << to_short_form(headline));
      bool found = false;
      for (const std::string& arch : newest->architectures())
        if (const SassKernelRecord* record = newest->find(step, headline, arch)) {
          found = true;
          CHECK(newest->load_function(*record).instructions.size() > 0);
        }
      const auto debt = std::find_if(kSassOwed.begin(), kSassOwed.end(),
                                     [&](const OwedSass& owed) { return owed.step == step; });
      if (debt != kSassOwed.end()) {
        INFO("owed: " << debt->reason);
        CHECK_MESSAGE(!found, "the artifact has the step now: strike it from kSassOwed");
        continue;
      }
      CHECK_MESSAGE(found, "no kernel of the step's headline config");
    }
  }
}

TEST_SUITE("shipped") {
  // A merged artifact (flashscope-sass merge) says which build made which steps: every step in
  // exactly one part.N line, each naming its commit and a CUDA 13 cuobjdump; and where both
  // builds had a step, its kernels are the same instruction stream (constants such as parameter
  // offsets aside), so the steps kept from the older build show the current code's instructions.
  TEST_CASE("a merged artifact's parts cover its steps once, and the overlap is unchanged code") {
    for (const SassArtifact& artifact : shipped()) {
      const std::vector<SassPart> parts = artifact_parts(artifact.manifest());
      if (parts.empty()) continue;
      INFO(artifact.directory().string());
      std::set<int> covered;
      for (const SassPart& part : parts) {
        INFO(part.text);
        CHECK(part.text.find("| commit - |") == std::string::npos);
        CHECK(part.text.find("| disassembler cuobjdump 13.") != std::string::npos);
        for (const int step : part.steps)
          CHECK_MESSAGE(covered.insert(step).second, "step " << step << " is in two parts");
      }
      const std::vector<int> steps = artifact.steps();
      CHECK(covered == std::set<int>(steps.begin(), steps.end()));
      const std::string overlap = artifact.manifest_value("overlap_check");
      CHECK(overlap.find("differ in instructions") == std::string::npos);
    }
  }

  TEST_CASE("backward steps: three kernels per instantiation, the entry kernel found by config") {
    for (const SassArtifact& artifact : shipped()) {
      for (const int step : artifact.steps()) {
        if (step < kFirstBackwardStep) continue;
        for (const std::string& arch : artifact.architectures()) {
          for (const SassKernelRecord* record : artifact.kernels_of(step, arch)) {
            INFO(name_of(*record));
            CHECK(demangle(record->function).find("::flash_backward_kernel<") != std::string::npos);
            CHECK(artifact.functions_of(step, record->config, arch).size() == 3);
            CHECK(configs::step_descriptor(step).pass == Pass::backward);
          }
        }
      }
    }
  }
}

TEST_SUITE("hopper") {
  TEST_CASE("every 16-bit kernel of steps 17+ issues HGMMA and no HMMA.16816 (sm_90a)") {
    for (const SassArtifact& artifact : shipped()) {
      for (const int step : artifact.steps()) {
        if (step <= kLastMmaSyncStep || step >= kFirstBackwardStep) continue;
        for (const SassKernelRecord* record : artifact.kernels_of(step, "sm_90a")) {
          if (record->config.dtype == DType::E4M3) continue;  // 8-bit wgmma is QGMMA
          INFO(name_of(*record));
          CHECK(count_of(opcodes_of(artifact, *record), "HGMMA") > 0);
          CHECK(hmma_16816(mnemonics_of(artifact, *record)) == 0);
        }
      }
    }
  }

  TEST_CASE("step 17 issues HGMMA and no HMMA.16816; step 16 the reverse (sm_90a)") {
    for (const SassArtifact& artifact : shipped()) {
      const auto before = artifact.kernels_of(kLastMmaSyncStep, "sm_90a");
      const auto after = artifact.kernels_of(kLastMmaSyncStep + 1, "sm_90a");
      if (after.empty()) continue;
      INFO(artifact.directory().string());
      REQUIRE_FALSE(before.empty());
      for (const SassKernelRecord* record : before) {
        INFO(name_of(*record));
        const OpcodeCounts mnemonics = mnemonics_of(artifact, *record);
        CHECK(hmma_16816(mnemonics) > 0);
        CHECK(count_of(opcodes_of(artifact, *record), "HGMMA") == 0);
      }
      for (const SassKernelRecord* record : after) {
        INFO(name_of(*record));
        CHECK(count_of(opcodes_of(artifact, *record), "HGMMA") > 0);
        CHECK(hmma_16816(mnemonics_of(artifact, *record)) == 0);
      }
    }
  }
}

int main(int argc, char** argv) {
  doctest::Context context(argc, argv);
  // --suite=shipped|coverage|hopper picks the checks; --results=DIR reads DIR/*/sass instead of the
  // repository's results/ (gpu_host.sh checks a fresh export before it is committed).
  std::string suite = "shipped";
  fs::path results = FLASHSCOPE_SHIPPED_RESULTS;
  for (int i = 1; i < argc; ++i) {
    const std::string argument = argv[i];
    if (argument.starts_with("--suite=")) suite = argument.substr(8);
    if (argument.starts_with("--results=")) results = argument.substr(10);
  }
  std::vector<SassArtifact> artifacts = load_shipped(results);
  std::erase_if(artifacts, [](const SassArtifact& artifact) { return !artifact.has_listings(); });
  if (artifacts.empty()) {
    std::cout << "SKIPPED: no shipped SASS artifact with listings under " << results.string()
              << "/*/sass (scripts/gpu_host.sh LOG --stages sass makes one on a GPU host)\n";
    return 0;
  }
  if (suite == "hopper" &&
      std::none_of(artifacts.begin(), artifacts.end(), [](const SassArtifact& artifact) {
        return !artifact.kernels_of(17, "sm_90a").empty();
      })) {
    std::cout << "SKIPPED: no shipped SASS artifact has a step-17 sm_90a kernel yet\n";
    return 0;
  }
  for (const SassArtifact& artifact : artifacts)
    std::cout << "shipped SASS: " << artifact.describe() << "\n";
  shipped() = std::move(artifacts);
  context.setOption("test-suite", suite.c_str());
  return context.run();
}
