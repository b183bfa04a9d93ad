// tools/cli_support.hpp — CLI11 parsing with ptsim's exit-code contract.
// parse_or_exit: --help prints and returns the exit code 0 through `exit_code`; a bad flag becomes an
// InputError (exit 2) whose message names the flag and what was expected.
// positive_number / number_between / integer_in / integer_at_least: flag validators that say what was
// expected (CLI::PositiveNumber spells DBL_MAX out in full; it and CLI::Range let NaN through; an integer
// beyond 64 bits is saturated, not refused).
#pragma once
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cmath>
#include <optional>

#include "core/checked_math.hpp"
#include "core/error.hpp"
#include "core/number_text.hpp"

namespace ptsim::tools {

// Returns an exit code to return immediately (0 for --help), or nullopt to continue.
inline std::optional<int> parse_or_exit(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    std::fputs(app.help().c_str(), stdout);
    return 0;
  } catch (const CLI::CallForAllHelp&) {
    std::fputs(app.help("", CLI::AppFormatMode::All).c_str(), stdout);
    return 0;
  } catch (const CLI::ParseError& e) {
    throw core::InputError(std::string("ptsim ") + app.get_name() + ": " + e.what() +
                           " (run 'ptsim " + app.get_name() + " --help' for the flags)");
  }
  return std::nullopt;
}

// A finite number > 0 (a budget, a size).
inline CLI::Validator positive_number() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        double value = 0;
        if (core::parse_finite_number(text, value) && value > 0) return "";
        return fmt::format("expected a positive finite number, got '{}'", text);
      },
      "POSITIVE");
}

// A finite number in [min, max] (CLI::Range lets NaN through: every comparison with it is false).
inline CLI::Validator number_between(double min, double max) {
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        double value = 0;
        if (core::parse_finite_number(text, value) && value >= min && value <= max) return "";
        return fmt::format("expected a number in [{}, {}], got '{}'", min, max, text);
      },
      fmt::format("NUMBER in [{}, {}]", min, max));
}

// An integer in [min, max], read exactly: a fraction or a number beyond 64 bits is refused, never rounded.
// `expected` is the message's expectation half.
inline CLI::Validator integer_between(int64_t min, int64_t max, std::string expected) {
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        int64_t value = 0;
        if (core::parse_int64(text, value) && value >= min && value <= max) return "";
        return fmt::format("expected {}, got '{}'", expected, text);
      },
      fmt::format("INT in [{}, {}]", min, max));
}
// A documented range (core::ranges, docs/input-ranges.md), worded as core::check_range words it.
inline CLI::Validator integer_in(const core::IntRange& range) {
  return integer_between(range.min, range.max, core::describe(range));
}
inline CLI::Validator integer_at_least(int64_t min) {
  return integer_between(min, std::numeric_limits<int64_t>::max(), fmt::format("an integer >= {}", min));
}

}  // namespace ptsim::tools
