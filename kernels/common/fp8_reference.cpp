#include "kernels/common/fp8_reference.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <utility>

#include "kernels/common/reference.hpp"

namespace flashscope::fp8 {

namespace {

// `x` (>= 0) rounded to a whole number, ties to even. Written out rather than std::nearbyint,
// which follows the floating-point environment's rounding mode.
double round_half_even(double x) {
  const double whole = std::floor(x);
  const double fraction = x - whole;
  if (fraction > 0.5) return whole + 1;
  if (fraction < 0.5) return whole;
  return std::fmod(whole, 2.0) == 0 ? whole : whole + 1;
}

std::size_t element_count(int batch, int seq_len, int heads, int d_head) {
  return static_cast<std::size_t>(batch) * seq_len * heads * d_head;
}

}  // namespace

double decode(std::uint8_t code) {
  const double sign = (code & 0x80) != 0 ? -1.0 : 1.0;
  const int exponent = (code >> 3) & 0xF;
  const int mantissa = code & 0x7;
  if (exponent == 0xF && mantissa == 0x7)
    return std::copysign(std::numeric_limits<double>::quiet_NaN(), sign);
  if (exponent == 0) return sign * std::ldexp(mantissa, -9);  // subnormal: m x 2^-9
  return sign * std::ldexp(8 + mantissa, exponent - 7 - 3);   // (1 + m/8) x 2^(e - 7)
}

std::uint8_t encode(double value) {
  const std::uint8_t sign = std::signbit(value) ? 0x80 : 0x00;
  if (std::isnan(value)) return sign | kNaNCode;
  const double magnitude = std::fabs(value);
  // Everything from 448 up (infinity included) saturates; below it the nearest grid value is at
  // most 448, since 448 is the grid's top and the next step (480) does not exist.
  if (magnitude >= kMax) return sign | kMaxCode;
  // The grid spacing at `magnitude`: 2^-9 below the smallest normal, else 2^(e - 3) for
  // 2^e <= magnitude < 2^(e+1), three mantissa bits.
  int exponent = 0;
  std::frexp(magnitude, &exponent);  // magnitude = f x 2^exponent, f in [0.5, 1)
  const int e = exponent - 1;
  const double quantum = magnitude < kMinNormal ? kMinSubnormal : std::ldexp(1.0, e - 3);
  const double rounded = round_half_even(magnitude / quantum) * quantum;  // exact in a double
  if (rounded == 0) return sign;
  if (rounded < kMinNormal) return sign | static_cast<std::uint8_t>(rounded / kMinSubnormal);
  // Rounding may have carried into the next binade (15.5 x 2^e -> 2^(e+1)): take its exponent
  // from the rounded value.
  std::frexp(rounded, &exponent);
  const int biased = exponent - 1 + 7;
  const int mantissa = static_cast<int>(std::ldexp(rounded, -(exponent - 1) + 3)) - 8;
  return sign | static_cast<std::uint8_t>((biased << 3) | mantissa);
}

double round_to_e4m3(double value) {
  return decode(encode(value));
}

double round_to_bf16(double value) {
  if (std::isnan(value)) return value;
  // Through fp32 first would round twice; bf16 is fp32's top 16 bits, so round the double to 8
  // significant bits directly, ties to even, then let the float conversion be exact.
  if (value == 0 || std::isinf(value)) return value;
  int exponent = 0;
  std::frexp(value, &exponent);
  // bf16 shares fp32's exponent range: below 2^-126 the spacing stays 2^-133.
  const int e = std::max(exponent - 1, -126);
  const double quantum = std::ldexp(1.0, e - 7);
  const double magnitude = round_half_even(std::fabs(value) / quantum) * quantum;
  // Beyond bf16's largest finite value (0x7F7F: (2 - 2^-7) x 2^127) rounding goes to infinity.
  constexpr double kBf16Max = 0x1.fep127;
  if (magnitude > kBf16Max) return std::copysign(std::numeric_limits<double>::infinity(), value);
  return std::copysign(magnitude, value);
}

float QuantizedTensor::descale_at(int b, int s, int h) const {
  return descales[(static_cast<std::size_t>(b) * heads + h) * blocks() + s / block_rows];
}

double QuantizedTensor::value_at(std::size_t index) const {
  const std::size_t row = index / d_head;  // (b, s, h) flattened
  const int h = static_cast<int>(row % heads);
  const int s = static_cast<int>(row / heads % seq_len);
  const int b = static_cast<int>(row / heads / seq_len);
  return static_cast<double>(descale_at(b, s, h)) * decode(codes[index]);
}

QuantizedTensor quantize(const std::vector<double>& values, int batch, int seq_len, int heads,
                         int d_head, int block_rows) {
  if (batch <= 0 || seq_len <= 0 || heads <= 0 || d_head <= 0)
    throw std::invalid_argument("fp8::quantize: every extent must be positive");
  if (values.size() != element_count(batch, seq_len, heads, d_head))
    throw std::invalid_argument("fp8::quantize: " + std::to_string(values.size()) +
                                " values for a [" + std::to_string(batch) + ", " +
                                std::to_string(seq_len) + ", " + std::to_string(heads) + ", " +
                                std::to_string(d_head) + "] tensor");
  if (block_rows < 1 || block_rows > seq_len)
    throw std::invalid_argument("fp8::quantize: block_rows " + std::to_string(block_rows) +
                                " is not in 1.." + std::to_string(seq_len));
  QuantizedTensor out;
  out.batch = batch;
  out.seq_len = seq_len;
  out.heads = heads;
  out.d_head = d_head;
  out.block_rows = block_rows;
  out.codes.resize(values.size());
  out.descales.resize(static_cast<std::size_t>(batch) * heads * out.blocks());
  const auto index = [&](int b, int s, int h, int c) {
    return ((static_cast<std::size_t>(b) * seq_len + s) * heads + h) * d_head + c;
  };
  for (int b = 0; b < batch; ++b)
    for (int h = 0; h < heads; ++h)
      for (int block = 0; block < out.blocks(); ++block) {
        const int first = block * block_rows;
        const int last = std::min(seq_len, first + block_rows);
        double amax = 0;
        for (int s = first; s < last; ++s)
          for (int c = 0; c < d_head; ++c) {
            const double x = values[index(b, s, h, c)];
            if (!std::isfinite(x))
              throw std::invalid_argument("fp8::quantize: element (" + std::to_string(b) + ", " +
                                          std::to_string(s) + ", " + std::to_string(h) + ", " +
                                          std::to_string(c) + ") is not finite");
            amax = std::max(amax, std::fabs(x));
          }
        // An all-zero block has nothing to scale: any descale reproduces it; 1 keeps it plain.
        const double scale = amax > 0 ? kMax / amax : 1.0;
        out.descales[(static_cast<std::size_t>(b) * heads + h) * out.blocks() + block] =
            static_cast<float>(amax > 0 ? amax / kMax : 1.0);
        for (int s = first; s < last; ++s)
          for (int c = 0; c < d_head; ++c)
            out.codes[index(b, s, h, c)] = encode(values[index(b, s, h, c)] * scale);
      }
  return out;
}

QuantizedTensor quantize_per_head(const std::vector<double>& values, int batch, int seq_len,
                                  int heads, int d_head) {
  return quantize(values, batch, seq_len, heads, d_head, seq_len);
}

std::vector<double> dequantize(const QuantizedTensor& tensor) {
  std::vector<double> out(tensor.codes.size());
  for (std::size_t i = 0; i < out.size(); ++i)
    out[i] = tensor.value_at(i);
  return out;
}

namespace {

void check_inputs(const char* what, const Problem& problem, const QuantizedInputs& inputs) {
  if (const auto violation = problem_violation(problem))
    throw std::invalid_argument(std::string(what) + ": " + *violation);
  if (problem.dtype != DType::E4M3)
    throw std::invalid_argument(std::string(what) + ": the problem's dtype is " +
                                std::string(dtype_lower_name(problem.dtype)) + ", not e4m3");
  if (problem.pass != Pass::forward)
    throw std::invalid_argument(std::string(what) + ": the FP8 track is a forward pass");
  const std::pair<const char*, const QuantizedTensor*> tensors[] = {
      {"q", &inputs.q}, {"k", &inputs.k}, {"v", &inputs.v}};
  for (const auto& [name, tensor] : tensors) {
    const int heads = tensor == &inputs.q ? problem.heads : problem.heads_kv;
    if (tensor->batch != problem.batch || tensor->seq_len != problem.seq_len ||
        tensor->heads != heads || tensor->d_head != problem.d_head ||
        tensor->codes.size() !=
            element_count(problem.batch, problem.seq_len, heads, problem.d_head) ||
        tensor->descales.size() !=
            static_cast<std::size_t>(problem.batch) * heads * tensor->blocks())
      throw std::invalid_argument(
          std::string(what) + ": " + name + " is not a quantized [batch, seq_len, " +
          (tensor == &inputs.q ? "heads" : "heads_kv") + ", d_head] tensor of the problem's shape");
  }
}

}  // namespace

std::vector<double> reference_exact(const Problem& problem, const QuantizedInputs& inputs) {
  check_inputs("fp8::reference_exact", problem, inputs);
  return cpu_attention_fp64(problem, dequantize(inputs.q), dequantize(inputs.k),
                            dequantize(inputs.v));
}

namespace {

// The value of every e4m3 code, so the references index a table instead of decoding each element
// again (and never hold a decoded copy of a sweep-sized tensor).
struct DecodeTable {
  float value[256];
  DecodeTable() {
    for (int code = 0; code < 256; ++code)
      value[code] = static_cast<float>(decode(static_cast<std::uint8_t>(code)));
  }
};

// Query row i of head h of sample b, computed as reference_low_precision states (fp32 products of
// stored codes, P x 2^8 rounded to e4m3, bf16 output) into out[0, d_head). `scores` holds
// seq_len floats, `accumulator` d_head.
void low_precision_row(const Problem& problem, const QuantizedInputs& inputs,
                       const DecodeTable& table, int b, int h, int i, std::vector<float>& scores,
                       std::vector<float>& accumulator, double* out) {
  const int n = problem.seq_len;
  const int d = problem.d_head;
  const int h_kv = h / problem.group_size();
  const float softmax_scale = 1.0f / std::sqrt(static_cast<float>(d));
  const std::uint8_t* q_row =
      &inputs.q.codes[((static_cast<std::size_t>(b) * n + i) * problem.heads + h) * d];
  const auto kv_row = [&](const QuantizedTensor& t, int j) {
    return &t.codes[((static_cast<std::size_t>(b) * n + j) * problem.heads_kv + h_kv) * d];
  };
  const int keys = problem.causal ? i + 1 : n;
  const float q_descale = inputs.q.descale_at(b, i, h);
  float row_max = -INFINITY;
  for (int j = 0; j < keys; ++j) {
    // Products of two e4m3 values are exact in fp32 (4 + 4 significant bits), so only the fp32
    // accumulation rounds, as on the tensor cores.
    const std::uint8_t* k_row = kv_row(inputs.k, j);
    float dot = 0;
    for (int c = 0; c < d; ++c)
      dot += table.value[q_row[c]] * table.value[k_row[c]];
    scores[j] = dot * (q_descale * inputs.k.descale_at(b, j, h_kv) * softmax_scale);
    row_max = std::max(row_max, scores[j]);
  }
  float row_sum = 0;
  std::fill(accumulator.begin(), accumulator.end(), 0.0f);
  for (int j = 0; j < keys; ++j) {
    const float p = std::exp(scores[j] - row_max);
    row_sum += p;
    const auto p_stored =
        static_cast<float>(round_to_e4m3(static_cast<double>(p) * kProbabilityScale));
    const float v_descale = inputs.v.descale_at(b, j, h_kv);
    const std::uint8_t* v_row = kv_row(inputs.v, j);
    for (int c = 0; c < d; ++c)
      accumulator[c] += p_stored * (table.value[v_row[c]] * v_descale);
  }
  const float normalizer = static_cast<float>(kProbabilityScale) * row_sum;
  for (int c = 0; c < d; ++c)
    out[c] = round_to_bf16(accumulator[c] / normalizer);
}

// Query row i of head h of sample b in fp64 on the dequantized inputs, as cpu_attention_fp64
// computes it, into out[0, d_head).
void exact_row(const Problem& problem, const QuantizedInputs& inputs, const DecodeTable& table,
               int b, int h, int i, std::vector<double>& scores, double* out) {
  const int n = problem.seq_len;
  const int d = problem.d_head;
  const int h_kv = h / problem.group_size();
  const double scale = 1.0 / std::sqrt(static_cast<double>(d));
  const std::size_t q_offset = ((static_cast<std::size_t>(b) * n + i) * problem.heads + h) * d;
  const auto kv_offset = [&](int j) {
    return ((static_cast<std::size_t>(b) * n + j) * problem.heads_kv + h_kv) * d;
  };
  const double q_descale = inputs.q.descale_at(b, i, h);
  const int keys = problem.causal ? i + 1 : n;
  double row_max = -INFINITY;
  for (int j = 0; j < keys; ++j) {
    const double k_descale = inputs.k.descale_at(b, j, h_kv);
    const std::size_t k_offset = kv_offset(j);
    double dot = 0;
    for (int c = 0; c < d; ++c)
      dot += q_descale * table.value[inputs.q.codes[q_offset + c]] *
             (k_descale * table.value[inputs.k.codes[k_offset + c]]);
    scores[j] = dot * scale;
    row_max = std::max(row_max, scores[j]);
  }
  double row_sum = 0;
  for (int j = 0; j < keys; ++j)
    row_sum += scores[j] = std::exp(scores[j] - row_max);
  std::fill(out, out + d, 0.0);
  for (int j = 0; j < keys; ++j) {
    const double p = scores[j] / row_sum;
    const double v_descale = inputs.v.descale_at(b, j, h_kv);
    const std::size_t v_offset = kv_offset(j);
    for (int c = 0; c < d; ++c)
      out[c] += p * (v_descale * table.value[inputs.v.codes[v_offset + c]]);
  }
}

void check_sample(const char* what, const Problem& problem, const RowSample& sample) {
  for (const QueryRow& row : sample.rows)
    if (row.batch_index < 0 || row.batch_index >= problem.batch || row.head < 0 ||
        row.head >= problem.heads || row.position < 0 || row.position >= problem.seq_len)
      throw std::invalid_argument(
          std::string(what) + ": query row (sample " + std::to_string(row.batch_index) + ", head " +
          std::to_string(row.head) + ", position " + std::to_string(row.position) +
          ") is outside the problem's " + std::to_string(problem.batch) + " x " +
          std::to_string(problem.heads) + " x " + std::to_string(problem.seq_len));
}

}  // namespace

std::vector<double> reference_low_precision(const Problem& problem, const QuantizedInputs& inputs) {
  check_inputs("fp8::reference_low_precision", problem, inputs);
  const DecodeTable table;
  std::vector<double> o(static_cast<std::size_t>(problem.query_elements()));
  std::vector<float> scores(static_cast<std::size_t>(problem.seq_len));
  std::vector<float> accumulator(static_cast<std::size_t>(problem.d_head));
  for (int b = 0; b < problem.batch; ++b)
    for (int i = 0; i < problem.seq_len; ++i)
      for (int h = 0; h < problem.heads; ++h)
        low_precision_row(
            problem, inputs, table, b, h, i, scores, accumulator,
            &o[((static_cast<std::size_t>(b) * problem.seq_len + i) * problem.heads + h) *
               problem.d_head]);
  return o;
}

RowSample spread_rows(const Problem& problem, int rows_per_head) {
  RowSample sample;
  if (rows_per_head <= 0) return sample;
  // The first and the last (sample, head) pair, so both ends of every stride are read; in each,
  // positions spread evenly from 0 to seq_len - 1 (the first and last rows of the sequence, and
  // with the mask rows that see one key and rows that see all of them).
  const std::pair<int, int> heads[] = {{0, 0}, {problem.batch - 1, problem.heads - 1}};
  const int count = std::min(rows_per_head, problem.seq_len);
  for (const auto& [b, h] : heads) {
    for (int r = 0; r < count; ++r) {
      const int position =
          count == 1
              ? 0
              : static_cast<int>(static_cast<long long>(r) * (problem.seq_len - 1) / (count - 1));
      sample.rows.push_back({b, h, position});
    }
    if (problem.batch == 1 && problem.heads == 1) break;  // one pair only
  }
  return sample;
}

std::vector<double> reference_exact_rows(const Problem& problem, const QuantizedInputs& inputs,
                                         const RowSample& sample) {
  check_inputs("fp8::reference_exact_rows", problem, inputs);
  check_sample("fp8::reference_exact_rows", problem, sample);
  const DecodeTable table;
  const auto d = static_cast<std::size_t>(problem.d_head);
  std::vector<double> o(sample.rows.size() * d);
  std::vector<double> scores(static_cast<std::size_t>(problem.seq_len));
  for (std::size_t r = 0; r < sample.rows.size(); ++r) {
    const QueryRow& row = sample.rows[r];
    exact_row(problem, inputs, table, row.batch_index, row.head, row.position, scores, &o[r * d]);
  }
  return o;
}

std::vector<double> reference_low_precision_rows(const Problem& problem,
                                                 const QuantizedInputs& inputs,
                                                 const RowSample& sample) {
  check_inputs("fp8::reference_low_precision_rows", problem, inputs);
  check_sample("fp8::reference_low_precision_rows", problem, sample);
  const DecodeTable table;
  const auto d = static_cast<std::size_t>(problem.d_head);
  std::vector<double> o(sample.rows.size() * d);
  std::vector<float> scores(static_cast<std::size_t>(problem.seq_len));
  std::vector<float> accumulator(d);
  for (std::size_t r = 0; r < sample.rows.size(); ++r) {
    const QueryRow& row = sample.rows[r];
    low_precision_row(problem, inputs, table, row.batch_index, row.head, row.position, scores,
                      accumulator, &o[r * d]);
  }
  return o;
}

std::vector<double> gather_rows(const Problem& problem, const std::vector<double>& o,
                                const RowSample& sample) {
  check_sample("fp8::gather_rows", problem, sample);
  if (o.size() != static_cast<std::size_t>(problem.query_elements()))
    throw std::invalid_argument(
        "fp8::gather_rows: o must hold batch x seq_len x heads x d_head = " +
        std::to_string(problem.query_elements()) + " elements");
  const auto d = static_cast<std::size_t>(problem.d_head);
  std::vector<double> out;
  out.reserve(sample.rows.size() * d);
  for (const QueryRow& row : sample.rows) {
    const std::size_t offset =
        ((static_cast<std::size_t>(row.batch_index) * problem.seq_len + row.position) *
             problem.heads +
         row.head) *
        d;
    out.insert(out.end(), o.begin() + static_cast<std::ptrdiff_t>(offset),
               o.begin() + static_cast<std::ptrdiff_t>(offset + d));
  }
  return out;
}

double error_floor(double max_abs_reference) {
  if (!(max_abs_reference > 0)) return 0x1p-133;
  int exponent = 0;
  std::frexp(max_abs_reference, &exponent);
  return std::ldexp(1.0, std::max(exponent - 1, -126) - 7);
}

Verdict check(const std::vector<double>& o, const std::vector<double>& exact,
              const std::vector<double>& low_precision, double floor) {
  if (o.size() != exact.size() || low_precision.size() != exact.size())
    throw std::invalid_argument("fp8::check: O has " + std::to_string(o.size()) +
                                " elements, R_ref " + std::to_string(exact.size()) + ", R_lp " +
                                std::to_string(low_precision.size()));
  Verdict verdict;
  double max_reference = 0, sum_squares = 0;
  std::size_t finite = 0;
  for (std::size_t i = 0; i < o.size(); ++i) {
    max_reference = std::max(max_reference, std::fabs(exact[i]));
    verdict.err_lp = std::max(verdict.err_lp, std::fabs(low_precision[i] - exact[i]));
    if (std::isnan(o[i])) {
      ++verdict.nan_count;
      continue;
    }
    const double error = std::fabs(o[i] - exact[i]);
    verdict.err_kernel = std::max(verdict.err_kernel, error);
    sum_squares += error * error;
    ++finite;
  }
  verdict.rms_kernel = finite > 0 ? std::sqrt(sum_squares / static_cast<double>(finite)) : 0;
  verdict.floor = floor >= 0 ? floor : error_floor(max_reference);
  verdict.passed =
      verdict.nan_count == 0 && verdict.err_kernel <= 2 * verdict.err_lp + verdict.floor;
  return verdict;
}

std::string Verdict::summary() const {
  char text[256];
  std::snprintf(text, sizeof text,
                "%s: max|O-R_ref| = %.3g %s 2 x max|R_lp-R_ref| + floor = %.3g (floor %.3g); "
                "RMS %.3g; NaN %lld",
                passed ? "pass" : "FAIL", err_kernel, err_kernel <= 2 * err_lp + floor ? "<=" : ">",
                2 * err_lp + floor, floor, rms_kernel, static_cast<long long>(nan_count));
  return text;
}

namespace {

bool is_power_of_two(std::size_t n) {
  return n > 0 && (n & (n - 1)) == 0;
}

// splitmix64's finalizer: a well-mixed 64-bit hash of (seed, index).
std::uint64_t mix(std::uint64_t seed, std::uint64_t index) {
  std::uint64_t z = seed + 0x9E3779B97F4A7C15ull * (index + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

void check_rotation(const std::vector<double>& values, const std::vector<int>& signs,
                    const char* what) {
  if (!is_power_of_two(signs.size()))
    throw std::invalid_argument(
        std::string(what) + ": the row length (d_head) must be a power of " +
        "two for the fast Walsh-Hadamard transform, not " + std::to_string(signs.size()));
  for (std::size_t i = 0; i < signs.size(); ++i)
    if (signs[i] != 1 && signs[i] != -1)
      throw std::invalid_argument(std::string(what) + ": sign " + std::to_string(i) + " is " +
                                  std::to_string(signs[i]) + ", not +1 or -1");
  if (values.size() % signs.size() != 0)
    throw std::invalid_argument(std::string(what) + ": " + std::to_string(values.size()) +
                                " values are not a whole number of rows of " +
                                std::to_string(signs.size()));
}

// In place, unnormalized: row <- H · row (Sylvester order: H_2d = [[H, H], [H, -H]]).
void walsh_hadamard(double* row, std::size_t d) {
  for (std::size_t half = 1; half < d; half *= 2)
    for (std::size_t start = 0; start < d; start += 2 * half)
      for (std::size_t i = start; i < start + half; ++i) {
        const double a = row[i], b = row[i + half];
        row[i] = a + b;
        row[i + half] = a - b;
      }
}

}  // namespace

std::vector<int> rotation_signs(int d_head, std::uint64_t seed) {
  if (d_head <= 0 || !is_power_of_two(static_cast<std::size_t>(d_head)))
    throw std::invalid_argument("fp8::rotation_signs: d_head must be a power of two, not " +
                                std::to_string(d_head));
  std::vector<int> signs(static_cast<std::size_t>(d_head));
  for (std::size_t i = 0; i < signs.size(); ++i)
    signs[i] = (mix(seed, i) >> 63) ? -1 : 1;
  return signs;
}

void rotate_rows(std::vector<double>& values, const std::vector<int>& signs) {
  check_rotation(values, signs, "fp8::rotate_rows");
  const std::size_t d = signs.size();
  const double norm = 1.0 / std::sqrt(static_cast<double>(d));
  for (std::size_t start = 0; start < values.size(); start += d) {
    double* row = values.data() + start;
    for (std::size_t i = 0; i < d; ++i)
      row[i] *= signs[i];
    walsh_hadamard(row, d);
    for (std::size_t i = 0; i < d; ++i)
      row[i] *= norm;
  }
}

void unrotate_rows(std::vector<double>& values, const std::vector<int>& signs) {
  check_rotation(values, signs, "fp8::unrotate_rows");
  const std::size_t d = signs.size();
  const double norm = 1.0 / std::sqrt(static_cast<double>(d));
  for (std::size_t start = 0; start < values.size(); start += d) {
    double* row = values.data() + start;
    walsh_hadamard(row, d);
    for (std::size_t i = 0; i < d; ++i)
      row[i] *= norm * signs[i];
  }
}

}  // namespace flashscope::fp8
