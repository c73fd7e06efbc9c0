// The FP8 track's host side (docs/spec/fp8-track.md): the e4m3 format against its definition and
// a brute-force nearest-code search, the quantizer's error bound, the references on a problem
// worked by hand and the rule.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <ios>
#include <limits>
#include <random>

#include "kernels/common/fp8_reference.hpp"

using namespace flashscope;

namespace {

// The e4m3 code nearest to `value` found by scanning every finite code (ties to the code with an
// even last mantissa bit), saturating at ±448: an oracle that shares nothing with fp8::encode.
std::uint8_t nearest_code_by_search(double value) {
  const bool negative = std::signbit(value);
  const double magnitude = std::min(std::fabs(value), fp8::kMax);
  int best = 0;
  double best_distance = std::numeric_limits<double>::infinity();
  for (int code = 0; code <= fp8::kMaxCode; ++code) {
    const double distance = std::fabs(fp8::decode(static_cast<std::uint8_t>(code)) - magnitude);
    if (distance < best_distance || (distance == best_distance && (code & 1) == 0)) {
      best = code;
      best_distance = distance;
    }
  }
  return static_cast<std::uint8_t>(best | (negative ? 0x80 : 0));
}

Problem fp8_problem(int batch, int seq_len, int heads, int d_head, bool causal = false) {
  return multi_head_problem(DType::E4M3, batch, seq_len, heads, d_head, causal);
}

std::vector<double> normal_values(std::size_t count, std::uint32_t seed, double scale = 1.0) {
  std::mt19937 generator(seed);
  std::normal_distribution<double> normal(0.0, scale);
  std::vector<double> values(count);
  for (double& value : values)
    value = normal(generator);
  return values;
}

}  // namespace

TEST_CASE("e4m3: every one of the 256 codes decodes and encodes back to itself") {
  for (int code = 0; code < 256; ++code) {
    const auto bits = static_cast<std::uint8_t>(code);
    const double value = fp8::decode(bits);
    INFO("code 0x" << std::hex << code);
    CHECK(fp8::encode(value) == bits);
    // The sign bit is the value's sign, zero and NaN included.
    CHECK(std::signbit(value) == ((code & 0x80) != 0));
  }
  // Exactly two NaNs (S.1111.111) and no infinity; the positive finite codes increase strictly.
  int nans = 0;
  for (int code = 0; code < 256; ++code) {
    const double value = fp8::decode(static_cast<std::uint8_t>(code));
    nans += std::isnan(value);
    CHECK_FALSE(std::isinf(value));
  }
  CHECK(nans == 2);
  CHECK(std::isnan(fp8::decode(0x7F)));
  CHECK(std::isnan(fp8::decode(0xFF)));
  for (int code = 1; code <= fp8::kMaxCode; ++code)
    CHECK(fp8::decode(static_cast<std::uint8_t>(code)) >
          fp8::decode(static_cast<std::uint8_t>(code - 1)));
}

TEST_CASE("e4m3: known values") {
  CHECK(fp8::decode(0x7E) == 448.0);  // the largest finite value, 1.75 x 2^8
  CHECK(fp8::decode(0xFE) == -448.0);
  CHECK(fp8::decode(0x01) == 0x1p-9);      // the smallest subnormal
  CHECK(fp8::decode(0x07) == 7 * 0x1p-9);  // the largest subnormal
  CHECK(fp8::decode(0x08) == 0x1p-6);      // the smallest normal
  CHECK(fp8::decode(0x38) == 1.0);
  CHECK(fp8::decode(0x3C) == 1.5);
  CHECK(fp8::decode(0x77) == 240.0);
  CHECK(fp8::decode(0x78) == 256.0);
  CHECK(fp8::decode(0x00) == 0.0);
  CHECK(std::signbit(fp8::decode(0x80)));
  CHECK(fp8::encode(448.0) == 0x7E);
  CHECK(fp8::encode(0x1p-9) == 0x01);
  CHECK(fp8::encode(1.0) == 0x38);
  CHECK(fp8::encode(-1.5) == 0xBC);
  CHECK(fp8::encode(-0.0) == 0x80);
}

