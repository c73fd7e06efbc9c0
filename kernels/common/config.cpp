#include "kernels/common/config.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <vector>

#include "kernels/common/text.hpp"

namespace flashscope {

std::string escape_control_bytes(std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(text.size());
  for (const char ch : text) {
    const auto byte = static_cast<unsigned char>(ch);
    if (byte < 0x20 || byte == 0x7f) {
      out += "\\x";
      out += kHex[byte >> 4];
      out += kHex[byte & 0xf];
    } else {
      out += ch;
    }
  }
  return out;
}

std::optional<std::string> config_field_problem(const KernelConfig& c) {
  const auto is = [](std::string_view field, int value, std::string_view rule) {
    return std::string(field) + " " + std::to_string(value) + " is not " + std::string(rule);
  };
  if (c.d_head <= 0 || c.d_head % 64 != 0)
    return is("d_head", c.d_head, "a positive multiple of 64");
  if (c.B_r <= 0 || c.B_r % 16 != 0)
    return is("B_r", c.B_r, "a positive multiple of 16 (whole 16-row m-tiles)");
  if (c.B_c <= 0 || c.B_c % 16 != 0) return is("B_c", c.B_c, "a positive multiple of 16");
  if (c.n_warps <= 0) return is("n_warps", c.n_warps, "positive");
  const std::pair<std::string_view, int> loads[] = {
      {"the Q load of load_Q_K_V_tiles", c.Q_mma_load_K_fragments},
      {"the K load of load_Q_K_V_tiles", c.K_mma_load_K_fragments},
      {"the V load of load_Q_K_V_tiles", c.V_mma_load_K_fragments}};
  for (const auto& [field, value] : loads)
    if (value != 0 && (value < 2 || (value & (value - 1)) != 0))
      return is(field, value, "0 (the whole tile) or a power of two from 2 up");
  if (c.stages < 0 || c.stages > 4) return is("stages", c.stages, "0 (Ampere) or 1-4 (Hopper)");
  if (c.consumer_regs != 0 &&
      (c.consumer_regs % 8 != 0 || c.consumer_regs < 24 || c.consumer_regs > 256))
    return is("consumer_regs (regs_N)", c.consumer_regs,
              "0 or a multiple of 8 from 24 to 256 (setmaxnreg's range)");
  return std::nullopt;
}

namespace {

using text::trim;

std::string lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
  return out;
}

std::vector<std::string_view> split(std::string_view text, char separator) {
  std::vector<std::string_view> pieces;
  std::size_t begin = 0;
  while (true) {
    const std::size_t end = text.find(separator, begin);
    pieces.push_back(text.substr(begin, end == std::string_view::npos ? end : end - begin));
    if (end == std::string_view::npos) return pieces;
    begin = end + 1;
  }
}

[[noreturn]] void fail(std::string_view text, const std::string& problem) {
  // Escaped, so that a NUL (or any control byte) cannot cut or garble the message where it is
  // read as a C string (a Python ValueError, a terminal).
  throw ConfigParseError("cannot parse config \"" + escape_control_bytes(text) +
                         "\": " + escape_control_bytes(problem));
}

// A config that parsed must also keep each field within its own range (config_field_problem).
KernelConfig checked_fields(std::string_view text, const KernelConfig& c) {
  if (const auto problem = config_field_problem(c)) fail(text, *problem);
  return c;
}

int parse_int(std::string_view original, std::string_view field, std::string_view item) {
  item = trim(item);
  int value = 0;
  const auto [end, error] = std::from_chars(item.data(), item.data() + item.size(), value);
  if (error != std::errc() || end != item.data() + item.size() || item.empty())
    fail(original, std::string(field) + " \"" + std::string(item) + "\" is not an integer");
  return value;
}

bool parse_bool(std::string_view original, std::string_view field, std::string_view item) {
  const std::string value = lower(trim(item));
  if (value == "1" || value == "true") return true;
  if (value == "0" || value == "false") return false;
  fail(original, std::string(field) + " \"" + std::string(trim(item)) +
                     "\" is not a boolean (0, 1, true or false)");
}

DType parse_dtype(std::string_view original, std::string_view item) {
  if (const auto dtype = dtype_from_string(trim(item))) return *dtype;
  std::string numbers;
  for (const DType dtype : kAllDTypes)
    numbers += (numbers.empty() ? "" : ", ") + std::to_string(static_cast<int>(dtype));
  fail(original, "dtype \"" + std::string(trim(item)) + "\" is not " + dtype_choices_text() +
                     " (case-insensitive) or a scalar-type number " + numbers);
}

constexpr std::array<std::string_view, 16> kFieldNames = {"dtype",
                                                          "d_head",
                                                          "B_r",
                                                          "B_c",
                                                          "n_warps",
                                                          "async_copy",
                                                          "eager_load_blocks",
                                                          "swizzled",
                                                          "Q_mma_load_K_fragments",
                                                          "K_mma_load_K_fragments",
                                                          "V_mma_load_K_fragments",
                                                          "mma_double_buffer_loads",
                                                          "optimized_softmax",
                                                          "stages",
                                                          "consumer_regs",
                                                          "deterministic"};
// The seed's record has the first 13 fields; flashscope's Hopper track appended stages and
// consumer_regs, and the backward track's B5 deterministic (written only where it is set).
constexpr std::size_t kSeedFieldCount = 13;
constexpr std::size_t kHopperFieldCount = 15;

// The 13, 15 or 16 fields from already-split items; `strip_cast` removes a leading "(type)" per
// item.
KernelConfig config_from_items(std::string_view original, std::vector<std::string_view> items,
                               bool strip_cast) {
  if (items.size() != kSeedFieldCount && items.size() != kHopperFieldCount &&
      items.size() != kFieldNames.size())
    fail(original,
         "expected 13 (seed), 15 (with stages, consumer_regs) or 16 (and deterministic) fields "
         "inside the braces, found " +
             std::to_string(items.size()));
  for (auto& item : items) {
    item = trim(item);
    if (strip_cast) {
      if (item.empty() || item.front() != '(' || item.find(')') == std::string_view::npos)
        fail(original, "typed field \"" + std::string(item) + "\" lacks its (type) cast");
      item = trim(item.substr(item.find(')') + 1));
    }
  }
  KernelConfig c{};
  c.dtype = parse_dtype(original, items[0]);
  c.d_head = parse_int(original, kFieldNames[1], items[1]);
  c.B_r = parse_int(original, kFieldNames[2], items[2]);
  c.B_c = parse_int(original, kFieldNames[3], items[3]);
  c.n_warps = parse_int(original, kFieldNames[4], items[4]);
  c.async_copy = parse_bool(original, kFieldNames[5], items[5]);
  c.eager_load_blocks = parse_bool(original, kFieldNames[6], items[6]);
  c.swizzled = parse_bool(original, kFieldNames[7], items[7]);
  c.Q_mma_load_K_fragments = parse_int(original, kFieldNames[8], items[8]);
  c.K_mma_load_K_fragments = parse_int(original, kFieldNames[9], items[9]);
  c.V_mma_load_K_fragments = parse_int(original, kFieldNames[10], items[10]);
  c.mma_double_buffer_loads = parse_bool(original, kFieldNames[11], items[11]);
  c.optimized_softmax = parse_bool(original, kFieldNames[12], items[12]);
  if (items.size() >= kHopperFieldCount) {
    c.stages = parse_int(original, kFieldNames[13], items[13]);
    c.consumer_regs = parse_int(original, kFieldNames[14], items[14]);
    if (items.size() == kFieldNames.size())
      c.deterministic = parse_bool(original, kFieldNames[15], items[15]);
    // What the short form cannot say is not a config: every record that parses must print and
    // re-parse to itself.
    if (c.stages < 0) fail(original, "stages must be 0 (Ampere) or a positive count (Hopper)");
    if (c.stages == 0 && c.consumer_regs != 0)
      fail(original, "consumer_regs needs a Hopper config (stages >= 1)");
    if (c.stages == 0 && c.deterministic)
      fail(original, "deterministic needs a Hopper config (stages >= 1)");
    if (c.stages > 0 &&
        (c.async_copy || c.eager_load_blocks || c.swizzled || c.Q_mma_load_K_fragments != 0 ||
         c.K_mma_load_K_fragments != 0 || c.V_mma_load_K_fragments != 0 ||
         c.mma_double_buffer_loads || c.optimized_softmax))
      fail(original, "a Hopper config (stages >= 1) leaves the Ampere-only fields unset");
  }
  return checked_fields(original, c);
}

// The text between `FlashForwardKernelConfig{` (or `KernelConfig{`) and the matching `}`.
std::string_view braced_fields(std::string_view text) {
  const std::size_t open = text.find('{');
  const std::size_t close = text.rfind('}');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open)
    fail(text, "expected FlashForwardKernelConfig{...} with 13, 15 or 16 fields");
  const std::string_view head = trim(text.substr(0, open));
  if (!head.ends_with("KernelConfig"))
    fail(text, "expected FlashForwardKernelConfig{...} with 13, 15 or 16 fields");
  return text.substr(open + 1, close - open - 1);
}

