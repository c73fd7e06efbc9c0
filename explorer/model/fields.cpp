#include "explorer/model/fields.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>

#include "explorer/model/devices.hpp"

namespace flashscope::explorer {

namespace {

// The column a field shows; nullopt for tensor_pipe_pct, which is an extra metric's column.
// The % fields show their columns' labels, but their values may come from pairing the row with
// a baseline row (RowSet::percent_of_baseline).
std::optional<ResultColumn> column_of(Field field) {
  switch (field) {
    case Field::step:
      return ResultColumn::step;
    case Field::config:
      return ResultColumn::config;
    case Field::dtype:
      return ResultColumn::dtype;
    case Field::seq_len:
      return ResultColumn::seq_len;
    case Field::batch:
      return ResultColumn::batch;
    case Field::tflops:
      return ResultColumn::tflops;
    case Field::pct_fa2:
      return ResultColumn::pct_fa2;
    case Field::pct_cudnn:
      return ResultColumn::pct_cudnn;
    case Field::pct_fa2_cycles:
      return ResultColumn::pct_fa2_cycles;
    case Field::pct_cudnn_cycles:
      return ResultColumn::pct_cudnn_cycles;
    case Field::median_ms:
      return ResultColumn::median_ms;
    case Field::sm_clock_mhz:
      return ResultColumn::sm_clock_mhz;
    case Field::registers:
      return ResultColumn::registers;
    case Field::smem_bytes:
      return ResultColumn::smem_bytes;
    case Field::local_bytes:
      return ResultColumn::local_bytes;
    case Field::l2_hit_pct:
      return ResultColumn::l2_hit_pct;
    case Field::cycles:
      return ResultColumn::cycles;
    case Field::max_error:
      return ResultColumn::max_error;
    case Field::max_error_fp64:
      return ResultColumn::max_error_fp64;
    case Field::rms_error_fp64:
      return ResultColumn::rms_error_fp64;
    case Field::verdict:
      return ResultColumn::verdict;
    case Field::status:
      return ResultColumn::status;
    case Field::tensor_pipe_pct:
      break;
  }
  return std::nullopt;
}

}  // namespace

std::string_view field_label(Field field) {
  if (const auto column = column_of(field)) return result_column(*column).label;
  return "tensor pipe active %";
}

bool is_numeric_field(Field field) {
  const auto column = column_of(field);
  return !column || result_column(*column).number != nullptr;
}

Field percent_field(Baseline baseline, PercentBasis basis) {
  if (baseline == Baseline::fa2)
    return basis == PercentBasis::time ? Field::pct_fa2 : Field::pct_fa2_cycles;
  return basis == PercentBasis::time ? Field::pct_cudnn : Field::pct_cudnn_cycles;
}

namespace {

int sign(std::partial_ordering order) {
  return order < 0 ? -1 : (order > 0 ? 1 : 0);
}

std::string lowercase(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
  return out;
}

std::string text_field(const ResultRow& row, Field field) {
  return result_column(*column_of(field)).write(row);
}

int decimals_for(Field field) {
  switch (field) {
    case Field::tflops:
    case Field::pct_fa2:
    case Field::pct_cudnn:
    case Field::pct_fa2_cycles:
    case Field::pct_cudnn_cycles:
    case Field::l2_hit_pct:
    case Field::tensor_pipe_pct:
      return 1;
    case Field::median_ms:
      return 3;
    default:
      return 0;
  }
}

}  // namespace

std::optional<double> numeric_field(const RowSet& set, const ResultRow& row, Field field) {
  switch (field) {
    case Field::pct_fa2:
      return set.percent_of_baseline(row, Baseline::fa2);
    case Field::pct_cudnn:
      return set.percent_of_baseline(row, Baseline::cudnn);
    case Field::pct_fa2_cycles:
      return set.percent_of_baseline(row, Baseline::fa2, PercentBasis::cycles);
    case Field::pct_cudnn_cycles:
      return set.percent_of_baseline(row, Baseline::cudnn, PercentBasis::cycles);
    case Field::tensor_pipe_pct: {
      const auto found = row.extra_metrics.find(std::string(kTensorPipeMetric));
      return found == row.extra_metrics.end() ? std::nullopt : std::optional(found->second);
    }
    default:
      break;
  }
  const ResultColumnSpec& column = result_column(*column_of(field));
  return column.number ? column.number(row) : std::nullopt;
}

std::string format_number(std::optional<double> value, int decimals) {
  if (!value) return "-";
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", decimals, *value);
  return text;
}

std::string format_field(const RowSet& set, const ResultRow& row, Field field) {
  if (!is_numeric_field(field)) return text_field(row, field);
  // Errors span decades (1e-4 for 16 bits, 1e-2 for e4m3): three significant digits, not a
  // fixed number of decimals.
  if (field == Field::max_error || field == Field::max_error_fp64 ||
      field == Field::rms_error_fp64) {
    const std::optional<double> error = numeric_field(set, row, field);
    if (!error) return "-";
    char text[32];
    std::snprintf(text, sizeof text, "%.3g", *error);
    return text;
  }
  std::string text = format_number(numeric_field(set, row, field), decimals_for(field));
  // A value the row's sanity checks flag (e.g. an L2 hit rate above 100 %) says so wherever it
  // is shown; the row's warnings give the reason.
  if (field == Field::l2_hit_pct && row.warnings.find("l2_hit_pct") != std::string::npos)
    text += " (!)";
  return text;
}

std::vector<std::string> clock_held_by(const ResultRow& row) {
  std::vector<std::string> reasons;
  std::string_view rest = row.clock_reasons;
  constexpr std::string_view kSeparator = " + ";
  while (!rest.empty()) {
    const std::size_t end = rest.find(kSeparator);
    if (end != 0) reasons.emplace_back(rest.substr(0, end));
    if (end == std::string_view::npos) break;
    rest.remove_prefix(end + kSeparator.size());
  }
  return reasons;
}

std::string clock_summary(const ResultRow& row) {
  std::vector<std::string> parts;
  if (row.sm_clock_mhz > 0) {
    std::string clock = std::to_string(row.sm_clock_mhz) + " MHz median";
    if (row.sm_clock_min_mhz && row.sm_clock_max_mhz)
      clock += " (" + std::to_string(*row.sm_clock_min_mhz) + ".." +
               std::to_string(*row.sm_clock_max_mhz) + ")";
    parts.push_back(clock);
  }
  if (row.power_mean_w) {
    std::string power = format_number(row.power_mean_w, 0) + " W mean";
    if (row.power_limit_w) power += " of a " + format_number(row.power_limit_w, 0) + " W limit";
    parts.push_back(power);
  }
  if (row.temperature_max_c) parts.push_back(std::to_string(*row.temperature_max_c) + " C max");
  const std::vector<std::string> held = clock_held_by(row);
  if (!held.empty()) {
    std::string text = "held by ";
    for (std::size_t i = 0; i < held.size(); ++i)
      text += (i ? ", " : "") + held[i];
    parts.push_back(text);
  }
  if (parts.empty()) return "clock not recorded";
  std::string text;
  for (std::size_t i = 0; i < parts.size(); ++i)
    text += (i ? ", " : "") + parts[i];
  return text;
}

void sort_rows(std::vector<const ResultRow*>& rows, std::span<const SortKey> keys,
               const RowSet& set) {
  // Resolve each key once per row: percentages may need a map lookup.
  struct Keyed {
    const ResultRow* row;
    std::vector<std::optional<double>> numbers;
  };
  std::vector<Keyed> keyed;
  keyed.reserve(rows.size());
  for (const ResultRow* row : rows) {
    Keyed entry{row, {}};
    for (const SortKey& key : keys)
      entry.numbers.push_back(numeric_field(set, *row, key.field));
    keyed.push_back(std::move(entry));
  }
  std::stable_sort(keyed.begin(), keyed.end(), [&](const Keyed& a, const Keyed& b) {
    for (std::size_t i = 0; i < keys.size(); ++i) {
      const SortKey& key = keys[i];
      int order = 0;  // <0: a first
      if (key.field == Field::step) {
        order = sign(a.row->subject <=> b.row->subject);
      } else if (key.field == Field::config) {
        order = sign(a.row->config <=> b.row->config);
      } else if (!is_numeric_field(key.field)) {
        order = text_field(*a.row, key.field).compare(text_field(*b.row, key.field));
      } else {
        const auto& x = a.numbers[i];
        const auto& y = b.numbers[i];
        if (!x || !y) {
          if (x.has_value() != y.has_value()) return x.has_value();  // missing values last
          continue;
        }
        order = *x < *y ? -1 : (*y < *x ? 1 : 0);
      }
      if (order != 0) return key.descending ? order > 0 : order < 0;
    }
    return false;
  });
  for (std::size_t i = 0; i < rows.size(); ++i)
    rows[i] = keyed[i].row;
}

RowTextFilter::RowTextFilter(std::string_view query) {
  std::string term;
  bool quoted = false;
  auto finish_term = [&] {
    if (term.empty() || term == "-") {
      term.clear();
      return;
    }
    if (term.front() == '-')
      exclude_.push_back(lowercase(std::string_view(term).substr(1)));
    else
      include_.push_back(lowercase(term));
    term.clear();
  };
  for (char ch : query) {
    if (ch == '"') {
      quoted = !quoted;
    } else if (!quoted && std::isspace(static_cast<unsigned char>(ch))) {
      finish_term();
    } else {
      term += ch;
    }
  }
  finish_term();
}

bool RowTextFilter::matches(const ResultRow& row) const {
  if (empty()) return true;
  const std::string text = lowercase(config_text(row) + '\n' + dtype_text(row) + '\n' +
                                     std::string(verdict_name(row.verdict)) + '\n' +
                                     row.status.text() + '\n' + row.subject.label());
  const std::string step_term = "step=" + lowercase(row.subject.text());
  const std::string seq_len_term = "n=" + std::to_string(row.problem.seq_len);
  auto term_matches = [&](const std::string& term) {
    if (term.starts_with("gpu=")) return gpu_matches(row, std::string_view(term).substr(4));
    return term == step_term || term == seq_len_term || text.find(term) != std::string::npos;
  };
  return std::all_of(include_.begin(), include_.end(), term_matches) &&
         std::none_of(exclude_.begin(), exclude_.end(), term_matches);
}

std::vector<const ResultRow*> filter_rows(const std::vector<const ResultRow*>& rows,
                                          const RowTextFilter& filter) {
  if (filter.empty()) return rows;
  std::vector<const ResultRow*> kept;
  for (const ResultRow* row : rows)
    if (filter.matches(*row)) kept.push_back(row);
  return kept;
}

}  // namespace flashscope::explorer
