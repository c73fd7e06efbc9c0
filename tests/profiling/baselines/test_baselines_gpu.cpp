// GPU tests of the external references (profiling/baselines): each built reference, each cuDNN
// graph form and each way into PyTorch's FA2, against attention computed in fp64 on the host.
// Linked with the GPU test main, which reports "SKIPPED: no CUDA device (...)" when there is none
// and "SKIPPED: <reason>" for a case that had nothing to compare.
#include <doctest/doctest.h>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "kernels/common/cuda_check.hpp"
#include "kernels/common/device_buffer.hpp"
#include "profiling/baselines/baseline_attention.hpp"
#include "tests/support/gpu_presence.hpp"
#ifdef FLASHSCOPE_HAVE_CUDNN
#include "profiling/baselines/cudnn_sdpa.hpp"
#endif
#ifdef FLASHSCOPE_HAVE_TORCH_FA2
#include "profiling/baselines/torch_flash.hpp"
#endif

using namespace flashscope;

namespace {

float round_to(DType dtype, float value) {
  return dtype == DType::BF16 ? __bfloat162float(__float2bfloat16(value))
                              : __half2float(__float2half(value));
}

// 16-bit storage of `values` (already representable in `dtype`).
std::vector<std::uint16_t> encode(DType dtype, const std::vector<float>& values) {
  std::vector<std::uint16_t> bits(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (dtype == DType::BF16) {
      const __nv_bfloat16 x = __float2bfloat16(values[i]);
      bits[i] = __nv_bfloat16_raw(x).x;
    } else {
      const __half x = __float2half(values[i]);
      bits[i] = __half_raw(x).x;
    }
  }
  return bits;
}

float decode(DType dtype, std::uint16_t bits) {
  if (dtype == DType::BF16) {
    __nv_bfloat16_raw raw;
    raw.x = bits;
    return __bfloat162float(__nv_bfloat16(raw));
  }
  __half_raw raw;
  raw.x = bits;
  return __half2float(__half(raw));
}

// Standard-normal values (Box-Muller over splitmix64), rounded to `dtype`; a pure function of
// (seed, index), so failures reproduce.
std::vector<float> random_normal(DType dtype, std::int64_t count, std::uint64_t seed) {
  auto splitmix = [](std::uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
  };
  std::vector<float> values(static_cast<std::size_t>(count));
  for (std::int64_t i = 0; i < count; ++i) {
    const std::uint64_t bits = splitmix(seed * 0x100000001b3ull + static_cast<std::uint64_t>(i));
    const double u1 = (static_cast<double>(bits >> 40) + 1.0) / 16777217.0;  // (0, 1]
    const double u2 = static_cast<double>(bits & 0xffffffull) / 16777216.0;
    const double normal = std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
    values[static_cast<std::size_t>(i)] = round_to(dtype, static_cast<float>(normal));
  }
  return values;
}

// One output row of attention in fp64: O[b, i, h, :] for Q [b, N, h, d] and K, V
// [b, N, h_kv, d] (query head h reads K/V head h / (h / h_kv)); with the causal mask (s.causal),
// over keys j <= i only.
std::vector<double> attention_row(const Problem& s, const std::vector<float>& q,
                                  const std::vector<float>& k, const std::vector<float>& v, int b,
                                  int i, int h) {
  const std::int64_t row_stride = static_cast<std::int64_t>(s.heads) * s.d_head;
  const std::int64_t kv_row_stride = static_cast<std::int64_t>(s.heads_kv) * s.d_head;
  auto at = [&](int position) {
    return (static_cast<std::int64_t>(b) * s.seq_len + position) * row_stride +
           static_cast<std::int64_t>(h) * s.d_head;
  };
  auto kv_at = [&](int position) {
    return (static_cast<std::int64_t>(b) * s.seq_len + position) * kv_row_stride +
           static_cast<std::int64_t>(h / (s.heads / s.heads_kv)) * s.d_head;
  };
  const double scale = 1.0 / std::sqrt(static_cast<double>(s.d_head));
  const int keys = s.causal ? i + 1 : s.seq_len;
  std::vector<double> scores(static_cast<std::size_t>(keys));
  double max_score = -INFINITY;
  for (int j = 0; j < keys; ++j) {
    double dot = 0;
    for (int c = 0; c < s.d_head; ++c)
      dot += double(q[at(i) + c]) * double(k[kv_at(j) + c]);
    scores[j] = dot * scale;
    max_score = std::max(max_score, scores[j]);
  }
  double sum = 0;
  for (double& score : scores)
    sum += (score = std::exp(score - max_score));
  std::vector<double> out(static_cast<std::size_t>(s.d_head), 0.0);
  for (int j = 0; j < keys; ++j)
    for (int c = 0; c < s.d_head; ++c)
      out[c] += scores[j] / sum * double(v[kv_at(j) + c]);
  return out;
}

struct GpuCase {
  Problem shape;
  // Every row_step-th output row is checked, rows counted over (b, i, h) in memory order; a
  // step coprime with the head count reaches every head of every batch.
  std::int64_t row_step;
};

const std::vector<GpuCase>& gpu_cases() {
  // The causal cases: the same shapes with the mask. A step of 7 rows over 3 heads reaches
  // every query position, the first ones included, where a missing or shifted mask changes the
  // output by order 1 (query 0 sees key 0 alone).
  // The grouped cases: 32 query heads over 8 K/V heads (groups of 4), with and without the mask;
  // a step of 37 rows reaches every query head of every group.
  static const std::vector<GpuCase> cases = [] {
    const auto grouped = [](bool causal) {
      Problem problem = multi_head_problem(DType::FP16, 2, 512, 32, 128, causal);
      problem.heads_kv = 8;
      return problem;
    };
    return std::vector<GpuCase>{
        {multi_head_problem(DType::FP16, 2, 512, 3, 128), 7},
        {multi_head_problem(DType::FP16, 4, 1024, 16, 128), 37},
        {multi_head_problem(DType::FP16, 2, 512, 3, 128, true), 7},
        {multi_head_problem(DType::FP16, 4, 1024, 16, 128, true), 37},
        {grouped(false), 37},
        {grouped(true), 37},
    };
  }();
  return cases;
}

// Inputs of one case and the fp64 attention of its checked rows; computed once and shared by
// every reference.
struct CaseData {
  Problem shape;
  DType dtype;
  std::vector<std::uint16_t> q, k, v;  // dtype bits, [b, N, h, d]
  std::vector<std::int64_t> rows;
  std::vector<double> expected;  // rows.size() x d_head
};

const CaseData& case_data(std::size_t case_index, DType dtype) {
  static std::map<std::pair<std::size_t, DType>, CaseData> cache;
  const auto key = std::make_pair(case_index, dtype);
  if (const auto found = cache.find(key); found != cache.end()) return found->second;

  const GpuCase& gpu_case = gpu_cases().at(case_index);
  Problem s = gpu_case.shape;
  s.dtype = dtype;
  CaseData data{s, dtype, {}, {}, {}, {}, {}};
  const std::vector<float> q = random_normal(dtype, s.query_elements(), 1);
  const std::vector<float> k = random_normal(dtype, s.key_value_elements(), 2);
  const std::vector<float> v = random_normal(dtype, s.key_value_elements(), 3);
  data.q = encode(dtype, q);
  data.k = encode(dtype, k);
  data.v = encode(dtype, v);
  const std::int64_t rows = static_cast<std::int64_t>(s.batch) * s.seq_len * s.heads;
  for (std::int64_t row = 0; row < rows; row += gpu_case.row_step) {
    const int h = static_cast<int>(row % s.heads);
    const int i = static_cast<int>(row / s.heads % s.seq_len);
    const int b = static_cast<int>(row / s.heads / s.seq_len);
    const std::vector<double> expected = attention_row(s, q, k, v, b, i, h);
    data.rows.push_back(row);
    data.expected.insert(data.expected.end(), expected.begin(), expected.end());
  }
  return cache.emplace(key, std::move(data)).first->second;
}

struct Comparison {
  double max_abs_error = 0;
  std::int64_t nan_count = 0;
};

Comparison check_against_cpu(BaselineAttention& reference, const CaseData& data) {
  const Problem& s = data.shape;
  const std::size_t bytes = static_cast<std::size_t>(s.query_elements()) * 2;
  const std::size_t kv_bytes = static_cast<std::size_t>(s.key_value_elements()) * 2;
  const DeviceBuffer dq(bytes), dk(kv_bytes), dv(kv_bytes), dout(bytes);
  FS_CUDA_CHECK(cudaMemcpy(dq.get(), data.q.data(), bytes, cudaMemcpyHostToDevice));
  FS_CUDA_CHECK(cudaMemcpy(dk.get(), data.k.data(), kv_bytes, cudaMemcpyHostToDevice));
  FS_CUDA_CHECK(cudaMemcpy(dv.get(), data.v.data(), kv_bytes, cudaMemcpyHostToDevice));
  // All-ones bits are NaN in fp16 and bf16: an element the reference never writes shows up.
  FS_CUDA_CHECK(cudaMemset(dout.get(), 0xff, bytes));

  // A created non-blocking stream rather than the default one: a reference that ignored
  // `stream` would race the synchronisation below.
  cudaStream_t stream = nullptr;
  FS_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  reference.prepare(s);
  reference.run(dq.get(), dk.get(), dv.get(), dout.get(), stream);
  FS_CUDA_CHECK(cudaStreamSynchronize(stream));
  FS_CUDA_CHECK(cudaStreamDestroy(stream));

  std::vector<std::uint16_t> out(static_cast<std::size_t>(s.query_elements()));
  FS_CUDA_CHECK(cudaMemcpy(out.data(), dout.get(), bytes, cudaMemcpyDeviceToHost));

  Comparison result;
  for (const std::uint16_t bits : out)
    if (std::isnan(decode(data.dtype, bits))) ++result.nan_count;
  for (std::size_t r = 0; r < data.rows.size(); ++r) {
    for (int c = 0; c < s.d_head; ++c) {
      const std::size_t index = static_cast<std::size_t>(data.rows[r] * s.d_head + c);
      const double error = std::abs(double(decode(data.dtype, out[index])) -
                                    data.expected[r * static_cast<std::size_t>(s.d_head) + c]);
      result.max_abs_error = std::max(result.max_abs_error, error);
    }
  }
  return result;
}

// Measured on an H200 (both references, both shapes): max errors of about 1.5e-4 in fp16 and
// 1.2e-3 in bf16, i.e. output rounding. A layout or indexing mistake gives errors of order 1.
constexpr double kMaxAbsErrorTolerance = 2e-2;

// Which cases a reference is checked on: every one, or only those without the mask (a graph
// form that cannot express the mask, whose refusal is checked on its own).
enum class Workloads { all, unmasked };

void check_reference(BaselineAttention& reference, Workloads workloads = Workloads::all) {
  for (const DType dtype : {DType::FP16, DType::BF16}) {
    for (std::size_t case_index = 0; case_index < gpu_cases().size(); ++case_index) {
      if (workloads == Workloads::unmasked && gpu_cases()[case_index].shape.causal) continue;
      const CaseData& data = case_data(case_index, dtype);
      const Problem& s = data.shape;
      CAPTURE(dtype_lower_name(dtype));
      CAPTURE(s.batch);
      CAPTURE(s.seq_len);
      CAPTURE(s.heads);
      CAPTURE(s.heads_kv);
      CAPTURE(s.causal);
      const Comparison result = check_against_cpu(reference, data);
      MESSAGE(reference.description()
              << " | " << dtype_lower_name(dtype) << " B=" << s.batch << " N=" << s.seq_len
              << " H=" << s.heads << " H_kv=" << s.heads_kv << (s.causal ? " causal" : "")
              << ": max |O - O_fp64| = " << result.max_abs_error << " over " << data.rows.size()
              << " rows");
      CHECK(result.nan_count == 0);
      CHECK(result.max_abs_error < kMaxAbsErrorTolerance);
    }
  }
}

}  // namespace