TEST_CASE("e4m3: rounding is to nearest, ties to the even code") {
  CHECK(fp8::encode(1.0625) == 0x38);                       // 1 | 1.125: tie, mantissa 000 is even
  CHECK(fp8::encode(1.1875) == 0x3A);                       // 1.125 | 1.25: tie, to 1.25 (010)
  CHECK(fp8::encode(std::nextafter(1.0625, 2.0)) == 0x39);  // just past the tie: up
  CHECK(fp8::encode(std::nextafter(1.1875, 0.0)) == 0x39);  // just before it: down
  CHECK(fp8::encode(0x1p-10) == 0x00);                      // half the smallest subnormal: to zero
  CHECK(fp8::encode(std::nextafter(0x1p-10, 1.0)) == 0x01);
  CHECK(fp8::encode(3 * 0x1p-10) == 0x02);   // 2^-9 | 2^-8: tie, to 2^-8 (even)
  CHECK(fp8::encode(15 * 0x1p-10) == 0x08);  // largest subnormal | 2^-6: to the normal
  CHECK(fp8::encode(1.9375) == 0x40);        // 1.875 | 2: carries into the next binade
  CHECK(fp8::encode(-1.9375) == 0xC0);
  CHECK(fp8::encode(432.0) == 0x7E);  // 416 | 448: tie, to 448 (110)
  CHECK(fp8::encode(std::nextafter(432.0, 0.0)) == 0x7D);
}

TEST_CASE("e4m3: saturation and NaN") {
  // No infinity to overflow to: everything beyond 448 saturates (cvt.rn.satfinite).
  for (const double big :
       {448.5, 464.0, 480.0, 1e6, 1e300, std::numeric_limits<double>::infinity()})
    CHECK(fp8::encode(big) == 0x7E);
  CHECK(fp8::encode(-1e6) == 0xFE);
  CHECK(fp8::encode(-std::numeric_limits<double>::infinity()) == 0xFE);
  CHECK(fp8::encode(std::numeric_limits<double>::quiet_NaN()) == 0x7F);
  CHECK(fp8::encode(-std::numeric_limits<double>::quiet_NaN()) == 0xFF);
  CHECK(std::isnan(fp8::round_to_e4m3(std::numeric_limits<double>::quiet_NaN())));
}

TEST_CASE("e4m3: encode agrees with a brute-force nearest-code search") {
  std::mt19937 generator(35);
  // Magnitudes spread over the whole range, subnormals and saturation included, and every tie.
  std::uniform_real_distribution<double> log2_magnitude(-12.0, 9.5);
  for (int i = 0; i < 20000; ++i) {
    const double value = std::exp2(log2_magnitude(generator)) * (i % 2 == 0 ? 1 : -1);
    INFO("value " << value);
    REQUIRE(fp8::encode(value) == nearest_code_by_search(value));
  }
  for (int code = 0; code < fp8::kMaxCode; ++code) {
    const double tie = (fp8::decode(static_cast<std::uint8_t>(code)) +
                        fp8::decode(static_cast<std::uint8_t>(code + 1))) /
                       2;
    INFO("tie above code " << code);
    CHECK(fp8::encode(tie) == nearest_code_by_search(tie));
  }
}

TEST_CASE("bf16 rounding: ties to even, and the float bit pattern's rounding") {
  CHECK(fp8::round_to_bf16(1.0 + 0x1p-8) == 1.0);               // 1 | 1 + 2^-7: tie, to 1
  CHECK(fp8::round_to_bf16(1.0 + 3 * 0x1p-8) == 1.0 + 0x1p-6);  // tie, to the even mantissa
  CHECK(fp8::round_to_bf16(-3.9375) == -3.9375);                // 6 significant bits: exact
  CHECK(std::isinf(fp8::round_to_bf16(1e39)));
  // Against rounding a float's bit pattern to its top 16 bits (the way bf16 is defined).
  std::mt19937 generator(16);
  std::uniform_real_distribution<float> uniform(-1000.0f, 1000.0f);
  for (int i = 0; i < 10000; ++i) {
    const float value = uniform(generator);
    std::uint32_t bits = 0;
    std::memcpy(&bits, &value, sizeof bits);
    const std::uint32_t rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000u;
    float expected = 0;
    std::memcpy(&expected, &rounded, sizeof expected);
    REQUIRE(fp8::round_to_bf16(value) == static_cast<double>(expected));
  }
}