// The feature tokens of a short form, for error messages.
constexpr std::string_view kFeatureTokensHelp =
    "the features are async, eager, swizzled, load_Q_K_V_tiles (e.g. load_0_2_2_tiles), buffer "
    "and opt_softmax (steps 1-16), or stages_N, regs_N and deterministic (Hopper steps 17+; "
    "deterministic on backward steps B5+)";

// The feature a token sets, whatever its values: load_Q_K_V_tiles, stages_N, regs_N, else the
// token itself.
std::string_view feature_kind(std::string_view token) {
  if (token.starts_with("load_")) return "load_Q_K_V_tiles";
  if (token.starts_with("stages_")) return "stages_N";
  if (token.starts_with("regs_")) return "regs_N";
  return token;
}

// Whether `token` names a feature (its values are checked where they are read).
bool is_feature_token(std::string_view token) {
  for (const std::string_view flag :
       {"async", "eager", "swizzled", "buffer", "opt_softmax", "deterministic"})
    if (token == flag) return true;
  return token.starts_with("load_") || token.starts_with("stages_") || token.starts_with("regs_");
}

}  // namespace

std::string_view dtype_name(DType dtype) {
  switch (dtype) {
    case DType::FP16:
      return "FP16";
    case DType::BF16:
      return "BF16";
    case DType::E4M3:
      return "E4M3";
  }
  return "?";
}
std::string_view dtype_lower_name(DType dtype) {
  switch (dtype) {
    case DType::FP16:
      return "fp16";
    case DType::BF16:
      return "bf16";
    case DType::E4M3:
      return "e4m3";
  }
  return "?";
}

