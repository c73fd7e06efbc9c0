// GPU references against the fp64 CPU reference on fresh random inputs, and the §1.4 rule.
#include <doctest/doctest.h>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <chrono>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iostream>
#include <vector>

#include "kernels/common/cuda_check.hpp"
#include "kernels/common/device_buffer.hpp"
#include "kernels/common/fp8_reference.hpp"
#include "kernels/common/reference.hpp"
#include "tests/support/device_tensors.hpp"

using namespace flashscope;
using namespace flashscope::testing;

TEST_CASE("GPU references agree with the fp64 CPU reference") {
  const std::uint64_t seed = fresh_seed();
  for (const DType dtype : {DType::FP16, DType::BF16}) {
    for (const Problem shape : {multi_head_problem(DType::FP16, 1, 64, 1, 128),
                                multi_head_problem(DType::FP16, 2, 96, 3, 128),
                                multi_head_problem(DType::FP16, 1, 200, 2, 64)}) {
      CAPTURE(dtype_lower_name(dtype));
      CAPTURE(shape.seq_len);
      MESSAGE("seed " << seed);
      const AttentionInputs inputs(of_dtype(shape, dtype), seed, 1.0f);
      const std::vector<double> expected =
          cpu_attention_fp64(shape, inputs.q_host(), inputs.k_host(), inputs.v_host());
      DeviceTensor out(shape.query_elements(), dtype);
      for (const ReferencePrecision precision :
           {ReferencePrecision::fp32, ReferencePrecision::low_precision}) {
        gpu_reference_attention(of_dtype(shape, dtype), precision, inputs.q(), inputs.k(),
                                inputs.v(), out.data());
        FS_CUDA_CHECK(cudaDeviceSynchronize());
        const std::vector<double> got = out.to_host();
        double max_error = 0;
        for (std::size_t i = 0; i < got.size(); ++i)
          max_error = std::max(max_error, std::abs(got[i] - expected[i]));
        // fp32 math then one rounding: within the dtype's half-ulp near |o| < 4 plus fp32 noise;
        // the low-precision path rounds S and P too.
        const double ulp = dtype == DType::FP16 ? 0x1p-10 : 0x1p-7;
        const double bound = precision == ReferencePrecision::fp32 ? 2 * ulp : 8 * ulp;
        CAPTURE(static_cast<int>(precision));
        CHECK(max_error <= bound);
        CHECK(max_error > 0);  // fp16/bf16 outputs cannot equal fp64 exactly on random data
      }
    }
  }
}

TEST_CASE("GPU references with the causal mask agree with the fp64 CPU reference") {
  const std::uint64_t seed = fresh_seed();
  MESSAGE("seed " << seed);
  for (const DType dtype : {DType::FP16, DType::BF16}) {
    // 200 rows: CTAs of 16 rows and tiles of 32 keys cross the diagonal at every offset, and
    // the last CTA is partial; 64 x 256 reaches the largest head dimension.
    for (Problem shape : {multi_head_problem(DType::FP16, 2, 200, 3, 128),
                          multi_head_problem(DType::FP16, 1, 64, 1, 256),
                          multi_head_problem(DType::FP16, 1, 1, 2, 64)}) {
      shape.causal = true;
      CAPTURE(dtype_lower_name(dtype));
      CAPTURE(shape.seq_len);
      CAPTURE(shape.d_head);
      const AttentionInputs inputs(of_dtype(shape, dtype), seed, 1.0f);
      const std::vector<double> expected =
          cpu_attention_fp64(shape, inputs.q_host(), inputs.k_host(), inputs.v_host());
      Problem unmasked = shape;
      unmasked.causal = false;
      const std::vector<double> without_mask =
          cpu_attention_fp64(unmasked, inputs.q_host(), inputs.k_host(), inputs.v_host());
      DeviceTensor out(shape.query_elements(), dtype);
      for (const ReferencePrecision precision :
           {ReferencePrecision::fp32, ReferencePrecision::low_precision}) {
        gpu_reference_attention(of_dtype(shape, dtype), precision, inputs.q(), inputs.k(),
                                inputs.v(), out.data());
        FS_CUDA_CHECK(cudaDeviceSynchronize());
        const std::vector<double> got = out.to_host();
        double max_error = 0, max_gap_to_unmasked = 0;
        for (std::size_t i = 0; i < got.size(); ++i) {
          max_error = std::max(max_error, std::abs(got[i] - expected[i]));
          max_gap_to_unmasked = std::max(max_gap_to_unmasked, std::abs(got[i] - without_mask[i]));
        }
        // Rows with few keys average few V rows: |o| reaches about 3, so the bounds of the
        // unmasked test get one more factor of 2.
        const double ulp = dtype == DType::FP16 ? 0x1p-10 : 0x1p-7;
        const double bound = precision == ReferencePrecision::fp32 ? 4 * ulp : 16 * ulp;
        CAPTURE(static_cast<int>(precision));
        CHECK(max_error <= bound);
        // A reference that ignored the mask would sit far from the masked answer (query 0's
        // output is V's row 0, not an average of every row); a one-row problem has no mask.
        if (shape.seq_len > 1) CHECK(max_gap_to_unmasked > 0.25);
      }
      // ReferenceOutputs carries the mask: the check passes R_32 and fails the unmasked output.
      const ReferenceOutputs references(of_dtype(shape, dtype), inputs.q(), inputs.k(), inputs.v());
      CHECK(references.check(references.fp32()).passed);
      if (shape.seq_len > 1) {
        DeviceTensor unmasked_out(shape.query_elements(), dtype);
        gpu_reference_attention(of_dtype(unmasked, dtype), ReferencePrecision::low_precision,
                                inputs.q(), inputs.k(), inputs.v(), unmasked_out.data());
        CHECK_FALSE(references.check(unmasked_out.data()).passed);
      }
    }
  }
}