TEST_CASE("quantization per (sample, head): each amax lands on 448, every error within bounds") {
  const int batch = 2, seq_len = 40, heads = 3, d_head = 16;
  std::vector<double> values =
      normal_values(static_cast<std::size_t>(batch) * seq_len * heads * d_head, 7);
  // One (sample, head) much larger than the rest: its scale must not leak into the others'.
  for (int s = 0; s < seq_len; ++s)
    for (int c = 0; c < d_head; ++c)
      values[((static_cast<std::size_t>(1) * seq_len + s) * heads + 2) * d_head + c] *= 50;
  const fp8::QuantizedTensor tensor = fp8::quantize_per_head(values, batch, seq_len, heads, d_head);
  REQUIRE(tensor.descales.size() == static_cast<std::size_t>(batch) * heads);
  REQUIRE(tensor.blocks() == 1);
  const std::vector<double> back = fp8::dequantize(tensor);
  for (int b = 0; b < batch; ++b)
    for (int h = 0; h < heads; ++h) {
      double amax = 0;
      bool saw_max_code = false;
      for (int s = 0; s < seq_len; ++s)
        for (int c = 0; c < d_head; ++c) {
          const std::size_t i =
              ((static_cast<std::size_t>(b) * seq_len + s) * heads + h) * d_head + c;
          amax = std::max(amax, std::fabs(values[i]));
          saw_max_code = saw_max_code || (tensor.codes[i] & 0x7F) == fp8::kMaxCode;
        }
      const double descale = tensor.descale_at(b, 0, h);
      CHECK(descale == doctest::Approx(amax / 448.0).epsilon(1e-7));
      CHECK(saw_max_code);
      for (int s = 0; s < seq_len; ++s)
        for (int c = 0; c < d_head; ++c) {
          const std::size_t i =
              ((static_cast<std::size_t>(b) * seq_len + s) * heads + h) * d_head + c;
          // Scaled, an element y = x x 448 / amax rounds by at most half a spacing: |y| / 16 in
          // the normal range (three mantissa bits), 2^-10 among the subnormals; the fp32 descale
          // adds at most 2^-24 relative.
          const double y = values[i] * 448.0 / amax;
          const double bound =
              descale * std::max(std::fabs(y) / 16, 0x1p-10) + std::fabs(back[i]) * 0x1p-23;
          INFO("element " << i << " value " << values[i] << " back " << back[i]);
          CHECK(std::fabs(back[i] - values[i]) <= bound);
        }
    }
}

TEST_CASE("block quantization keeps a quiet block's precision next to a loud one") {
  // One (sample, head), 64 positions: the first 32 around 1e-3, the last 32 around 100. Scaled
  // per head, the quiet block falls among e4m3's subnormals (4.48e-3 x its values < 2^-6); per
  // block of 32 rows it gets its own scale and three significant bits.
  const int seq_len = 64, d_head = 8;
  std::vector<double> values(static_cast<std::size_t>(seq_len) * d_head);
  for (std::size_t i = 0; i < values.size(); ++i)
    values[i] = std::sin(static_cast<double>(i) + 0.5) * (i < values.size() / 2 ? 1e-3 : 100.0);
  const std::vector<double> per_head =
      fp8::dequantize(fp8::quantize_per_head(values, 1, seq_len, 1, d_head));
  const fp8::QuantizedTensor blocks = fp8::quantize(values, 1, seq_len, 1, d_head, 32);
  REQUIRE(blocks.descales.size() == 2);
  CHECK(blocks.descale_at(0, 0, 0) < blocks.descale_at(0, 63, 0));
  const std::vector<double> per_block = fp8::dequantize(blocks);
  double quiet_error_head = 0, quiet_error_block = 0, quiet_amax = 0;
  for (std::size_t i = 0; i < values.size() / 2; ++i) {
    quiet_error_head = std::max(quiet_error_head, std::fabs(per_head[i] - values[i]));
    quiet_error_block = std::max(quiet_error_block, std::fabs(per_block[i] - values[i]));
    quiet_amax = std::max(quiet_amax, std::fabs(values[i]));
  }
  // Per block: half a spacing at most, 1/16 of the block's amax.
  CHECK(quiet_error_block <= quiet_amax / 16);
  // Per head (scale 448 / 100), the quiet block sits among the subnormals, spaced 2^-9 / 4.48 =
  // 4.4e-4 apart in real units: its 256 elements miss by up to half that, 2.2e-4, more than three
  // times the per-block bound of 1e-3 / 16 (measured: 6 x the per-block error).
  CHECK(quiet_error_block * 3 < quiet_error_head);
  // The loud block's scale is the same either way.
  for (std::size_t i = values.size() / 2; i < values.size(); ++i)
    CHECK(per_block[i] == per_head[i]);
}

