#include "explorer/model/fields.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>

#include "explorer/model/devices.hpp"

namespace flashscope::explorer {

std::string_view field_label(Field field) {
  switch (field) {
    case Field::step:
      return "step";
    case Field::config:
      return "config";
    case Field::dtype:
      return "dtype";
    case Field::seq_len:
      return "N";
    case Field::batch:
      return "batch";
    case Field::tflops:
      return "TFLOP/s";
    case Field::pct_fa2:
      return "% of FA2";
    case Field::pct_cudnn:
      return "% of cuDNN";
    case Field::pct_fa2_cycles:
      return "% of FA2 by cycles";
    case Field::pct_cudnn_cycles:
      return "% of cuDNN by cycles";
    case Field::median_ms:
      return "median ms";
    case Field::sm_clock_mhz:
      return "SM clock (MHz)";
    case Field::registers:
      return "registers / thread";
    case Field::smem_bytes:
      return "shared memory (bytes / CTA)";
    case Field::local_bytes:
      return "local memory (bytes / thread)";
    case Field::l2_hit_pct:
      return "L2 hit %";
    case Field::cycles:
      return "cycles";
    case Field::tensor_pipe_pct:
      return "tensor pipe active %";
    case Field::max_error:
      return "max error";
    case Field::verdict:
      return "verdict";
    case Field::status:
      return "status";
  }
  return "?";
}

bool is_numeric_field(Field field) {
  switch (field) {
    case Field::step:
    case Field::config:
    case Field::dtype:
    case Field::verdict:
    case Field::status:
      return false;
    default:
      return true;
  }
}

Field percent_field(Baseline baseline, PercentBasis basis) {
  if (baseline == Baseline::fa2)
    return basis == PercentBasis::time ? Field::pct_fa2 : Field::pct_fa2_cycles;
  return basis == PercentBasis::time ? Field::pct_cudnn : Field::pct_cudnn_cycles;
}

namespace {

template <typename T>
std::optional<double> widen(const std::optional<T>& value) {
  if (!value) return std::nullopt;
  return static_cast<double>(*value);
}

std::string lowercase(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
  return out;
}

const std::string& text_field(const ResultRow& row, Field field) {
  switch (field) {
    case Field::step:
      return row.step;
    case Field::config:
      return row.config;
    case Field::dtype:
      return row.dtype;
    case Field::verdict:
      return row.verdict;
    default:
      return row.status;
  }
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
    case Field::seq_len:
      return row.seq_len;
    case Field::batch:
      return row.batch;
    case Field::tflops:
      return row.tflops;
    case Field::pct_fa2:
      return set.percent_of_baseline(row, Baseline::fa2);
    case Field::pct_cudnn:
      return set.percent_of_baseline(row, Baseline::cudnn);
    case Field::pct_fa2_cycles:
      return set.percent_of_baseline(row, Baseline::fa2, PercentBasis::cycles);
    case Field::pct_cudnn_cycles:
      return set.percent_of_baseline(row, Baseline::cudnn, PercentBasis::cycles);
    case Field::median_ms:
      return row.median_ms;
    case Field::sm_clock_mhz:
      return row.sm_clock_mhz > 0 ? std::optional<double>(row.sm_clock_mhz) : std::nullopt;
    case Field::registers:
      return widen(row.registers);
    case Field::smem_bytes:
      return widen(row.smem_bytes);
    case Field::local_bytes:
      return widen(row.local_bytes);
    case Field::l2_hit_pct:
      return row.l2_hit_pct;
    case Field::cycles:
      return row.cycles;
    case Field::tensor_pipe_pct: {
      const auto found = row.extra_metrics.find(std::string(kTensorPipeMetric));
      return found == row.extra_metrics.end() ? std::nullopt : std::optional(found->second);
    }
    case Field::max_error:
      return row.max_error;
    default:
      return std::nullopt;
  }
}

std::string format_number(std::optional<double> value, int decimals) {
  if (!value) return "-";
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", decimals, *value);
  return text;
}

std::string format_field(const RowSet& set, const ResultRow& row, Field field) {
  if (!is_numeric_field(field)) return text_field(row, field);
  if (field == Field::max_error) {
    if (!row.max_error) return "-";
    char text[32];
    std::snprintf(text, sizeof text, "%.3g", *row.max_error);
    return text;
  }
  std::string text = format_number(numeric_field(set, row, field), decimals_for(field));
  // A value the row's sanity checks flag (e.g. an L2 hit rate above 100 %) says so wherever it
  // is shown; the row's warnings give the reason.
  if (field == Field::l2_hit_pct && row.warnings.find("l2_hit_pct") != std::string::npos)
    text += " (!)";
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
        order = step_less(a.row->step, b.row->step) ? -1 : step_less(b.row->step, a.row->step);
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
  const std::string text = lowercase(row.config + '\n' + row.dtype + '\n' + row.verdict + '\n' +
                                     row.status + '\n' + step_label(row.step));
  const std::string step_term = "step=" + lowercase(row.step);
  const std::string seq_len_term = "n=" + std::to_string(row.seq_len);
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