// Each case compares something or says why it could not: a reference this binary lacks, or a
// graph form / entry point this cuDNN or libtorch does not have, is a skip with its reason
// (ctest counts it as skipped: tests/CMakeLists.txt runs every case as its own test), never a
// pass that checked nothing. The cases exist in every build for the same reason.

TEST_CASE("every built reference matches fp64 attention") {
  const std::vector<std::string> built = built_baselines();
  if (built.empty()) {
    std::string reasons;
    for (const std::string& name : known_baselines()) {
      try {
        make_baseline(name);
      } catch (const BaselineUnavailable& error) {
        reasons += std::string(reasons.empty() ? "" : "; ") + error.what();
      }
    }
    testing::skip_test_case("no reference is built into this binary (" + reasons + ")");
    return;
  }
  for (const std::string& name : built) {
    CAPTURE(name);
    const std::unique_ptr<BaselineAttention> reference = make_baseline(name);
    check_reference(*reference);
  }
}

namespace {

// The reference made by `make`, checked if it prepares here; otherwise a skip with the reason.
template <typename Make>
void check_variant(const std::string& what, Make make, Workloads workloads = Workloads::all) {
  std::unique_ptr<BaselineAttention> reference;
  try {
    reference = make();
    reference->prepare(gpu_cases().front().shape);
  } catch (const BaselineUnavailable& error) {
    testing::skip_test_case(what + " unavailable here: " + error.what());
    return;
  }
  check_reference(*reference, workloads);
}

}  // namespace