TEST_CASE("quantization rejects what it cannot quantize") {
  CHECK_THROWS_WITH_AS(fp8::quantize({1.0, 2.0}, 1, 1, 1, 4, 1),
                       doctest::Contains("2 values for a [1, 1, 1, 4] tensor"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(fp8::quantize({1.0, 2.0}, 1, 2, 1, 1, 3),
                       doctest::Contains("block_rows 3 is not in 1..2"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(fp8::quantize({1.0, std::numeric_limits<double>::infinity()}, 1, 2, 1, 1, 2),
                       doctest::Contains("element (0, 1, 0, 0) is not finite"),
                       std::invalid_argument);
  // An all-zero tensor quantizes to zeros with descale 1.
  const fp8::QuantizedTensor zeros = fp8::quantize_per_head({0.0, 0.0}, 1, 2, 1, 1);
  CHECK(zeros.descales == std::vector<float>{1.0f});
  CHECK(fp8::dequantize(zeros) == std::vector<double>{0.0, 0.0});
}

TEST_CASE("the FP8 references on a problem worked by hand") {
  // One sample, one head, two positions, d_head 4 (softmax scale 1/2). Every amax is 448 x 2^-k,
  // so the descales are exact and the inputs dequantize to themselves.
  // q0 = (3.5,0,0,0), q1 = 0; k0 = (1.75,0,0,0), k1 = (1.5,1.75,0,0);
  // v0 = (0.875, 1.75, 3.5, 7), v1 = (7, 3.5, 1.75, 0.875).
  // Row 0: scores (3.5 x 1.75 / 2, 3.5 x 1.5 / 2) = (3.0625, 2.625), so its probabilities are
  // 1 / (1 + e^-0.4375) and the rest; row 1: (0, 0), so O1 = (v0 + v1) / 2.
  const Problem problem = fp8_problem(1, 2, 1, 4);
  const std::vector<double> q = {3.5, 0, 0, 0, 0, 0, 0, 0};
  const std::vector<double> k = {1.75, 0, 0, 0, 1.5, 1.75, 0, 0};
  const std::vector<double> v = {0.875, 1.75, 3.5, 7, 7, 3.5, 1.75, 0.875};
  const fp8::QuantizedInputs inputs{fp8::quantize_per_head(q, 1, 2, 1, 4),
                                    fp8::quantize_per_head(k, 1, 2, 1, 4),
                                    fp8::quantize_per_head(v, 1, 2, 1, 4)};
  CHECK(inputs.q.descales == std::vector<float>{0x1p-7f});
  CHECK(inputs.k.descales == std::vector<float>{0x1p-8f});
  CHECK(inputs.v.descales == std::vector<float>{0x1p-6f});
  CHECK(fp8::dequantize(inputs.k) == k);
  CHECK(fp8::dequantize(inputs.v) == v);

  const std::vector<double> exact = fp8::reference_exact(problem, inputs);
  const double p0 = 1 / (1 + std::exp(-0.4375));
  for (int c = 0; c < 4; ++c) {
    CHECK(exact[c] == doctest::Approx(p0 * v[c] + (1 - p0) * v[4 + c]).epsilon(1e-14));
    CHECK(exact[4 + c] == (v[c] + v[4 + c]) / 2);
  }

  // R_lp, row 0: P x 256 = (256, 256 e^-0.4375 = 165.29...) rounds to (256, 160) in e4m3 (spacing
  // 16 in [128, 256)); the row sum is taken before rounding. Row 1: (256, 256), exact.
  // Written out in the kernel's precisions: the sums are exact in fp32 (256 x 0.875 + 160 x 7
  // ...), the row sum and the division are fp32, then O is rounded to bf16.
  const std::vector<double> low = fp8::reference_low_precision(problem, inputs);
  const float row_sum = 1.0f + std::exp(-0.4375f);
  for (int c = 0; c < 4; ++c) {
    const float o = static_cast<float>(256 * v[c] + 160 * v[4 + c]) / (256.0f * row_sum);
    CHECK(low[c] == fp8::round_to_bf16(o));
    CHECK(low[4 + c] == exact[4 + c]);  // 3.9375, 2.625: exact in bf16
  }
  // P's rounding (165.29 -> 160) shows through the bf16 output: without it row 0 would read
  // 3.278 where R_lp has 3.19.
  const float unrounded =
      static_cast<float>(256 * v[0] + 256 * std::exp(-0.4375) * v[4]) / (256.0f * row_sum);
  CHECK(low[0] != fp8::round_to_bf16(unrounded));
  CHECK(std::fabs(low[0] - exact[0]) > 0.05);
}

TEST_CASE("the FP8 rule: R_lp passes, an error beyond twice its gap plus the floor fails") {
  const Problem problem = fp8_problem(1, 64, 4, 64, /*causal=*/true);
  Problem grouped = problem;
  grouped.heads_kv = 2;  // grouped-query attention: the references read K/V head h / 2
  for (const Problem& p : {problem, grouped}) {
    const std::size_t q_count = static_cast<std::size_t>(p.query_elements());
    const std::size_t kv_count = static_cast<std::size_t>(p.key_value_elements());
    const fp8::QuantizedInputs inputs{
        fp8::quantize_per_head(normal_values(q_count, 1), 1, 64, p.heads, 64),
        fp8::quantize_per_head(normal_values(kv_count, 2), 1, 64, p.heads_kv, 64),
        fp8::quantize_per_head(normal_values(kv_count, 3), 1, 64, p.heads_kv, 64)};
    const std::vector<double> exact = fp8::reference_exact(p, inputs);
    const std::vector<double> low = fp8::reference_low_precision(p, inputs);
    const fp8::Verdict itself = fp8::check(low, exact, low);
    INFO(itself.summary());
    CHECK(itself.passed);
    CHECK(itself.err_lp > 0);
    // Unit-normal V averaged by a softmax: e4m3's P costs well under 10 % of the output's range.
    double max_exact = 0;
    for (const double value : exact)
      max_exact = std::max(max_exact, std::fabs(value));
    CHECK(itself.err_lp < 0.1 * max_exact);
    CHECK(itself.floor == fp8::error_floor(max_exact));

    std::vector<double> off = exact;
    off[q_count / 2] += 2 * itself.err_lp + 2 * itself.floor;
    const fp8::Verdict wrong = fp8::check(off, exact, low);
    INFO(wrong.summary());
    CHECK_FALSE(wrong.passed);
    CHECK(wrong.err_kernel == doctest::Approx(2 * itself.err_lp + 2 * itself.floor));

    std::vector<double> poisoned = exact;
    poisoned[3] = std::numeric_limits<double>::quiet_NaN();
    const fp8::Verdict nan = fp8::check(poisoned, exact, low);
    CHECK_FALSE(nan.passed);
    CHECK(nan.nan_count == 1);
  }
}

TEST_CASE("the row-sampled references equal the full ones at their rows, bit for bit") {
  // Two samples, grouped K/V heads, causal and not: the sweep checks e4m3 rows on such samples.
  for (const bool causal : {false, true}) {
    Problem p = fp8_problem(2, 96, 4, 64, causal);
    p.heads_kv = 2;
    const std::size_t q_count = static_cast<std::size_t>(p.query_elements());
    const std::size_t kv_count = static_cast<std::size_t>(p.key_value_elements());
    const fp8::QuantizedInputs inputs{
        fp8::quantize_per_head(normal_values(q_count, 11), 2, 96, p.heads, 64),
        fp8::quantize_per_head(normal_values(kv_count, 12), 2, 96, p.heads_kv, 64),
        fp8::quantize_per_head(normal_values(kv_count, 13), 2, 96, p.heads_kv, 64)};
    const fp8::RowSample sample = fp8::spread_rows(p, 5);
    REQUIRE(sample.rows.size() == 10);
    // Positions 0 and seq_len - 1 in sample 0 head 0 and in the last sample's last head.
    CHECK(sample.rows.front().position == 0);
    CHECK(sample.rows[4].position == 95);
    CHECK(sample.rows[5].batch_index == 1);
    CHECK(sample.rows[5].head == 3);
    const std::vector<double> exact = fp8::reference_exact(p, inputs);
    const std::vector<double> low = fp8::reference_low_precision(p, inputs);
    CHECK(fp8::reference_exact_rows(p, inputs, sample) == fp8::gather_rows(p, exact, sample));
    CHECK(fp8::reference_low_precision_rows(p, inputs, sample) == fp8::gather_rows(p, low, sample));
  }
  // One (sample, head) pair: its rows are not listed twice.
  CHECK(fp8::spread_rows(fp8_problem(1, 8, 1, 16), 4).rows.size() == 4);
  CHECK(fp8::spread_rows(fp8_problem(1, 3, 1, 16), 8).rows.size() == 3);
  CHECK(fp8::spread_rows(fp8_problem(2, 8, 2, 16), 0).rows.empty());

  const Problem p = fp8_problem(1, 4, 1, 4);
  const fp8::QuantizedTensor t = fp8::quantize_per_head(std::vector<double>(16, 1.0), 1, 4, 1, 4);
  fp8::RowSample outside;
  outside.rows.push_back({0, 0, 4});
  CHECK_THROWS_WITH_AS(fp8::reference_exact_rows(p, {t, t, t}, outside),
                       doctest::Contains("position 4) is outside the problem's 1 x 1 x 4"),
                       std::invalid_argument);
  CHECK_THROWS_AS(fp8::gather_rows(p, std::vector<double>(3), fp8::spread_rows(p, 2)),
                  std::invalid_argument);
}

TEST_CASE("the rule's floor and the references' argument checks") {
  CHECK(fp8::error_floor(1.0) == 0x1p-7);  // bf16 has 8 significant bits
  CHECK(fp8::error_floor(3.0) == 0x1p-6);
  CHECK(fp8::error_floor(0.0) == 0x1p-133);
  // Where R_lp equals R_ref, only the floor separates a correct bf16 output from a failure.
  const std::vector<double> exact = {1.0, 2.0};
  // The floor at max |R_ref| = 2 is 2^-6: an error of 2^-8 passes, 2^-5 does not.
  CHECK(fp8::check({1.0 + 0x1p-8, 2.0}, exact, exact).passed);
  CHECK(fp8::check({1.0 + 0x1p-6, 2.0}, exact, exact).passed);
  CHECK_FALSE(fp8::check({1.0 + 0x1p-5, 2.0}, exact, exact).passed);
  CHECK_THROWS_AS(fp8::check({1.0}, exact, exact), std::invalid_argument);

  const fp8::QuantizedTensor t = fp8::quantize_per_head(std::vector<double>(8, 1.0), 1, 2, 1, 4);
  CHECK_THROWS_WITH_AS(fp8::reference_exact(multi_head_problem(DType::BF16, 1, 2, 1, 4), {t, t, t}),
                       doctest::Contains("the problem's dtype is bf16, not e4m3"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(fp8::reference_low_precision(fp8_problem(1, 4, 1, 4), {t, t, t}),
                       doctest::Contains("q is not a quantized [batch, seq_len, heads, d_head]"),
                       std::invalid_argument);
}

TEST_CASE("the rotation of §4.2 is orthogonal: norms and Q·Kᵀ are kept, unrotate inverts it") {
  constexpr int kD = 64, kRows = 12;
  const std::vector<int> signs = fp8::rotation_signs(kD, 2026);
  // The signs are a pure function of (d, seed), and both signs occur.
  CHECK(signs == fp8::rotation_signs(kD, 2026));
  CHECK(signs != fp8::rotation_signs(kD, 2027));
  const auto negative = std::count(signs.begin(), signs.end(), -1);
  CHECK(negative > 8);
  CHECK(negative < kD - 8);

  const std::vector<double> q = normal_values(kRows * kD, 1), k = normal_values(kRows * kD, 2);
  std::vector<double> q_rotated = q, k_rotated = k;
  fp8::rotate_rows(q_rotated, signs);
  fp8::rotate_rows(k_rotated, signs);
  const auto dot = [](const std::vector<double>& a, int i, const std::vector<double>& b, int j) {
    double sum = 0;
    for (int c = 0; c < kD; ++c)
      sum += a[i * kD + c] * b[j * kD + c];
    return sum;
  };
  for (int i = 0; i < kRows; ++i) {
    CHECK(dot(q_rotated, i, q_rotated, i) == doctest::Approx(dot(q, i, q, i)).epsilon(1e-12));
    for (int j = 0; j < kRows; ++j)
      CHECK(dot(q_rotated, i, k_rotated, j) ==
            doctest::Approx(dot(q, i, k, j)).epsilon(1e-10).scale(1.0));
  }
  // The rotation changes the rows (it is no identity) and unrotate_rows brings them back.
  CHECK(std::fabs(q_rotated[0] - q[0]) > 1e-6);
  fp8::unrotate_rows(q_rotated, signs);
  for (std::size_t i = 0; i < q.size(); ++i)
    CHECK(q_rotated[i] == doctest::Approx(q[i]).epsilon(1e-12));
}

TEST_CASE("the rotation spreads one large channel over all of them") {
  // A row that is one channel of 64: every rotated entry has magnitude 64 / sqrt(64) = 8, so the
  // row's amax, which sets its e4m3 scale, drops by sqrt(d); the fast transform agrees with the
  // d x d Sylvester matrix H_{ij} = (-1)^popcount(i & j).
  constexpr int kD = 64;
  const std::vector<int> signs = fp8::rotation_signs(kD, 7);
  for (int channel : {0, 5, 63}) {
    std::vector<double> row(kD, 0.0);
    row[channel] = 64.0;
    fp8::rotate_rows(row, signs);
    for (int i = 0; i < kD; ++i) {
      const int parity = __builtin_popcount(static_cast<unsigned>(i & channel)) & 1;
      CHECK(row[i] == doctest::Approx((parity ? -8.0 : 8.0) * signs[channel]));
    }
  }
}

TEST_CASE("the rotation refuses what it cannot rotate, naming the value and the rule") {
  CHECK_THROWS_WITH_AS(fp8::rotation_signs(96, 1),
                       "fp8::rotation_signs: d_head must be a power of two, not 96",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(fp8::rotation_signs(0, 1),
                       "fp8::rotation_signs: d_head must be a power of two, not 0",
                       std::invalid_argument);
  std::vector<double> values(10, 1.0);
  CHECK_THROWS_WITH_AS(fp8::rotate_rows(values, {1, -1, 1, 1}),
                       "fp8::rotate_rows: 10 values are not a whole number of rows of 4",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(fp8::rotate_rows(values, {1, -1, 1}),
                       "fp8::rotate_rows: the row length (d_head) must be a power of two for the "
                       "fast Walsh-Hadamard transform, not 3",
                       std::invalid_argument);
  std::vector<double> eight(8, 1.0);
  CHECK_THROWS_WITH_AS(fp8::unrotate_rows(eight, {1, 0, 1, 1}),
                       "fp8::unrotate_rows: sign 1 is 0, not +1 or -1", std::invalid_argument);
}
