// core/number_text.hpp — numbers read from text exactly: the whole text or nothing, no rounding, no
// NaN/inf/overflow ("nan", "1e400", "12abc" and numbers beyond 64 bits are refused). The flag validators
// (tools/cli_support.hpp) and the sweep's axis and duration parsers (reports/sweep_spec.cpp) read through these.
#pragma once
#include <charconv>
#include <cmath>
#include <cstdint>
#include <string_view>

namespace ptsim::core {

// The whole text as a finite double.
inline bool parse_finite_number(std::string_view text, double& value) {
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  return !text.empty() && ec == std::errc() && ptr == end && std::isfinite(value);
}

// The whole text as a 64-bit integer (no fraction, no rounding; decimal only, a leading '+' refused).
inline bool parse_int64(std::string_view text, int64_t& value) {
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  return !text.empty() && ec == std::errc() && ptr == end;
}

// The whole text as an unsigned 64-bit integer ("-1" is refused, not wrapped).
inline bool parse_uint64(std::string_view text, uint64_t& value) {
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  return !text.empty() && ec == std::errc() && ptr == end;
}

}  // namespace ptsim::core
