#include "models/calibration.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <utility>

#include "sim/errors.h"
#include "sim/input_files.h"

namespace fleetsim {
namespace {

std::string_view trim(std::string_view s) {
  const auto b = s.find_first_not_of(" \t");
  if (b == std::string_view::npos) return {};
  const auto e = s.find_last_not_of(" \t");
  return s.substr(b, e - b + 1);
}

// One CSV line into cells (RFC 4180: a double-quoted cell may hold commas, "" is a quote).
std::vector<std::string> split_csv(std::string_view line) {
  std::vector<std::string> cells(1);
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        cells.back() += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        cells.back() += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      cells.emplace_back();
    } else {
      cells.back() += c;
    }
  }
  if (quoted) throw std::invalid_argument("a double quote is not closed");
  for (auto& c : cells) c = std::string(trim(c));
  return cells;
}

bool parse_double(std::string_view s, double& v) {
  s = trim(s);
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return !s.empty() && ec == std::errc() && end == s.data() + s.size() && std::isfinite(v);
}

// An integer cell; "2048.0" is accepted (pandas writes integer columns with gaps as floats).
bool parse_integer(std::string_view s, std::int64_t& v) {
  double d = 0;
  if (!parse_double(s, d) || std::floor(d) != d || std::fabs(d) > 2e9) return false;
  v = static_cast<std::int64_t>(d);
  return true;
}

class CsvRow {
 public:
  CsvRow(const std::string& label, std::int64_t line, const std::vector<std::string>& header,
         std::vector<std::string> cells)
      : label_(label), line_(line), header_(header), cells_(std::move(cells)) {}

  bool has(const std::string& column) const { return index(column) >= 0; }
  const std::string& cell(const std::string& column) const {
    return cells_[static_cast<size_t>(index(column))];
  }
  bool empty(const std::string& column) const { return !has(column) || cell(column).empty(); }

  [[noreturn]] void fail(const std::string& column, const std::string& expected) const {
    throw TraceError(label_ + ":" + std::to_string(line_) + ": column '" + column + "': expected " +
                     expected + ", got '" + (has(column) ? cell(column) : "") + "'");
  }
  double positive(const std::string& column, const std::string& what) const {
    double v = 0;
    if (!parse_double(cell(column), v) || v <= 0) fail(column, what);
    return v;
  }
  std::int64_t integer(const std::string& column, std::int64_t min, const std::string& what) const {
    std::int64_t v = 0;
    if (!parse_integer(cell(column), v) || v < min) fail(column, what);
    return v;
  }
  std::int64_t line() const { return line_; }
  const std::string& label() const { return label_; }

 private:
  int index(const std::string& column) const {
    for (size_t i = 0; i < header_.size(); ++i) {
      if (header_[i] == column) return static_cast<int>(i);
    }
    return -1;
  }
  const std::string& label_;
  std::int64_t line_;
  const std::vector<std::string>& header_;
  std::vector<std::string> cells_;
};

const std::vector<std::string> kStepColumns = {"step_ms", "batch"};
const std::vector<std::string> kRequestColumns = {"ttft_ms", "prompt_tokens", "cached_tokens",
                                                  "tpot_ms", "output_tokens"};

std::string layout_help() {
  return "expected a header with step_ms,batch (one row per engine step) or prompt_tokens with "
         "ttft_ms and/or tpot_ms,output_tokens (one row per request timed alone; cached_tokens "
         "optional); see docs/calibration.md";
}

void read_step_row(const CsvRow& row, Measurements& m) {
  StepSample s;
  s.line = row.line();
  s.origin = "step";
  s.step_ms = row.positive("step_ms", "a step duration in ms, a number > 0");
  try {
    s.batch = parse_batch(row.cell("batch"));
  } catch (const std::invalid_argument& e) {
    throw TraceError(row.label() + ":" + std::to_string(row.line()) +
                     ": column 'batch': " + e.what() + ", got '" + row.cell("batch") + "'");
  }
  m.steps.push_back(std::move(s));
}

void read_request_row(const CsvRow& row, Measurements& m) {
  const std::int64_t prompt =
      row.integer("prompt_tokens", 1, "the prompt length in tokens, an integer >= 1");
  std::int64_t cached = 0;
  if (!row.empty("cached_tokens")) {
    cached = row.integer("cached_tokens", 0,
                         "prefix-cache hits in tokens, an integer in [0, prompt_tokens - 1]");
    if (cached >= prompt) {
      row.fail("cached_tokens",
               "an integer in [0, prompt_tokens - 1] = [0, " + std::to_string(prompt - 1) + "]");
    }
  }
  const bool ttft = !row.empty("ttft_ms");
  const bool tpot = !row.empty("tpot_ms");
  if (!ttft && !tpot) {
    row.fail(row.has("ttft_ms") ? "ttft_ms" : "tpot_ms",
             "a time in ms (a row needs ttft_ms or tpot_ms)");
  }
  if (ttft) {
    // The prompt's uncached tokens in one prefill step on top of the cached ones.
    StepSample s;
    s.line = row.line();
    s.origin = "ttft";
    s.step_ms = row.positive("ttft_ms", "the time to first token in ms, a number > 0");
    s.batch = {{static_cast<std::int32_t>(prompt - cached), static_cast<std::int32_t>(cached)}};
    m.steps.push_back(std::move(s));
  }
  if (tpot) {
    // TPOT = (e2e - ttft) / (output - 1): the mean of the output - 1 decode steps, the k-th
    // (k = 1 .. output - 1) reading prompt + k - 1 context tokens. Both forms are linear in the
    // context of a lone decode, so the mean step is the step at the mean context.
    if (!row.has("output_tokens") || row.empty("output_tokens")) {
      row.fail("output_tokens", "the output length in tokens next to tpot_ms, an integer >= 2");
    }
    const std::int64_t output =
        row.integer("output_tokens", 2, "the output length in tokens, an integer >= 2");
    StepSample s;
    s.line = row.line();
    s.origin = "tpot";
    s.step_ms = row.positive("tpot_ms", "the time per output token in ms, a number > 0");
    const double context = static_cast<double>(prompt) + static_cast<double>(output - 2) / 2.0;
    s.batch = {{1, static_cast<std::int32_t>(std::llround(context))}};
    m.steps.push_back(std::move(s));
  }
}

}  // namespace

