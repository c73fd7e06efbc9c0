// The SASS library on inputs whose answer is known: a listing hand-written in cuobjdump's layout
// (data/cuobjdump_format_sample.txt: fatbin headers, encoding comments, hex and label branches),
// and a real ptxas report of this project's step-8 kernel for sm_80 and sm_90a
// (data/ptxas_s08_sm80_sm90a.log, nvcc 13.0 --resource-usage). The real disassembler's output is
// tested against the shipped artifact in test_sass_artifact.cpp.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "configs/config_sets.hpp"
#include "explorer/sass/ptxas_log.hpp"
#include "explorer/sass/sass_analysis.hpp"
#include "explorer/sass/sass_artifact.hpp"
#include "explorer/sass/sass_listing.hpp"
#include "explorer/sass/sass_merge.hpp"
#include "explorer/sass/sass_selection.hpp"

using namespace flashscope;
using namespace flashscope::sass;
namespace fs = std::filesystem;

namespace {

std::string data_file(const std::string& name) {
  std::ifstream in(std::string(FLASHSCOPE_SASS_TEST_DATA) + "/" + name, std::ios::binary);
  REQUIRE_MESSAGE(in, "missing test data " << name);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::vector<SassFunction> sample() {
  return parse_sass_listing(data_file("cuobjdump_format_sample.txt"), "sample");
}

fs::path scratch_dir(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("flashscope_test_sass_" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

SassKernelRecord record(int step, const std::string& config, const std::string& arch) {
  SassKernelRecord r;
  r.step = step;
  r.config = parse_short_form(config);
  r.arch = arch;
  r.function = "_Z" + std::to_string(step);
  r.registers = 100 + step;
  return r;
}

}  // namespace

TEST_CASE("a cuobjdump-style listing is read into functions, instructions and branch targets") {
  const std::vector<SassFunction> functions = sample();
  REQUIRE(functions.size() == 2);
  const SassFunction& ampere = functions[0];
  CHECK(ampere.arch == "sm_80");
  CHECK(ampere.name == "_ZN10flashscope3v0920flash_forward_kernelI_sampleEEvNS_11ForwardArgsE");
  REQUIRE(ampere.instructions.size() == 22);
  CHECK(ampere.instructions[0].mnemonic == "IMAD.MOV.U32");
  CHECK(ampere.instructions[0].operands == "R1, RZ, RZ, c[0x0][0x28]");
  CHECK(ampere.instructions[4].predicate == "@P0");
  CHECK(ampere.instructions[4].mnemonic == "EXIT");
  CHECK(ampere.instructions[4].operands.empty());
  CHECK(ampere.instructions[12].opcode() == "HMMA");
  CHECK(ampere.instructions[17].branch_target == 0xa0u);   // @P1 BRA 0xa0
  CHECK(ampere.instructions[20].branch_target == 0x140u);  // the self-loop after EXIT
  CHECK(ampere.instructions[21].address == 0x150u);

  const SassFunction& hopper = functions[1];
  CHECK(hopper.arch == "sm_90a");
  REQUIRE(hopper.instructions.size() == 16);
  REQUIRE(hopper.labels.size() == 2);
  CHECK(hopper.labels[0].name == ".L_x_0");
  CHECK(hopper.labels[0].address == 0x40u);
  CHECK(hopper.instructions[11].branch_target == 0x40u);  // @P1 BRA `(.L_x_0)
  CHECK(hopper.instructions[14].branch_target == 0xe0u);
}

TEST_CASE("the compact form reads back to the same instructions") {
  for (const SassFunction& function : sample()) {
    const std::vector<SassFunction> again =
        parse_sass_listing(write_sass_listing(function), "compact");
    REQUIRE(again.size() == 1);
    CHECK(again[0].arch == function.arch);
    CHECK(again[0].name == function.name);
    REQUIRE(again[0].instructions.size() == function.instructions.size());
    for (std::size_t i = 0; i < function.instructions.size(); ++i) {
      CHECK(again[0].instructions[i].address == function.instructions[i].address);
      CHECK(again[0].instructions[i].predicate == function.instructions[i].predicate);
      CHECK(again[0].instructions[i].mnemonic == function.instructions[i].mnemonic);
      CHECK(again[0].instructions[i].operands == function.instructions[i].operands);
      CHECK(again[0].instructions[i].branch_target == function.instructions[i].branch_target);
    }
    CHECK(again[0].labels.size() == function.labels.size());
  }
}

TEST_CASE("malformed listings are rejected with the line") {
  CHECK_THROWS_WITH_AS(parse_sass_listing("        /*0000*/  EXIT ;\n", "x"),
                       doctest::Contains("x:1: an instruction before any 'Function :' header"),
                       SassFormatError);
  CHECK_THROWS_WITH_AS(
      parse_sass_listing("code for sm_80\nFunction : f\n/*0000*/ IADD3 R1, R1, 0x1, RZ\n", "x"),
      doctest::Contains("x:3: the instruction at /*0000*/ does not end with ';'"), SassFormatError);
  CHECK_THROWS_WITH_AS(
      parse_sass_listing("code for sm_80\nFunction : f\n/*0000*/ BRA `(.L_x_9) ;\n", "x"),
      doctest::Contains("x:3: a branch to .L_x_9, which function f does not define"),
      SassFormatError);
  // Encoding comments and fatbin headers are not instructions.
  CHECK(parse_sass_listing("Fatbin elf code:\n   /* 0x000fc400078e00ff */\n", "x").empty());
}

TEST_CASE("opcode histograms by opcode and by mnemonic") {
  const SassFunction ampere = sample()[0];
  const OpcodeCounts opcodes = count_opcodes(ampere, OpcodeGrouping::opcode);
  const OpcodeCounts mnemonics = count_opcodes(ampere, OpcodeGrouping::mnemonic);
  CHECK(total_instructions(opcodes) == 22);
  CHECK(total_instructions(mnemonics) == 22);
  CHECK(count_of(opcodes, "HMMA") == 2);
  CHECK(count_of(mnemonics, "HMMA.16816.F32") == 2);
  CHECK(count_of(opcodes, "LDSM") == 2);
  CHECK(count_of(mnemonics, "LDSM.16.M88.4") == 2);
  CHECK(count_of(opcodes, "EXIT") == 2);
  CHECK(count_of(opcodes, "BRA") == 2);
  CHECK(count_of(opcodes, "CS2R") == 1);
  CHECK(count_of(opcodes, "MOV") == 0);
  CHECK(count_of(mnemonics, "IMAD") == 0);  // only IMAD.MOV.U32
  CHECK(count_of(mnemonics, "IMAD.MOV.U32") == 1);

  const OpcodeCounts hopper = count_opcodes(sample()[1], OpcodeGrouping::opcode);
  const std::vector<OpcodeChange> changes = compare_counts(opcodes, hopper);
  // Largest change first: ULDC, LDGSTS, ... leave; MOV arrives. Ties by name.
  REQUIRE(!changes.empty());
  CHECK(std::abs(changes.front().delta()) >= std::abs(changes.back().delta()));
  int names = 0;
  for (const OpcodeChange& change : changes) {
    if (change.name == "MOV") {
      CHECK(change.before == 0);
      CHECK(change.after == 1);
      ++names;
    }
    if (change.name == "CS2R") {
      CHECK(change.delta() == -1);
      ++names;
    }
    if (change.name == "HMMA") {
      CHECK(change.delta() == 0);
      ++names;
    }
  }
  CHECK(names == 3);
  for (std::size_t i = 1; i < changes.size(); ++i) {
    const int previous = std::abs(changes[i - 1].delta()), current = std::abs(changes[i].delta());
    CHECK(previous >= current);
    if (previous == current) CHECK(changes[i - 1].name < changes[i].name);
  }
}

TEST_CASE("normalization strips register numbers, .reuse and branch targets only") {
  const SassFunction ampere = sample()[0];
  CHECK(normalize_instruction(ampere.instructions[0]) == "IMAD.MOV.U32 R, RZ, RZ, c[0x0][0x28]");
  CHECK(normalize_instruction(ampere.instructions[1]) == "S2R R, SR_TID.X");
  CHECK(normalize_instruction(ampere.instructions[3]) ==
        "ISETP.GE.AND P, PT, R, c[0x0][0x160], PT");
  CHECK(normalize_instruction(ampere.instructions[4]) == "@P EXIT");
  CHECK(normalize_instruction(ampere.instructions[11]) == "LDSM.16.M88.4 R, [R+0x800]");
  CHECK(normalize_instruction(ampere.instructions[13]) == "HMMA.16816.F32 R, R, R, R");
  CHECK(normalize_instruction(ampere.instructions[15]) == "LOP3.LUT R, R, 0x38, RZ, 0xc0, !PT");
  CHECK(normalize_instruction(ampere.instructions[17]) == "@P BRA <target>");
  CHECK(normalize_instruction(ampere.instructions[18]) == "STG.E.128 desc[UR][R.64], R");
  const SassFunction hopper = sample()[1];
  CHECK(normalize_instruction(hopper.instructions[11]) == "@P BRA <target>");
  // The same loop on two architectures differs only where the code does.
  CHECK(normalize_instruction(ampere.instructions[12]) ==
        normalize_instruction(hopper.instructions[5]));
}

TEST_CASE("the line diff is a shortest edit script that rebuilds both sides") {
  const std::vector<std::string> before = {"a", "b", "c", "d", "e", "f", "g"};
  const std::vector<std::string> after = {"a", "x", "c", "d", "f", "g", "h"};
  const LineDiff diff = diff_lines(before, after);
  CHECK_FALSE(diff.truncated);
  CHECK(diff.removed == 2);  // b, e
  CHECK(diff.added == 2);    // x, h
  std::vector<std::string> left, right;
  for (const DiffLine& line : diff.lines) {
    if (line.kind != DiffKind::added) left.push_back(before[*line.before]);
    if (line.kind != DiffKind::removed) right.push_back(after[*line.after]);
    if (line.kind == DiffKind::same) CHECK(before[*line.before] == after[*line.after]);
  }
  CHECK(left == before);
  CHECK(right == after);

  CHECK(diff_lines(before, before).removed == 0);
  CHECK(diff_lines({}, after).added == after.size());
  CHECK(diff_lines(before, {}).removed == before.size());

  // Over the edit cap the script is still valid, just not minimal.
  const LineDiff capped = diff_lines(before, after, 1);
  CHECK(capped.truncated);
  std::vector<std::string> capped_right;
  for (const DiffLine& line : capped.lines)
    if (line.kind != DiffKind::removed) capped_right.push_back(after[*line.after]);
  CHECK(capped_right == after);
}

TEST_CASE("the main loop is the backward branch's range with the most tensor-core instructions") {
  const SassFunction ampere = sample()[0];
  const std::vector<SassLoop> loops = find_loops(ampere);
  REQUIRE(loops.size() == 1);  // BRA 0xa0; the BRA to itself after EXIT is no loop
  CHECK(loops[0].first == 10);
  CHECK(loops[0].last == 17);
  CHECK(loops[0].tensor_core_instructions == 2);
  const auto main = main_loop(ampere);
  REQUIRE(main);
  CHECK(main->first == 10);

  const auto hopper = main_loop(sample()[1]);
  REQUIRE(hopper);
  CHECK(hopper->first == 4);
  CHECK(hopper->last == 11);
  CHECK(is_tensor_core_opcode("HGMMA"));
  CHECK(is_tensor_core_opcode("HMMA"));
  CHECK_FALSE(is_tensor_core_opcode("MMA"));
  CHECK_FALSE(is_tensor_core_opcode("LDSM"));
}

TEST_CASE("ptxas resources of each entry and architecture (real nvcc 13.0 output)") {
  const std::vector<PtxasResources> entries =
      parse_ptxas_log(data_file("ptxas_s08_sm80_sm90a.log"), "log");
  REQUIRE(entries.size() == 2);
  CHECK(entries[0].arch == "sm_80");
  CHECK(entries[1].arch == "sm_90a");
  for (const PtxasResources& entry : entries) {
    CHECK(demangle(entry.function).find("flashscope::v08::flash_forward_kernel") !=
          std::string::npos);
    CHECK(entry.registers == 255);
    CHECK(entry.barriers == 1);
    CHECK(entry.spill_store_bytes == 52);
  }
  CHECK(entries[0].stack_frame_bytes == 24);
  CHECK(entries[0].spill_load_bytes == 36);
  CHECK(entries[1].stack_frame_bytes == 32);
  CHECK(entries[1].spill_load_bytes == 40);

  // A device function's properties do not land on the entry; an entry must report registers.
  const std::string log =
      "ptxas info    : Function properties for helper\n"
      "    8 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads\n"
      "ptxas info    : Compiling entry function 'kernel' for 'sm_80'\n"
      "ptxas info    : Function properties for kernel\n"
      "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
      "ptxas info    : Used 32 registers, 352 bytes cmem[0]\n";
  const auto simple = parse_ptxas_log(log, "log");
  REQUIRE(simple.size() == 1);
  CHECK(simple[0].registers == 32);
  CHECK(simple[0].barriers == 0);
  CHECK(simple[0].spill_store_bytes == 0);
  CHECK_THROWS_WITH(
      parse_ptxas_log("ptxas info    : Compiling entry function 'k' for 'sm_80'\n", "l"),
      doctest::Contains("l:1: entry k for sm_80 has no 'Used N registers' line"));
}

TEST_CASE("kernels.tsv and manifest.txt round-trip; bad rows name the line and column") {
  std::vector<SassKernelRecord> records = {
      record(8, "(FP16, 128, 128, 64, 4): async+eager+swizzled+load_2_2_2_tiles", "sm_80"),
      record(9, "(BF16, 128, 128, 64, 4): async+eager+swizzled+load_2_2_2_tiles", "sm_90a")};
  records[0].instructions = 2216;
  records[0].listing = "listings/s08/x.sm_80.sass.gz";
  records[1].spill_load_bytes = 8;
  const std::vector<SassKernelRecord> again =
      parse_kernel_index(format_kernel_index(records), "kernels.tsv");
  REQUIRE(again.size() == 2);
  CHECK(again[0].config == records[0].config);
  CHECK(again[0].instructions == 2216);
  CHECK(again[0].listing == records[0].listing);
  CHECK(again[1].arch == "sm_90a");
  CHECK_FALSE(again[1].instructions.has_value());
  CHECK(again[1].spill_load_bytes == 8);

  std::string text = format_kernel_index(records);
  text.replace(text.find("\t108\t"), 5, "\tmany\t");  // step 8's registers
  CHECK_THROWS_WITH_AS(
      parse_kernel_index(text, "k.tsv"),
      doctest::Contains("k.tsv:2: column 'registers': 'many' is not a non-negative integer"),
      SassArtifactError);
  CHECK_THROWS_WITH_AS(parse_kernel_index("step\tconfig\n", "k.tsv"),
                       doctest::Contains("k.tsv:1: the header is not the kernels.tsv header"),
                       SassArtifactError);

  const SassManifest manifest = {{"commit", "abc"}, {"disassembler", "cuobjdump 13.0.88"}};
  CHECK(parse_manifest(format_manifest(manifest), "m") == manifest);
  CHECK_THROWS_WITH_AS(parse_manifest("commit abc\n", "m.txt"),
                       doctest::Contains("m.txt:1: expected 'key: value'"), SassArtifactError);
}

TEST_CASE("an artifact on disk: listings load by function, compressed where zlib is built in") {
  const fs::path dir = scratch_dir("artifact");
  const std::vector<SassFunction> functions = sample();
  SassKernelRecord ampere =
      record(9, "(FP16, 128, 128, 64, 4): async+eager+swizzled+load_2_2_2_tiles", "sm_80");
  ampere.function = functions[0].name;
  ampere.listing = "listings/s09/k.sm_80" + std::string(listing_extension());
  ampere.instructions = static_cast<int>(functions[0].instructions.size());
  write_text_file(dir / ampere.listing, write_sass_listing(functions[0]));
  SassKernelRecord hopper = ampere;
  hopper.arch = "sm_90a";
  hopper.listing.clear();
  hopper.instructions.reset();
  write_text_file(dir / "kernels.tsv", format_kernel_index({ampere, hopper}));
  write_text_file(dir / "manifest.txt", format_manifest({{"commit", "abc"}}));

  const SassArtifact artifact = SassArtifact::load(dir);
  CHECK(artifact.has_listings());
  CHECK(artifact.architectures() == std::vector<std::string>{"sm_80", "sm_90a"});
  CHECK(artifact.steps() == std::vector<int>{9});
  const SassKernelRecord* found = artifact.find(9, ampere.config, "sm_80");
  REQUIRE(found != nullptr);
  CHECK(artifact.load_function(*found).instructions.size() == functions[0].instructions.size());
  CHECK_THROWS_WITH_AS(artifact.load_function(*artifact.find(9, ampere.config, "sm_90a")),
                       doctest::Contains("no listing of step 9"), SassArtifactError);
  if (have_gzip()) {
    std::ifstream raw(dir / ampere.listing, std::ios::binary);
    unsigned char magic[2] = {};
    raw.read(reinterpret_cast<char*>(magic), 2);
    CHECK(magic[0] == 0x1f);  // gzip
    CHECK(magic[1] == 0x8b);
  }
  CHECK_THROWS_WITH_AS(SassArtifact::load(dir / "absent"),
                       doctest::Contains("no SASS artifact manifest"), SassArtifactError);

  // The build's artifact without listings loses to a shipped one that has them.
  const fs::path build = scratch_dir("build_artifact");
  write_text_file(build / "kernels.tsv", format_kernel_index({hopper}));
  write_text_file(build / "manifest.txt", format_manifest({{"disassembler", "none"},
                                                           {"disassembler_note", "no cuobjdump"}}));
  const fs::path results = scratch_dir("results");
  fs::create_directories(results / "h200" / "sass");
  fs::copy(dir, results / "h200" / "sass", fs::copy_options::recursive);
  const SassSource chosen = find_sass_source({}, build, results);
  REQUIRE(chosen.artifact);
  CHECK(chosen.artifact->directory() == results / "h200" / "sass");
  CHECK(chosen.note.find("no cuobjdump") != std::string::npos);
  const SassSource ptxas_only = find_sass_source({}, build, scratch_dir("no_results"));
  REQUIRE(ptxas_only.artifact);
  CHECK(ptxas_only.artifact->directory() == build);
  CHECK(ptxas_only.note.find("ptxas resources only") != std::string::npos);
}

TEST_CASE("which kernel a step is compared with") {
  const std::string step7 =
      "(FP16, 128, 64, 64, 4): async+eager+swizzled+load_0_2_2_tiles+opt_softmax";
  const std::string a100_8 = "(FP16, 128, 128, 64, 4): async+eager+swizzled+load_2_2_2_tiles";
  const std::string a100_10 =
      "(FP16, 128, 128, 64, 4): async+eager+swizzled+load_2_2_2_tiles+opt_softmax";
  const fs::path dir = scratch_dir("selection");
  std::vector<SassKernelRecord> records = {record(7, step7, "sm_80"), record(8, a100_8, "sm_80"),
                                           record(8, step7, "sm_80"), record(9, a100_8, "sm_80"),
                                           record(10, a100_10, "sm_80")};
  write_text_file(dir / "kernels.tsv", format_kernel_index(records));
  write_text_file(dir / "manifest.txt", format_manifest({{"commit", "abc"}}));
  const SassArtifact artifact = SassArtifact::load(dir);

  const auto same =
      previous_step_counterpart(artifact, *artifact.find(9, parse_short_form(a100_8), "sm_80"));
  REQUIRE(same);
  CHECK(same->record->step == 8);
  CHECK(same->relation == "same config");
  // Step 8's A100 pick has no step-7 twin here: the seed's 7 -> 8 starts from 7's progression
  // config.
  const auto from_progression =
      previous_step_counterpart(artifact, *artifact.find(8, parse_short_form(a100_8), "sm_80"));
  REQUIRE(from_progression);
  CHECK(from_progression->record->config == parse_short_form(step7));
  CHECK(from_progression->relation == "step 7's progression config");
  // Step 10's A100 pick against step 9's A100 pick.
  const auto pick =
      previous_step_counterpart(artifact, *artifact.find(10, parse_short_form(a100_10), "sm_80"));
  REQUIRE(pick);
  CHECK(pick->record->step == 9);
  CHECK(pick->relation == "step 9's seed A100 pick");
  CHECK_FALSE(
      previous_step_counterpart(artifact, *artifact.find(7, parse_short_form(step7), "sm_80")));

  // Without its headline config, a step is shown with its first kernel of the dtype.
  const KernelConfig headline9 = configs::with_dtype(configs::headline_config(9), DType::FP16);
  CHECK(default_kernel(artifact, 9, "sm_80")->config ==
        (headline9 == parse_short_form(a100_8) ? headline9 : parse_short_form(a100_8)));
  CHECK(default_kernel(artifact, 8, "sm_90a") == nullptr);
  CHECK(default_kernel(artifact, 9, "sm_80", DType::BF16)->config.dtype ==
        DType::FP16);  // none in BF16

  CHECK(is_progression_kernel(7, parse_short_form(step7), false));
  CHECK(is_progression_kernel(8, parse_short_form(step7), true));   // step 7's pick, built at 8
  CHECK(is_progression_kernel(7, parse_short_form(a100_8), true));  // step 8's pick, built at 7
  CHECK_FALSE(is_progression_kernel(7, parse_short_form(a100_8), false));
  CHECK_FALSE(is_progression_kernel(8, parse_short_form(step7), false));
  CHECK(
      is_progression_kernel(9, configs::with_dtype(parse_short_form(a100_8), DType::BF16), false));
}

TEST_CASE("backward steps: their picks are kept, one entry kernel each, compared within the pass") {
  const int b1 = kFirstBackwardStep;
  const int b2 = b1 + 1;
  const KernelConfig b1_config = *configs::step_picks(b1).progression;
  const KernelConfig b2_config = *configs::step_picks(b2).progression;
  const KernelConfig last_forward = configs::headline_config(configs::kLastStep);
  // A backward instantiation compiles three kernels; kernels.tsv sorts them by mangled name, and
  // here the preprocess kernel comes first.
  const auto named = [](SassKernelRecord r, const std::string& function) {
    r.function = function;
    return r;
  };
  SassKernelRecord b1_record;
  b1_record.step = b1;
  b1_record.config = b1_config;
  b1_record.arch = "sm_90a";
  b1_record.registers = 100;
  SassKernelRecord b2_record = b1_record;
  b2_record.step = b2;
  b2_record.config = b2_config;
  SassKernelRecord forward = b1_record;
  forward.step = configs::kLastStep;
  forward.config = last_forward;
  forward.function = "_ZN10flashscope3v2920flash_forward_kernelEv";
  const std::string pre = "_ZN10flashscope3b0126backward_preprocess_kernelEv";
  const std::string post = "_ZN10flashscope3b0127backward_postprocess_kernelEv";
  const std::string main_b1 = "_ZN10flashscope3b0121flash_backward_kernelEv";
  const std::string main_b2 = "_ZN10flashscope3b0221flash_backward_kernelEv";
  const fs::path dir = scratch_dir("backward");
  write_text_file(dir / "kernels.tsv",
                  format_kernel_index({forward, named(b1_record, pre), named(b1_record, main_b1),
                                       named(b1_record, post), named(b2_record, pre),
                                       named(b2_record, main_b2)}));
  write_text_file(dir / "manifest.txt", format_manifest({{"commit", "abc"}}));
  const SassArtifact artifact = SassArtifact::load(dir);

  CHECK(is_entry_kernel_name(main_b1));
  CHECK(is_entry_kernel_name(forward.function));
  CHECK_FALSE(is_entry_kernel_name(pre));
  CHECK_FALSE(is_entry_kernel_name("_Z9"));  // not a mangled name: taken as it is

  const SassKernelRecord* entry = artifact.find(b1, b1_config, "sm_90a");
  REQUIRE(entry != nullptr);
  CHECK(entry->function == main_b1);
  CHECK(artifact.kernels_of(b1, "sm_90a").size() == 1);  // one per config, not per function
  const auto functions = artifact.functions_of(b1, b1_config, "sm_90a");
  REQUIRE(functions.size() == 3);
  CHECK(functions.front() == entry);
  CHECK(default_kernel(artifact, b1, "sm_90a")->function == main_b1);

  // B2 is compared with B1, and B1 with nothing: never with the forward's last step.
  const auto against_b1 =
      previous_step_counterpart(artifact, *artifact.find(b2, b2_config, "sm_90a"));
  REQUIRE(against_b1);
  CHECK(against_b1->record == entry);
  CHECK_FALSE(previous_step_counterpart(artifact, *entry));

  // `flashscope-sass export --progression-only` keeps the backward picks (it dropped them while
  // only steps 1..kLast had picks), at every head dimension the step declares.
  CHECK(is_progression_kernel(b1, b1_config, false));
  CHECK(is_progression_kernel(b1, configs::with_dtype(b1_config, DType::BF16), false));
  for (const KernelConfig& other : configs::step_picks(b1).progression_at_other_d_heads)
    CHECK(is_progression_kernel(b1, other, false));
  CHECK(is_progression_kernel(b2, b1_config, true));  // B1's pick built at B2
  if (!(last_forward == b1_config)) CHECK_FALSE(is_progression_kernel(b1, last_forward, true));
  // The forward steps' configs at their other head dimensions count too (steps 22+).
  for (const KernelConfig& other : configs::step_picks(22).progression_at_other_d_heads)
    CHECK(is_progression_kernel(22, other, false));
}

TEST_CASE("merging a build of some steps into an artifact: provenance, overlap and raw samples") {
  // Two versions of one function: the sample's sm_80 kernel and the same with one operand changed.
  std::vector<SassFunction> functions = {sample().at(0), sample().at(0)};
  REQUIRE_FALSE(functions[1].instructions.empty());
  functions[1].instructions[0].operands += ", R9";
  const auto write = [&](const fs::path& dir, const std::vector<std::pair<int, int>>& steps,
                         const std::string& commit) {
    // steps: (step, which version of the function its listing holds)
    std::vector<SassKernelRecord> records;
    for (const auto& [step, which] : steps) {
      SassKernelRecord r =
          record(step, "(FP16, 128, 128, 64, 4): async+eager+swizzled+load_2_2_2_tiles", "sm_80");
      const SassFunction& function = functions[static_cast<std::size_t>(which)];
      r.function = function.name;
      r.arch = function.arch;
      const std::string id = "s" + std::to_string(step) + "_fp16";
      r.listing = "listings/s" + std::to_string(step) + "/" + id + "." + r.arch +
                  std::string(listing_extension());
      r.instructions = static_cast<int>(function.instructions.size());
      write_text_file(dir / r.listing, write_sass_listing(function));
      write_text_file(dir / "raw" / (id + ".cuobjdump-sass.txt"), write_sass_listing(function));
      records.push_back(r);
    }
    write_text_file(dir / "kernels.tsv", format_kernel_index(records));
    write_text_file(
        dir / "manifest.txt",
        format_manifest({{"commit", commit},
                         {"nvcc", "13.0.88"},
                         {"disassembler", "cuobjdump 13.0.85"},
                         {"made_on", commit == "old" ? "H100" : "H200"},
                         {"created_utc", commit == "old" ? "2026-01-01" : "2026-02-01"}}));
  };
  const fs::path root = scratch_dir("merge");
  write(root / "base", {{1, 0}, {2, 0}, {3, 0}, {5, 0}, {6, 1}}, "old");
  // Step 5 rebuilt unchanged, step 6 changed, step 7 new.
  write(root / "with", {{5, 0}, {6, 0}, {7, 0}}, "new");
  const std::string summary = merge_artifacts(root / "base", root / "with", root / "out", false);
  CHECK(summary.find("steps 1-3 of") != std::string::npos);
  const SassArtifact merged = SassArtifact::load(root / "out");
  CHECK(merged.steps() == std::vector<int>{1, 2, 3, 5, 6, 7});
  CHECK(merged.manifest_value("commit") == "new");
  CHECK(merged.manifest_value("steps") == "1-3,5-7");
  CHECK(merged.manifest_value("part.1") ==
        "steps 1-3 | commit old | nvcc 13.0.88 | disassembler cuobjdump 13.0.85 | made_on H100 | "
        "created_utc 2026-01-01");
  CHECK(merged.manifest_value("part.2").starts_with("steps 5-7 | commit new |"));
  // Described by its parts, not as the newest build's alone.
  CHECK(merged.describe().find(
            "(merged: steps 1-3 from commit old on H100; steps 5-7 from commit new on H200)") !=
        std::string::npos);
  CHECK(merged.describe().find("made_on") == std::string::npos);
  const std::string overlap = merged.manifest_value("overlap_check");
  CHECK(overlap.find("step 5: 1 of 1 kernels instruction-identical in both") != std::string::npos);
  CHECK(overlap.find("step 6: 0 of 1 kernels instruction-identical in both (differ in "
                     "instructions: ") != std::string::npos);
  // Every kept record's listing loads; the raw samples of the replaced steps are gone.
  for (const SassKernelRecord& r : merged.kernels())
    CHECK(merged.load_function(r).instructions.size() == static_cast<std::size_t>(*r.instructions));
  CHECK(fs::exists(root / "out" / "raw" / "s1_fp16.cuobjdump-sass.txt"));
  CHECK(fs::exists(root / "out" / "raw" / "s7_fp16.cuobjdump-sass.txt"));
  CHECK(merged.load_function(*merged.find(6, merged.kernels().back().config, functions[0].arch))
            .instructions.size() == functions[0].instructions.size());

  // A kernel whose only change is an immediate (a parameter offset) is told apart from one whose
  // instructions changed.
  SassFunction shifted = functions[0];
  shifted.instructions[0].operands = "R1, RZ, RZ, c[0x0][0x2a8]";
  SassFunction reordered = functions[0];
  std::swap(reordered.instructions[0], reordered.instructions[1]);
  CHECK_FALSE(same_instructions(functions[0], shifted));
  CHECK(same_but_immediates(functions[0], shifted));
  CHECK_FALSE(same_but_immediates(functions[0], reordered));
  CHECK_FALSE(same_but_immediates(functions[0], functions[1]));  // an operand more

  // Merging again into the merged artifact keeps its parts for the steps it keeps.
  write(root / "newer", {{3, 0}}, "newer");
  merge_artifacts(root / "out", root / "newer", root / "out2", false);
  const SassArtifact twice = SassArtifact::load(root / "out2");
  const std::vector<SassPart> parts = artifact_parts(twice.manifest());
  REQUIRE(parts.size() == 3);
  CHECK(parts[0].steps == std::set<int>{1, 2});
  CHECK(parts[0].text.find("commit old") != std::string::npos);
  CHECK(parts[1].steps == std::set<int>{5, 6, 7});
  CHECK(parts[2].steps == std::set<int>{3});

  // The destination must be new or empty, or an earlier artifact with --replace.
  CHECK_THROWS_WITH_AS(merge_artifacts(root / "base", root / "with", root / "out", false),
                       doctest::Contains("is not empty"), SassArtifactError);
  CHECK_NOTHROW(merge_artifacts(root / "base", root / "with", root / "out", true));
  CHECK_THROWS_WITH_AS(merge_artifacts(root / "base", root / "with", root / "base", true),
                       doctest::Contains("is one of the artifacts merged"), SassArtifactError);
  CHECK(step_list_text({1, 2, 4, 5, 6, 101}) == "1,2,4-6,101");
}
