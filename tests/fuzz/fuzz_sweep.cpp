// tests/fuzz/fuzz_sweep.cpp — libFuzzer target: what `ptsim sweep` parses (reports/sweep_spec.hpp). The first
// line is a `--vary` axis (reports::parse_axis) and a `--deadline` duration (parse_duration_seconds); the rest
// is a sweep file (core::parse_json_text, then reports::parse_sweep_json).
#include "core/json_reader.hpp"
#include "reports/sweep_spec.hpp"
#include "tests/fuzz/fuzz_support.hpp"

PTSIM_FUZZ_TARGET(sweep) {
  const std::string_view text = ptsim::fuzz::as_text(data, size);
  const size_t newline = text.find('\n');
  const std::string line(text.substr(0, newline));
  const std::string rest(newline == std::string_view::npos ? std::string_view() : text.substr(newline + 1));
  ptsim::fuzz::guarded([&] { (void)ptsim::reports::parse_axis(line); });
  ptsim::fuzz::guarded([&] { (void)ptsim::reports::parse_duration_seconds(line, "--deadline"); });
  ptsim::fuzz::guarded([&] {
    const auto json = ptsim::core::parse_json_text(rest, "fuzz-sweep.json");
    (void)ptsim::reports::parse_sweep_json(json, "fuzz-sweep.json");
  });
  return 0;
}