std::vector<BatchEntry> parse_batch(std::string_view text) {
  std::vector<BatchEntry> batch;
  std::string token;
  auto flush = [&]() {
    if (token.empty()) return;
    std::string_view e = token;
    std::int64_t count = 1, new_tokens = 0, context = 0;
    const auto x = e.find('x');
    if (x != std::string_view::npos) {
      if (!parse_integer(e.substr(0, x), count) || count < 1 || count > 100000) {
        throw std::invalid_argument("entry '" + token +
                                    "': expected COUNTxNEW:CTX with COUNT an integer in "
                                    "[1, 100000]");
      }
      e.remove_prefix(x + 1);
    }
    const auto colon = e.find(':');
    if (!parse_integer(e.substr(0, colon), new_tokens) || new_tokens < 1) {
      throw std::invalid_argument("entry '" + token +
                                  "': expected NEW[:CTX] with NEW the tokens computed this "
                                  "step, an integer >= 1");
    }
    if (colon != std::string_view::npos &&
        (!parse_integer(e.substr(colon + 1), context) || context < 0)) {
      throw std::invalid_argument("entry '" + token +
                                  "': expected NEW:CTX with CTX the tokens already in the KV "
                                  "cache, an integer >= 0");
    }
    for (std::int64_t i = 0; i < count; ++i) {
      batch.push_back({static_cast<std::int32_t>(new_tokens), static_cast<std::int32_t>(context)});
    }
    token.clear();
  };
  for (const char c : text) {
    if (c == ';' || c == ' ' || c == '\t') {
      flush();
    } else {
      token += c;
    }
  }
  flush();
  if (batch.empty()) {
    throw std::invalid_argument(
        "expected the step's batch as entries NEW:CTX separated by ';' (e.g. 512:0;1:300)");
  }
  return batch;
}

Measurements parse_measurements(const std::string& text, const std::string& label) {
  Measurements m;
  m.path = label;
  std::istringstream in(text);
  std::string line;
  std::int64_t line_no = 0;
  std::vector<std::string> header;
  while (std::getline(in, line)) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const std::string_view t = trim(line);
    if (t.empty() || t.front() == '#') continue;
    std::vector<std::string> cells;
    try {
      cells = split_csv(line);
    } catch (const std::invalid_argument& e) {
      throw TraceError(label + ":" + std::to_string(line_no) + ": " + e.what());
    }
    if (header.empty()) {
      header = cells;
      for (auto c = header.begin(); c != header.end(); ++c) {
        if (std::find(header.begin(), c, *c) != c) {
          throw TraceError(label + ":" + std::to_string(line_no) + ": column '" + *c +
                           "' given twice; give each column once");
        }
      }
      const auto has = [&](const char* c) {
        return std::find(header.begin(), header.end(), c) != header.end();
      };
      if (has("step_ms")) {
        m.layout = "steps";
        if (!has("batch")) {
          throw TraceError(label + ":" + std::to_string(line_no) +
                           ": missing column 'batch' next to step_ms (the step's entries "
                           "NEW:CTX; see docs/calibration.md)");
        }
      } else if (has("prompt_tokens") && (has("ttft_ms") || has("tpot_ms"))) {
        m.layout = "requests";
        if (has("tpot_ms") && !has("output_tokens")) {
          throw TraceError(label + ":" + std::to_string(line_no) +
                           ": missing column 'output_tokens' next to tpot_ms (the output "
                           "length, which fixes the decode context)");
        }
      } else {
        std::vector<std::string> missing;
        for (const char* c : {"step_ms", "batch"}) {
          if (!has(c)) missing.push_back(c);
        }
        throw TraceError(label + ":" + std::to_string(line_no) + ": missing column(s) " +
                         join(missing, ", ") + ": " + layout_help() + "; got " + join(header, ","));
      }
      const auto& used = m.layout == "steps" ? kStepColumns : kRequestColumns;
      for (const auto& c : header) {
        if (std::find(used.begin(), used.end(), c) == used.end()) m.ignored_columns.push_back(c);
      }
      continue;
    }
    if (cells.size() != header.size()) {
      throw TraceError(label + ":" + std::to_string(line_no) + ": expected " +
                       std::to_string(header.size()) + " cells (the header's columns " +
                       join(header, ",") + "), got " + std::to_string(cells.size()));
    }
    const CsvRow row(label, line_no, header, std::move(cells));
    if (m.layout == "steps") {
      read_step_row(row, m);
    } else {
      read_request_row(row, m);
    }
  }
  if (header.empty()) throw TraceError(label + ": empty measurements file: " + layout_help());
  if (m.steps.empty()) throw TraceError(label + ": no measurements below the header");
  return m;
}

Measurements read_measurements(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    throw TraceError(path + ": is a directory, expected a measurements CSV file");
  }
  return parse_measurements(read_input_file<TraceError>(path, "cannot open the measurements file"),
                            path);
}

}  // namespace fleetsim