std::optional<DType> dtype_from_string(std::string_view text) {
  const std::string value = lower(trim(text));
  for (const DType dtype : kAllDTypes)
    if (value == dtype_lower_name(dtype) || value == std::to_string(static_cast<int>(dtype)))
      return dtype;
  // The FP8 track's short name (issue 35): e4m3 is the only 8-bit format flashscope runs.
  if (value == "fp8") return DType::E4M3;
  return std::nullopt;
}

std::string dtype_choices_text() {
  std::string text;
  constexpr std::size_t count = std::size(kAllDTypes);
  for (std::size_t i = 0; i < count; ++i) {
    text += (i == 0 ? "" : i + 1 == count ? " or " : ", ");
    text += dtype_lower_name(kAllDTypes[i]);
    if (kAllDTypes[i] == DType::E4M3) text += " (fp8)";
  }
  return text;
}

std::string features_string(const KernelConfig& c) {
  std::string out;
  const auto append = [&out](std::string_view token) {
    if (!out.empty()) out += '+';
    out += token;
  };
  if (is_hopper_config(c)) {
    append("stages_" + std::to_string(c.stages));
    if (c.consumer_regs != 0) append("regs_" + std::to_string(c.consumer_regs));
    if (c.deterministic) append("deterministic");
    return out;
  }
  if (c.async_copy) append("async");
  if (c.eager_load_blocks) append("eager");
  if (c.swizzled) append("swizzled");
  append("load_" + std::to_string(c.Q_mma_load_K_fragments) + "_" +
         std::to_string(c.K_mma_load_K_fragments) + "_" + std::to_string(c.V_mma_load_K_fragments) +
         "_tiles");
  if (c.mma_double_buffer_loads) append("buffer");
  if (c.optimized_softmax) append("opt_softmax");
  return out;
}

