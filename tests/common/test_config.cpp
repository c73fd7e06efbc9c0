#include <doctest/doctest.h>

#include <algorithm>
#include <set>
#include <string>

#include "configs/config_sets.hpp"
#include "kernels/common/config.hpp"

using namespace flashscope;

namespace {

std::vector<KernelConfig> every_config_of_every_set() {
  std::vector<KernelConfig> all = configs::progression();
  for (const auto& set : {configs::extended_progression(), configs::tune_candidates(),
                          configs::tune_set(), configs::build_list()})
    all.insert(all.end(), set.begin(), set.end());
  for (int step = configs::kFirstStep; step <= configs::kLastStep; ++step) {
    const configs::StepPicks picks = configs::step_picks(step);
    for (const auto& pick : {picks.progression, picks.seed_a100, picks.seed_rtx3090, picks.hopper})
      if (pick) all.push_back(*pick);
  }
  std::vector<KernelConfig> with_bf16 = all;
  for (const KernelConfig& c : all)
    with_bf16.push_back(configs::with_dtype(c, DType::BF16));
  return with_bf16;
}

std::string parse_error(std::string_view text) {
  try {
    parse_config(text);
  } catch (const ConfigParseError& error) {
    return error.what();
  }
  return "no error";
}

const KernelConfig kStep7{DType::FP16, 128, 64, 64, 4, true, true, true, 0, 2, 2, false, true};

}  // namespace

TEST_CASE("short form writer matches the spec's examples") {
  CHECK(to_short_form(configs::progression()[0]) ==
        "(FP16, 128, 64, 64, 4): async+load_0_0_0_tiles");
  CHECK(to_short_form(kStep7) ==
        "(FP16, 128, 64, 64, 4): async+eager+swizzled+load_0_2_2_tiles+opt_softmax");
  const KernelConfig bf16{DType::BF16, 128, 128, 32, 4, true, true, true, 2, 2, 0, true, false};
  CHECK(to_short_form(bf16) ==
        "(BF16, 128, 128, 32, 4): async+eager+swizzled+load_2_2_0_tiles+buffer");
  CHECK(to_short_form(bf16, ShortFormStyle::without_d_head) ==
        "(BF16, 128, 32, 4): async+eager+swizzled+load_2_2_0_tiles+buffer");
  CHECK(to_short_form(bf16, ShortFormStyle::features_only) ==
        "async+eager+swizzled+load_2_2_0_tiles+buffer");
}

TEST_CASE("short form round trip for every config of every set, both dtypes") {
  const auto all = every_config_of_every_set();
  CHECK(all.size() > 900);
  for (const KernelConfig& c : all) {
    const std::string text = to_short_form(c);
    CAPTURE(text);
    CHECK(parse_short_form(text) == c);
    CHECK(parse_config(text) == c);
    CHECK(parse_short_form("| " + text + " | 1.23 | 45 |") == c);  // markdown table row
  }
}

TEST_CASE("demangled spellings parse to the same config") {
  CHECK(parse_demangled_plain(
            "FlashForwardKernelConfig{5, 128, 64, 64, 4, 1, 1, 1, 0, 2, 2, 0, 1}") == kStep7);
  CHECK(
      parse_config(
          "FlashForwardKernelConfig{5, 128, 64, 64, 4, true, true, true, 0, 2, 2, false, true}") ==
      kStep7);
  CHECK(parse_config(
            "FlashForwardKernelConfig{(c10::ScalarType)5, (int)128, (int)64, (int)64, "
            "(int)4, (bool)1, (bool)1, (bool)1, (int)0, (int)2, (int)2, (bool)0, (bool)1}") ==
        kStep7);
  CHECK(
      parse_config("FlashForwardKernelConfig{15, 128, 64, 64, 4, 1, 1, 1, 0, 2, 2, 0, 1}").dtype ==
      DType::BF16);
}

TEST_CASE("dtype accepted case-insensitively as a name or enum integer") {
  for (const char* spelling : {"fp16", "FP16", "Fp16", "5"})
    CHECK(
        parse_short_form(std::string("(") + spelling + ", 128, 64, 64, 4): async+load_0_0_0_tiles")
            .dtype == DType::FP16);
  for (const char* spelling : {"bf16", "BF16", "15"})
    CHECK(
        parse_short_form(std::string("(") + spelling + ", 128, 64, 64, 4): async+load_0_0_0_tiles")
            .dtype == DType::BF16);
}

TEST_CASE("feature order is not checked") {
  CHECK(parse_short_form(
            "(FP16, 128, 64, 64, 4): opt_softmax+load_0_2_2_tiles+swizzled+eager+async") == kStep7);
}