TEST_CASE("GPU references with grouped K/V heads agree with the fp64 CPU reference") {
  const std::uint64_t seed = fresh_seed();
  MESSAGE("seed " << seed);
  // Group sizes 1, 2, 3 (an odd one), 8 and all heads (heads_kv = 1), with and without the mask.
  for (const auto& [heads, heads_kv] :
       {std::pair{4, 4}, std::pair{4, 2}, std::pair{6, 2}, std::pair{8, 1}, std::pair{8, 8}}) {
    for (const DType dtype : {DType::FP16, DType::BF16})
      for (const bool causal : {false, true}) {
        Problem problem = multi_head_problem(dtype, 2, 96, heads, 64, causal);
        problem.heads_kv = heads_kv;
        CAPTURE(heads);
        CAPTURE(heads_kv);
        CAPTURE(causal);
        CAPTURE(dtype_lower_name(dtype));
        const AttentionInputs inputs(problem, seed, 1.0f);
        const std::vector<double> expected =
            cpu_attention_fp64(problem, inputs.q_host(), inputs.k_host(), inputs.v_host());
        DeviceTensor out(problem.query_elements(), dtype);
        gpu_reference_attention(problem, ReferencePrecision::fp32, inputs.q(), inputs.k(),
                                inputs.v(), out.data());
        FS_CUDA_CHECK(cudaDeviceSynchronize());
        const std::vector<double> got = out.to_host();
        double max_error = 0;
        for (std::size_t i = 0; i < got.size(); ++i)
          max_error = std::max(max_error, std::abs(got[i] - expected[i]));
        const double ulp = dtype == DType::FP16 ? 0x1p-10 : 0x1p-7;
        CHECK(max_error <= 4 * ulp);
      }
  }
}