std::string to_short_form(const KernelConfig& c, ShortFormStyle style) {
  if (style == ShortFormStyle::features_only) return features_string(c);
  std::string out = "(";
  out += dtype_name(c.dtype);
  if (style == ShortFormStyle::full) out += ", " + std::to_string(c.d_head);
  out += ", " + std::to_string(c.B_r) + ", " + std::to_string(c.B_c) + ", " +
         std::to_string(c.n_warps) + "): " + features_string(c);
  return out;
}

std::string to_cpp_literal(const KernelConfig& c) {
  const auto flag = [](bool value) { return value ? "true" : "false"; };
  std::string out = "flashscope::KernelConfig{flashscope::DType::";
  out += dtype_name(c.dtype);
  out += ", " + std::to_string(c.d_head) + ", " + std::to_string(c.B_r) + ", " +
         std::to_string(c.B_c) + ", " + std::to_string(c.n_warps) + ", " + flag(c.async_copy) +
         ", " + flag(c.eager_load_blocks) + ", " + flag(c.swizzled) + ", " +
         std::to_string(c.Q_mma_load_K_fragments) + ", " +
         std::to_string(c.K_mma_load_K_fragments) + ", " +
         std::to_string(c.V_mma_load_K_fragments) + ", " + flag(c.mma_double_buffer_loads) + ", " +
         flag(c.optimized_softmax) + ", " + std::to_string(c.stages) + ", " +
         std::to_string(c.consumer_regs);
  // The 16th field only where it is set: every other config's literal stays the 15 fields.
  if (c.deterministic) out += ", true";
  out += "}";
  return out;
}