TEST_CASE("every parse error names the text and the problem") {
  CHECK(parse_error("").find("the text is empty") != std::string::npos);
  CHECK(parse_error("FP16, 128, 64, 64, 4: async").find("expected \"(DTYPE") != std::string::npos);
  CHECK(parse_error("(FP16, 128, 64, 64, 4) async+load_0_0_0_tiles").find("missing \"):\"") !=
        std::string::npos);
  CHECK(parse_error("(FP16, 64, 64, 4): async+load_0_0_0_tiles").find("must hold 5 items") !=
        std::string::npos);
  CHECK(parse_error("(FP32, 128, 64, 64, 4): async+load_0_0_0_tiles").find("dtype \"FP32\"") !=
        std::string::npos);
  CHECK(parse_error("(FP16, 128, x, 64, 4): async+load_0_0_0_tiles")
            .find("B_r \"x\" is not an integer") != std::string::npos);
  CHECK(parse_error("(FP16, 128, 64, 64, 4):async+load_0_0_0_tiles").find("expected whitespace") !=
        std::string::npos);
  CHECK(parse_error("(FP16, 128, 64, 64, 4): ").find("feature list is empty") != std::string::npos);
  CHECK(parse_error("(FP16, 128, 64, 64, 4): async+eager").find("lack the required load_") !=
        std::string::npos);
  CHECK(parse_error("(FP16, 128, 64, 64, 4): async+load_0_0_0").find("must end in _tiles") !=
        std::string::npos);
  CHECK(parse_error("(FP16, 128, 64, 64, 4): async+load_0_0_tiles").find("three integers") !=
        std::string::npos);
  CHECK(parse_error("(FP16, 128, 64, 64, 4): async+load_0_a_0_tiles").find("K load \"a\"") !=
        std::string::npos);
  CHECK(parse_error("FlashForwardKernelConfig{5, 128, 64}").find("expected 13 fields") !=
        std::string::npos);
  CHECK(parse_error("FlashForwardKernelConfig{5, 128, 64, 64, 4, 2, 1, 1, 0, 2, 2, 0, 1}")
            .find("is not a boolean") != std::string::npos);
  CHECK(parse_error("Config{5}").find("FlashForwardKernelConfig{") != std::string::npos);
  CHECK(parse_error("FlashForwardKernelConfig{(c10::ScalarType)5, 128, (int)64, (int)64, (int)4, "
                    "(bool)1, (bool)1, (bool)1, (int)0, (int)2, (int)2, (bool)0, (bool)1}")
            .find("lacks its (type) cast") != std::string::npos);
}

TEST_CASE("ordering is lexicographic over the 13 fields, FP16 before BF16, false before true") {
  KernelConfig a = kStep7;
  KernelConfig b = kStep7;
  b.dtype = DType::BF16;
  CHECK(a < b);
  b = a;
  b.B_r = 128;
  b.dtype = DType::FP16;
  CHECK(a < b);
  b = a;
  a.optimized_softmax = false;
  CHECK(a < b);
  b = a;
  b.async_copy = false;
  b.optimized_softmax = true;
  CHECK(b < a);  // an earlier field decides before a later one
  const auto list = configs::build_list();
  CHECK(std::is_sorted(list.begin(), list.end()));
  CHECK(list.front().dtype == DType::FP16);
  CHECK(list.back().dtype == DType::BF16);
}

TEST_CASE("shared memory and CTAs per SM follow spec §2.4") {
  const auto smem_of = [](int B_r, int B_c) {
    KernelConfig c = kStep7;
    c.B_r = B_r;
    c.B_c = B_c;
    return smem_bytes(c);
  };
  CHECK(smem_of(64, 32) == 32 * 1024);
  CHECK(smem_of(64, 64) == 48 * 1024);
  CHECK(smem_of(128, 32) == 48 * 1024);
  CHECK(smem_of(128, 64) == 64 * 1024);
  CHECK(smem_of(128, 128) == 96 * 1024);
  KernelConfig c = kStep7;
  c.B_r = 128;
  CHECK(ctas_per_sm(c, 227 * 1024) == 2);  // Hopper: two 64 KiB CTAs fit
  CHECK(ctas_per_sm(c, 100 * 1024) == 1);  // RTX 3090: 2 x 64 KiB does not
  c.n_warps = 8;
  CHECK(ctas_per_sm(c, 227 * 1024) == 1);
  CHECK(threads_per_block(c) == 256);
  CHECK(query_rows_per_warp(kStep7) == 16);
}

TEST_CASE("static validity rules of spec §2.1") {
  CHECK(is_statically_valid(kStep7));
  KernelConfig c = kStep7;
  c.K_mma_load_K_fragments = 1;
  CHECK(std::string(static_config_violation(c)).find("power of two other than 1") !=
        std::string::npos);
  c = kStep7;
  c.Q_mma_load_K_fragments = 2;
  c.K_mma_load_K_fragments = 4;
  CHECK(std::string(static_config_violation(c)).find("must equal K's") != std::string::npos);
  c = kStep7;
  c.V_mma_load_K_fragments = 8;  // B_c / 8 = 8 allowed without buffer
  CHECK(is_statically_valid(c));
  c.mma_double_buffer_loads = true;  // halved: B_c / 16 = 4
  CHECK(std::string(static_config_violation(c)).find("V load_K_fragments exceeds") !=
        std::string::npos);
  c = kStep7;
  c.K_mma_load_K_fragments = 32;
  CHECK(std::string(static_config_violation(c)).find("Q/K load_K_fragments exceeds") !=
        std::string::npos);
  c = kStep7;
  c.n_warps = 8;  // 64 rows / 8 warps = 8 rows: not a whole m-tile
  CHECK(std::string(static_config_violation(c)).find("multiple of 16 * n_warps") !=
        std::string::npos);
}

TEST_CASE("FLOP counts") {
  CHECK(matmul_flops(16, 16, 4096, 128) == doctest::Approx(4.0 * 16 * 16 * 4096.0 * 4096 * 128));
  CHECK(seed_attention_flops(1, 1, 2, 128) == doctest::Approx(4.0 * 4 * 128 + 6.0 * 4));
}