TEST_CASE("the §1.4 check passes the fp32 reference and fails corrupted outputs") {
  const std::uint64_t seed = fresh_seed();
  MESSAGE("seed " << seed);
  const Problem shape = multi_head_problem(DType::FP16, 2, 256, 4, 128);
  for (const DType dtype : {DType::FP16, DType::BF16}) {
    const AttentionInputs inputs(of_dtype(shape, dtype), seed, 1.0f);
    const ReferenceOutputs references(of_dtype(shape, dtype), inputs.q(), inputs.k(), inputs.v());
    const double err_ref = references.reference_gap();
    CHECK(err_ref > 0);
    DeviceTensor out(shape.query_elements(), dtype);
    const std::size_t bytes = static_cast<std::size_t>(shape.query_elements()) * 2;
    // The threshold itself: R_lp with one element moved by 1.9·err_ref must pass and by
    // 2.1·err_ref must fail. The element is R_lp's smallest in magnitude, where fp16/bf16 steps
    // are finest, and the shift actually stored is read back, so rounding cannot decide.
    FS_CUDA_CHECK(
        cudaMemcpy(out.data(), references.low_precision(), bytes, cudaMemcpyDeviceToDevice));
    const std::vector<double> r_lp = out.to_host();
    std::int64_t smallest = 0;
    for (std::size_t i = 0; i < r_lp.size(); ++i)
      if (std::abs(r_lp[i]) < std::abs(r_lp[static_cast<std::size_t>(smallest)]))
        smallest = static_cast<std::int64_t>(i);
    for (const double factor : {1.9, 2.1}) {
      CAPTURE(factor);
      FS_CUDA_CHECK(
          cudaMemcpy(out.data(), references.low_precision(), bytes, cudaMemcpyDeviceToDevice));
      out.add_to_element(smallest, factor * err_ref);
      const double shift = std::abs(out.to_host()[static_cast<std::size_t>(smallest)] -
                                    r_lp[static_cast<std::size_t>(smallest)]);
      REQUIRE(shift == doctest::Approx(factor * err_ref).epsilon(0.02));
      const CorrectnessVerdict verdict = references.check(out.data());
      CHECK(verdict.err_kernel == doctest::Approx(shift));
      CHECK(verdict.err_ref == doctest::Approx(err_ref));
      CHECK(verdict.passed == (factor < 2));
    }
    // A poisoned (never written) output fails with NaNs counted.
    poison_output(out.data(), dtype, shape.query_elements());
    const CorrectnessVerdict poisoned = references.check(out.data());
    CHECK_FALSE(poisoned.passed);
    CHECK(poisoned.nan_count == shape.query_elements());
    // One element off by 1.0 fails; the summary says so.
    FS_CUDA_CHECK(cudaMemcpy(out.data(), references.fp32(), shape.query_elements() * 2,
                             cudaMemcpyDeviceToDevice));
    out.add_to_element(12345, 1.0);
    const CorrectnessVerdict corrupted = references.check(out.data());
    CHECK_FALSE(corrupted.passed);
    CHECK(corrupted.err_kernel >= 0.9);
    CHECK(corrupted.summary().starts_with("FAIL"));
  }
}

TEST_CASE("random inputs are a pure function of the seed and standard normal") {
  const std::int64_t count = 1 << 20;
  DeviceTensor a(count, DType::BF16), b(count, DType::BF16);
  fill_random_normal(a.data(), DType::BF16, count, 42, 1.0f);
  fill_random_normal(b.data(), DType::BF16, count, 42, 1.0f);
  const ErrorStats same = compare_outputs(a.data(), b.data(), DType::BF16, count);
  CHECK(same.max_abs == 0);
  fill_random_normal(b.data(), DType::BF16, count, 43, 1.0f);
  CHECK(compare_outputs(a.data(), b.data(), DType::BF16, count).max_abs > 1);
  const std::vector<double> values = a.to_host();
  double mean = 0, square = 0;
  for (const double x : values)
    mean += x / count, square += x * x / count;
  CHECK(std::abs(mean) < 0.01);
  CHECK(std::abs(square - 1.0) < 0.02);
}

