// calibration/nccl_tests_output.cpp — the nccl-tests text reader (format: nccl-tests src/common.cu, the
// print statements of its parameter line, device list, table header, rows and the average bus bandwidth).
#include "calibration/nccl_tests_output.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string_view>

#include "core/error.hpp"
#include "core/input_file.hpp"

namespace ptsim::calibration {

namespace {

using core::InputError;

// Lines of nccl-tests output are short (a row is ~150 characters, a device line ~100); a longer one is not
// nccl-tests' and is refused before it is read (docs/input-ranges.md).
constexpr size_t kMaxLineBytes = 16 * 1024;

bool all_digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// mpirun --tag-output prefixes every line with "[job,rank]<stdout>:" (or <stderr>).
std::string strip_mpi_tag(const std::string& line) {
  if (line.empty() || line[0] != '[') return line;
  const size_t close = line.find(']');
  const size_t comma = line.find(',');
  if (close == std::string::npos || comma == std::string::npos || comma > close) return line;
  if (!all_digits(std::string_view(line).substr(1, comma - 1)) ||
      !all_digits(std::string_view(line).substr(comma + 1, close - comma - 1)))
    return line;
  for (const char* tag : {"<stdout>:", "<stderr>:"})
    if (line.compare(close + 1, std::strlen(tag), tag) == 0) return line.substr(close + 1 + std::strlen(tag));
  return line;
}

// A count nccl-tests prints (threads, GPUs, ranks, devices): decimal digits in [0, 2^31).
int count_word(const std::string& word, const char* what, int line, const std::string& source) {
  int value = 0;
  const auto [ptr, ec] = std::from_chars(word.data(), word.data() + word.size(), value);
  if (!all_digits(word) || ec != std::errc() || ptr != word.data() + word.size())
    throw InputError(fmt::format("{} line {}: {} '{}': expected a whole number below 2^31", source, line, what,
                                 word.size() > 40 ? word.substr(0, 40) + "…" : word));
  return value;
}

std::vector<std::string> split_words(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> words;
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

bool parse_number(const std::string& word, double& out) {
  const char* end = word.data() + word.size();
  auto [ptr, ec] = std::from_chars(word.data(), end, out);
  return ec == std::errc() && ptr == end && std::isfinite(out);
}

// Column positions of one table header ("size count type redop [root] time algbw busbw #wrong time ...").
struct TableHeader {
  int line = 0;
  std::vector<std::string> names;
  int size = -1, count = -1, type = -1, redop = -1, time = -1, algbw = -1, busbw = -1, in_place_time = -1,
      in_place_busbw = -1;
};

TableHeader parse_header(const std::vector<std::string>& names, int line, const std::string& source) {
  TableHeader h;
  h.line = line;
  h.names = names;
  for (int i = 0; i < static_cast<int>(names.size()); ++i) {
    const std::string& n = names[static_cast<size_t>(i)];
    if (n == "size") h.size = i;
    else if (n == "count") h.count = i;
    else if (n == "type") h.type = i;
    else if (n == "redop") h.redop = i;
    else if (n == "time" && h.time < 0) h.time = i;
    else if (n == "time") h.in_place_time = i;
    else if (n == "algbw" && h.algbw < 0) h.algbw = i;
    else if (n == "busbw" && h.busbw < 0) h.busbw = i;
    else if (n == "busbw") h.in_place_busbw = i;
  }
  if (h.size != 0 || h.count < 0 || h.time < 0 || h.algbw < 0 || h.busbw < 0)
    throw InputError(fmt::format("{} line {}: a table header must name size, count, time, algbw and busbw "
                                 "(nccl-tests' '#  size  count  type  redop  root  time  algbw  busbw ...'), got '{}'",
                                 source, line, fmt::join(names, " ")));
  return h;
}

double column_number(const std::vector<std::string>& words, int column, const TableHeader& h, int line,
                     const std::string& source) {
  double value = 0;
  const std::string& word = words[static_cast<size_t>(column)];
  if (!parse_number(word, value) || value < 0)
    throw InputError(fmt::format("{} line {}: column '{}' is '{}': expected a non-negative number", source, line,
                                 h.names[static_cast<size_t>(column)], word));
  return value;
}

NcclTestsRow parse_row(const std::vector<std::string>& words, const TableHeader& h, int line, const std::string& source) {
  if (words.size() != h.names.size())
    throw InputError(fmt::format("{} line {}: {} columns, but the header on line {} names {} ({}): is the row cut or "
                                 "two outputs interleaved?",
                                 source, line, words.size(), h.line, h.names.size(), fmt::join(h.names, " ")));
  NcclTestsRow r;
  r.line = line;
  r.bytes = column_number(words, h.size, h, line, source);
  r.count = static_cast<long long>(column_number(words, h.count, h, line, source));
  if (h.type >= 0) r.type = words[static_cast<size_t>(h.type)];
  if (h.redop >= 0) r.redop = words[static_cast<size_t>(h.redop)];
  r.time_us = column_number(words, h.time, h, line, source);
  r.algbw_gb_per_second = column_number(words, h.algbw, h, line, source);
  r.busbw_gb_per_second = column_number(words, h.busbw, h, line, source);
  if (h.in_place_time >= 0) r.in_place_time_us = column_number(words, h.in_place_time, h, line, source);
  if (h.in_place_busbw >= 0) r.in_place_busbw_gb_per_second = column_number(words, h.in_place_busbw, h, line, source);
  if (!(r.time_us > 0))
    throw InputError(fmt::format("{} line {}: time {} us: expected a positive time", source, line, r.time_us));
  return r;
}

bool starts_with_digit(const std::string& s) { return !s.empty() && s[0] >= '0' && s[0] <= '9'; }

}  // namespace

std::vector<std::string> NcclTestsOutput::hosts() const {
  std::vector<std::string> out;
  for (const auto& r : ranks)
    if (std::find(out.begin(), out.end(), r.host) == out.end()) out.push_back(r.host);
  return out;
}

int NcclTestsOutput::ranks_per_host() const {
  std::map<std::string, int> per_host;
  for (const auto& r : ranks) ++per_host[r.host];
  if (per_host.empty()) return 0;
  const int first = per_host.begin()->second;
  for (const auto& [host, n] : per_host)
    if (n != first)
      throw InputError(fmt::format("{}: host '{}' runs {} ranks but '{}' runs {}: ptsim models nodes of one shape",
                                   source, host, n, per_host.begin()->first, first));
  return first;
}

namespace {

// "nThread T nGpus G ..." (the parameter line): true and the two counts when `words` hold it.
bool parameter_line(const std::vector<std::string>& words, NcclTestsOutput& out, int line, const std::string& source) {
  for (size_t i = 0; i + 3 < words.size(); ++i)
    if (words[i] == "nThread" && words[i + 2] == "nGpus") {
      out.threads = count_word(words[i + 1], "nThread", line, source);
      out.gpus_per_thread = count_word(words[i + 3], "nGpus", line, source);
      return true;
    }
  return false;
}

// "#  Rank  0 Group  0 Pid  1234 on  host device  0 [0x07] NVIDIA H100 80GB HBM3" (Group is optional).
bool rank_line(const std::string& text, std::vector<std::string> words, NcclTestsOutput& out, int line,
               const std::string& source) {
  if (!words.empty() && words[0].size() > 1 && words[0][0] == '#') {  // "#Rank": the '#' as a word of its own
    words[0].erase(0, 1);
    words.insert(words.begin(), "#");
  }
  size_t i = !words.empty() && words[0] == "#" ? 1 : 0;
  const auto word_is = [&](size_t k, const char* w) { return k < words.size() && words[k] == w; };
  if (!word_is(i, "Rank") || i + 1 >= words.size()) return false;
  NcclTestsRank rank;
  const std::string& rank_word = words[i + 1];
  i += 2;
  if (word_is(i, "Group")) i += 2;
  if (!word_is(i, "Pid") || !word_is(i + 2, "on") || !word_is(i + 4, "device") || i + 5 >= words.size()) return false;
  rank.rank = count_word(rank_word, "Rank", line, source);
  rank.host = words[i + 3];
  rank.device = count_word(words[i + 5], "device", line, source);
  // The device name is what follows the bus id in brackets, to the end of the line.
  const size_t open = text.find('[', text.find(" device "));
  const size_t close = open == std::string::npos ? open : text.find(']', open);
  if (close == std::string::npos) return false;
  const size_t first = text.find_first_not_of(" \t", close + 1);
  const size_t last = text.find_last_not_of(" \t");
  rank.device_name = first == std::string::npos ? "" : text.substr(first, last - first + 1);
  out.ranks.push_back(rank);
  return true;
}

// "# Avg bus bandwidth    : 12.3456".
bool average_line(const std::string& text, NcclTestsOutput& out) {
  const std::string label = "Avg bus bandwidth";
  const size_t at = text.find(label);
  if (at == std::string::npos) return false;
  const size_t colon = text.find_first_not_of(" \t", at + label.size());
  if (colon == std::string::npos || text[colon] != ':') return false;
  const std::vector<std::string> value = split_words(text.substr(colon + 1));
  if (!value.empty()) parse_number(value[0], out.average_busbw_gb_per_second);
  return true;
}

}  // namespace

NcclTestsOutput parse_nccl_tests_output(const std::string& text, const std::string& source) {
  NcclTestsOutput out;
  out.source = source;
  std::optional<TableHeader> header;
  int runs = 0, first_run_line = 0, line_number = 0;
  std::istringstream in(text);
  for (std::string raw; std::getline(in, raw);) {
    ++line_number;
    if (raw.size() > kMaxLineBytes)
      throw InputError(fmt::format("{} line {}: {} bytes long: expected nccl-tests output, whose lines are under "
                                   "{} bytes", source, line_number, raw.size(), kMaxLineBytes));
    if (!raw.empty() && raw.back() == '\r') raw.pop_back();
    const std::string line = strip_mpi_tag(raw);
    const std::vector<std::string> words = split_words(line);
    if (words.empty()) continue;
    if (parameter_line(words, out, line_number, source)) {
      if (++runs == 1) first_run_line = line_number;
      continue;
    }
    if (rank_line(line, words, out, line_number, source) || average_line(line, out)) continue;
    if (words[0] == "#" && words.size() > 1 && words[1] == "size") {
      header = parse_header({words.begin() + 1, words.end()}, line_number, source);
    } else if (header && starts_with_digit(words[0])) {
      out.rows.push_back(parse_row(words, *header, line_number, source));
    }
  }
  if (runs > 1)
    throw InputError(fmt::format("{}: holds {} separate nccl-tests runs (parameter lines from line {}): each process ran "
                                 "alone — was nccl-tests built without MPI=1 and started with mpirun? Give one run's output",
                                 source, runs, first_run_line));
  if (out.rows.empty())
    throw InputError(fmt::format("{}: no result rows found: expected nccl-tests output (a '#  size  count ...' header "
                                 "followed by rows of numbers)", source));
  return out;
}

NcclTestsOutput read_nccl_tests_file(const std::string& path) {
  core::require_regular_file(path, "nccl-tests output (a text file)");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(fmt::format("nccl-tests output '{}' cannot be opened (does it exist?)", path));
  std::ostringstream text;
  text << in.rdbuf();
  if (text.str().size() > (64u << 20))
    throw InputError(fmt::format("nccl-tests output '{}' is over 64 MiB: expected one benchmark's text output", path));
  return parse_nccl_tests_output(text.str(), path);
}

}  // namespace ptsim::calibration
