// calibration/nccl_tests_output.cpp — the nccl-tests text reader (format: nccl-tests src/common.cu, the
// print statements of its parameter line, device list, table header, rows and the average bus bandwidth).
#include "calibration/nccl_tests_output.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <map>
#include <optional>
#include <regex>
#include <sstream>

#include "core/error.hpp"

namespace ptsim::calibration {

namespace {

using core::InputError;

// mpirun --tag-output prefixes every line with "[job,rank]<stdout>:".
std::string strip_mpi_tag(const std::string& line) {
  static const std::regex tag(R"(^\[\d+,\d+\]<std(out|err)>:)");
  std::smatch m;
  return std::regex_search(line, m, tag) ? line.substr(static_cast<size_t>(m.length(0))) : line;
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

NcclTestsOutput parse_nccl_tests_output(const std::string& text, const std::string& source) {
  static const std::regex params(R"(nThread\s+(\d+)\s+nGpus\s+(\d+))");
  static const std::regex rank_line(
      R"(^#?\s*Rank\s+(\d+)\s+(?:Group\s+\d+\s+)?Pid\s+\d+\s+on\s+(\S+)\s+device\s+(\d+)\s+\[[^\]]*\]\s+(.*?)\s*$)");
  static const std::regex average(R"(Avg bus bandwidth\s*:\s*([0-9.eE+-]+))");
  NcclTestsOutput out;
  out.source = source;
  std::optional<TableHeader> header;
  int runs = 0, first_run_line = 0, line_number = 0;
  std::istringstream in(text);
  for (std::string raw; std::getline(in, raw);) {
    ++line_number;
    if (!raw.empty() && raw.back() == '\r') raw.pop_back();
    const std::string line = strip_mpi_tag(raw);
    std::smatch m;
    const std::vector<std::string> words = split_words(line);
    if (words.empty()) continue;
    if (std::regex_search(line, m, params)) {
      if (++runs == 1) first_run_line = line_number;
      out.threads = std::stoi(m[1]);
      out.gpus_per_thread = std::stoi(m[2]);
    } else if (std::regex_search(line, m, rank_line)) {
      out.ranks.push_back({std::stoi(m[1]), m[2], std::stoi(m[3]), m[4]});
    } else if (std::regex_search(line, m, average)) {
      parse_number(m[1], out.average_busbw_gb_per_second);
    } else if (words[0] == "#" && words.size() > 1 && words[1] == "size") {
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
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(fmt::format("nccl-tests output '{}' cannot be opened (does it exist?)", path));
  std::ostringstream text;
  text << in.rdbuf();
  if (text.str().size() > (64u << 20))
    throw InputError(fmt::format("nccl-tests output '{}' is over 64 MiB: expected one benchmark's text output", path));
  return parse_nccl_tests_output(text.str(), path);
}

}  // namespace ptsim::calibration