TEST_CASE("the accuracy step's quantizer: outlier channels, fp8::rotate_rows, fp8::quantize") {
  const int batch = 2, seq_len = 96, heads = 3;
  for (const int d_head : {64, 128, 256}) {
    INFO("d_head " << d_head);
    const std::size_t count = static_cast<std::size_t>(batch) * seq_len * heads * d_head;
    const DeviceBuffer values(count * sizeof(float));
    float* const device_values = static_cast<float*>(values.get());
    const auto download = [&] {
      std::vector<float> host(count);
      FS_CUDA_CHECK(
          cudaMemcpy(host.data(), device_values, count * sizeof(float), cudaMemcpyDeviceToHost));
      return std::vector<double>(host.begin(), host.end());
    };
    fill_random_fp32(device_values, batch, seq_len, heads, d_head, 7, 1.0f, /*outliers=*/true);
    const std::vector<double> drawn = download();
    // Each outlier channel is the plain draw x kOutlierFactor; the others N(0, 1).
    double outlier_square = 0, plain_square = 0;
    std::size_t outlier_count = 0;
    for (std::size_t i = 0; i < count; ++i) {
      bool outlier = false;
      for (int c = 0; c < kOutlierChannels; ++c)
        outlier = outlier || static_cast<int>(i % d_head) == outlier_channel(c, d_head);
      (outlier ? outlier_square : plain_square) += drawn[i] * drawn[i];
      outlier_count += outlier;
    }
    CHECK(outlier_count == count / d_head * kOutlierChannels);
    const double ratio = std::sqrt(outlier_square / outlier_count /
                                   (plain_square / static_cast<double>(count - outlier_count)));
    CHECK(ratio > 0.8 * kOutlierFactor);
    CHECK(ratio < 1.2 * kOutlierFactor);

    // The device rotation is fp8::rotate_rows (fp32 against fp64: a few ulps of the row's norm).
    const std::vector<int> signs = fp8::rotation_signs(d_head, 11);
    const std::vector<float> sign_values(signs.begin(), signs.end());
    const DeviceBuffer device_signs(sign_values.size() * sizeof(float));
    FS_CUDA_CHECK(cudaMemcpy(device_signs.get(), sign_values.data(),
                             sign_values.size() * sizeof(float), cudaMemcpyHostToDevice));
    rotate_rows_fp32(device_values, static_cast<std::int64_t>(count / d_head), d_head,
                     static_cast<const float*>(device_signs.get()));
    const std::vector<double> rotated = download();
    std::vector<double> expected = drawn;
    fp8::rotate_rows(expected, signs);
    double largest_difference = 0;
    for (std::size_t i = 0; i < count; ++i)
      largest_difference = std::max(largest_difference, std::abs(rotated[i] - expected[i]));
    CHECK(largest_difference < 1e-4);

    // Blocks of 32 positions (the last of 96 whole) and of 40 (the last partial): the descales
    // are fp8::quantize's; a code differs only where x / descale in fp32 and x · scale in fp64
    // round to neighbours, by one code.
    for (const int block_rows : {32, 40, seq_len}) {
      INFO("block_rows " << block_rows);
      const fp8::QuantizedTensor cpu =
          fp8::quantize(rotated, batch, seq_len, heads, d_head, block_rows);
      const DeviceBuffer codes(count), descales(cpu.descales.size() * sizeof(float));
      quantize_e4m3(device_values, codes.get(), static_cast<float*>(descales.get()), batch, seq_len,
                    heads, d_head, block_rows);
      std::vector<std::uint8_t> gpu_codes(count);
      std::vector<float> gpu_descales(cpu.descales.size());
      FS_CUDA_CHECK(cudaMemcpy(gpu_codes.data(), codes.get(), count, cudaMemcpyDeviceToHost));
      FS_CUDA_CHECK(cudaMemcpy(gpu_descales.data(), descales.get(),
                               gpu_descales.size() * sizeof(float), cudaMemcpyDeviceToHost));
      for (std::size_t i = 0; i < gpu_descales.size(); ++i)
        CHECK(gpu_descales[i] == doctest::Approx(cpu.descales[i]).epsilon(1e-6));
      std::size_t different = 0;
      for (std::size_t i = 0; i < count; ++i) {
        if (gpu_codes[i] == cpu.codes[i]) continue;
        ++different;
        CHECK(std::abs(static_cast<int>(gpu_codes[i]) - static_cast<int>(cpu.codes[i])) == 1);
      }
      CHECK(different <= count / 1000);
    }
    // power_of_two_ratios: each block's descale is the head's largest times 2^-k, the smallest
    // such that still covers the block (at least its own amax / 448, less than twice it).
    const int block_rows = 32, blocks = seq_len / block_rows;
    const fp8::QuantizedTensor own =
        fp8::quantize(rotated, batch, seq_len, heads, d_head, block_rows);
    const DeviceBuffer codes(count), descales(own.descales.size() * sizeof(float));
    quantize_e4m3(device_values, codes.get(), static_cast<float*>(descales.get()), batch, seq_len,
                  heads, d_head, block_rows, nullptr, /*power_of_two_ratios=*/true);
    std::vector<float> ratios_descales(own.descales.size());
    FS_CUDA_CHECK(cudaMemcpy(ratios_descales.data(), descales.get(),
                             ratios_descales.size() * sizeof(float), cudaMemcpyDeviceToHost));
    for (int head = 0; head < batch * heads; ++head) {
      // The head's largest as the device computed it (amax / 448 in fp32 there; fp8::quantize's
      // divides in fp64, which may round the other way): the block that keeps it, k = 0.
      float largest = 0;
      for (int block = 0; block < blocks; ++block)
        largest = std::max(largest, ratios_descales[head * blocks + block]);
      for (int block = 0; block < blocks; ++block) {
        const float descale = ratios_descales[head * blocks + block];
        const float block_own = own.descales[head * blocks + block];
        int exponent = 0;
        CHECK(std::frexp(largest / descale, &exponent) == 0.5);  // a power of two
        CHECK(descale >= block_own * (1 - 1e-6f));
        CHECK(descale < 2 * block_own);
      }
    }
  }
}