KernelConfig parse_short_form(std::string_view text) {
  // Markdown table rows: the first non-empty cell holds the config.
  std::string_view line = trim(text);
  for (const std::string_view cell : split(text, '|')) {
    if (!trim(cell).empty()) {
      line = trim(cell);
      break;
    }
  }
  if (line.empty()) fail(text, "the text is empty");
  if (line.front() != '(') fail(text, "expected \"(DTYPE, d_head, B_r, B_c, n_warps): features\"");
  const std::size_t close = line.find("):");
  if (close == std::string_view::npos)
    fail(text, "missing \"):\" after the (DTYPE, d_head, B_r, B_c, n_warps) tuple");
  const std::vector<std::string_view> tuple = split(line.substr(1, close - 1), ',');
  if (tuple.size() != 5)
    fail(text, "the tuple must hold 5 items (DTYPE, d_head, B_r, B_c, n_warps), found " +
                   std::to_string(tuple.size()));
  const std::string_view after = line.substr(close + 2);
  const std::string_view features = trim(after);
  if (features.empty())
    fail(text,
         "the feature list is empty (it needs load_Q_K_V_tiles, or stages_N for a Hopper config)");
  if (!std::isspace(static_cast<unsigned char>(after.front())))
    fail(text, "expected whitespace between \"):\" and the features");

  KernelConfig c{};
  c.dtype = parse_dtype(text, tuple[0]);
  c.d_head = parse_int(text, "d_head", tuple[1]);
  c.B_r = parse_int(text, "B_r", tuple[2]);
  c.B_c = parse_int(text, "B_c", tuple[3]);
  c.n_warps = parse_int(text, "n_warps", tuple[4]);

  std::vector<std::string_view> tokens;
  for (const std::string_view raw : split(features, '+'))
    tokens.push_back(trim(raw));
  // Every token must be a feature, and each at most once: a misspelt or unknown token dropped
  // silently would measure a kernel other than the one the user named.
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    const std::string_view token = tokens[i];
    if (token.empty())
      fail(text, "the feature list holds an empty token (two '+' in a row, or one at an end); " +
                     std::string(kFeatureTokensHelp));
    if (!is_feature_token(token))
      fail(text,
           "\"" + std::string(token) + "\" is not a feature; " + std::string(kFeatureTokensHelp));
    for (std::size_t j = 0; j < i; ++j)
      if (feature_kind(tokens[j]) == feature_kind(token))
        fail(text, "the feature \"" + std::string(feature_kind(token)) + "\" is given twice (\"" +
                       std::string(tokens[j]) + "\" and \"" + std::string(token) +
                       "\"); each feature appears at most once");
  }
  // A stages_N token marks a Hopper config: its features are stages_N, an optional regs_N and an
  // optional deterministic.
  const auto hopper_token = std::find_if(tokens.begin(), tokens.end(), [](std::string_view t) {
    return t.starts_with("stages_") || t.starts_with("regs_") || t == "deterministic";
  });
  if (hopper_token != tokens.end()) {
    for (const std::string_view token : tokens) {
      if (token.starts_with("stages_")) {
        c.stages = parse_int(text, "stages", token.substr(7));
      } else if (token.starts_with("regs_")) {
        c.consumer_regs = parse_int(text, "regs", token.substr(5));
      } else if (token == "deterministic") {
        c.deterministic = true;
      } else {
        fail(text, "\"" + std::string(token) +
                       "\" is not a Hopper feature; a config with stages_N takes only stages_N, "
                       "regs_N and deterministic");
      }
    }
    if (c.stages <= 0)
      fail(text,
           "a Hopper config needs a stages_N token with N >= 1 (regs_N or deterministic alone is "
           "not one)");
    return checked_fields(text, c);
  }
  const auto has = [&tokens](std::string_view token) {
    return std::find(tokens.begin(), tokens.end(), token) != tokens.end();
  };
  c.async_copy = has("async");
  c.eager_load_blocks = has("eager");
  c.swizzled = has("swizzled");
  c.mma_double_buffer_loads = has("buffer");
  c.optimized_softmax = has("opt_softmax");

  const auto load = std::find_if(tokens.begin(), tokens.end(),
                                 [](std::string_view t) { return t.starts_with("load_"); });
  if (load == tokens.end())
    fail(text,
         "the features lack the required load_Q_K_V_tiles token (or stages_N for a Hopper config)");
  std::string_view load_values = *load;
  load_values.remove_prefix(5);
  if (!load_values.ends_with("_tiles"))
    fail(text, "load token \"" + std::string(*load) + "\" must end in _tiles");
  load_values.remove_suffix(6);
  const std::vector<std::string_view> loads = split(load_values, '_');
  if (loads.size() != 3)
    fail(text, "load token \"" + std::string(*load) + "\" must hold three integers Q_K_V");
  c.Q_mma_load_K_fragments = parse_int(text, "Q load", loads[0]);
  c.K_mma_load_K_fragments = parse_int(text, "K load", loads[1]);
  c.V_mma_load_K_fragments = parse_int(text, "V load", loads[2]);
  return checked_fields(text, c);
}

KernelConfig parse_demangled_plain(std::string_view text) {
  const std::string_view fields = braced_fields(trim(text));
  if (fields.find('(') != std::string_view::npos)
    fail(text, "typed fields found where plain numbers were expected");
  return config_from_items(text, split(fields, ','), /*strip_cast=*/false);
}

KernelConfig parse_demangled_typed(std::string_view text) {
  return config_from_items(text, split(braced_fields(trim(text)), ','), /*strip_cast=*/true);
}

KernelConfig parse_config(std::string_view text) {
  const std::string_view trimmed = trim(text);
  if (trimmed.find('{') != std::string_view::npos) {
    // Typed fields carry casts such as "(int)128"; plain ones are bare numbers.
    const bool typed = braced_fields(trimmed).find('(') != std::string_view::npos;
    return typed ? parse_demangled_typed(trimmed) : parse_demangled_plain(trimmed);
  }
  return parse_short_form(text);
}

double matmul_flops(std::int64_t batch, std::int64_t heads, std::int64_t seq_len,
                    std::int64_t d_head) {
  return 4.0 * static_cast<double>(batch) * static_cast<double>(heads) *
         static_cast<double>(seq_len) * static_cast<double>(seq_len) * static_cast<double>(d_head);
}

double seed_attention_flops(std::int64_t batch, std::int64_t heads, std::int64_t seq_len,
                            std::int64_t d_head) {
  const double n = static_cast<double>(seq_len);
  return static_cast<double>(batch) * static_cast<double>(heads) *
         (4.0 * n * n * static_cast<double>(d_head) + 6.0 * n * n);
}

}  // namespace flashscope