TEST_CASE("cuDNN unified graph matches fp64 attention") {
#ifdef FLASHSCOPE_HAVE_CUDNN
  // The unified SDPA operation has no causal attribute in the cuDNN this builds against: it
  // refuses the causal problem with the reason (the automatic choice takes the composite graph,
  // checked by the first case), and is checked on the problem without the mask.
  check_variant(
      "cuDNN unified graph", [] { return make_cudnn_sdpa_baseline(CudnnSdpaGraph::unified); },
      Workloads::unmasked);
  Problem causal = gpu_cases().front().shape;
  causal.causal = true;
  const std::unique_ptr<BaselineAttention> unified =
      make_cudnn_sdpa_baseline(CudnnSdpaGraph::unified);
  CHECK_THROWS_WITH_AS(unified->prepare(causal),
                       doctest::Contains("the unified graph has no causal mask"),
                       BaselineUnavailable);
#else
  check_variant("cuDNN", [] { return make_baseline("cudnn"); });
#endif
}

TEST_CASE("cuDNN composite graph matches fp64 attention") {
#ifdef FLASHSCOPE_HAVE_CUDNN
  check_variant("cuDNN composite graph",
                [] { return make_cudnn_sdpa_baseline(CudnnSdpaGraph::composite); });
#else
  check_variant("cuDNN", [] { return make_baseline("cudnn"); });
#endif
}

TEST_CASE("PyTorch FA2 in_place entry matches fp64 attention") {
#ifdef FLASHSCOPE_HAVE_TORCH_FA2
  check_variant("PyTorch FA2 entry in_place",
                [] { return make_torch_flash_baseline(TorchFlashEntry::in_place); });
#else
  check_variant("PyTorch FA2", [] { return make_baseline("fa2"); });
#endif
}

TEST_CASE("PyTorch FA2 sdpa_op entry matches fp64 attention") {
#ifdef FLASHSCOPE_HAVE_TORCH_FA2
  check_variant("PyTorch FA2 entry sdpa_op",
                [] { return make_torch_flash_baseline(TorchFlashEntry::sdpa_op); });
#else
  check_variant("PyTorch FA2", [] { return make_baseline("fa2"); });
#endif
}
