// tools/cli_support.hpp — CLI11 parsing with ptsim's exit-code contract.
// parse_or_exit: --help prints and returns the exit code 0 through `exit_code`; a bad flag becomes an
// InputError (exit 2) whose message names the flag and what was expected.
// Integer flags are read as decimal (CLI11 alone reads "010" as octal 8).
// positive_number / number_between / integer_in / integer_at_least: flag validators that say what was
// expected (CLI::PositiveNumber spells DBL_MAX out in full; it and CLI::Range let NaN through; an integer
// beyond 64 bits is saturated, not refused).
#pragma once
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <optional>

#include "core/checked_math.hpp"
#include "core/error.hpp"
#include "core/number_text.hpp"

namespace ptsim::tools {

// Integer flags are decimal: CLI11 converts with base detection (strtoll base 0: "010" is 8, "0x10" is 16) and
// saturates past 64 bits. This transform, put first on every integer option, lets through only [+-]digits
// (no '-' for an unsigned flag: "-1" would wrap), leading zeros dropped; a value beyond 64 bits is refused
// here unless the option's own validators (a range) judge it and say what they expect.
inline CLI::Validator decimal_integer_text(bool is_unsigned, bool refuse_overflow) {
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        const size_t sign = !text.empty() && (text[0] == '+' || text[0] == '-') ? 1 : 0;
        const bool digits = text.size() > sign && text.find_first_not_of("0123456789", sign) == std::string::npos &&
                            !(is_unsigned && text[0] == '-');
        const std::string range = is_unsigned ? "[0, 2^64)" : "[-2^63, 2^63)";
        if (!digits) return fmt::format("expected a decimal integer in {}, got '{}'", range, text);
        const size_t first = std::min(text.find_first_not_of('0', sign), text.size() - 1);
        const std::string decimal = (text[0] == '-' ? "-" : "") + text.substr(first);
        int64_t as_signed = 0;
        uint64_t as_unsigned = 0;
        const bool fits = is_unsigned ? core::parse_uint64(decimal, as_unsigned) : core::parse_int64(decimal, as_signed);
        if (!fits && refuse_overflow) return fmt::format("expected a decimal integer in {}, got '{}'", range, text);
        text = decimal;
        return "";
      },
      "");
}

// Puts decimal_integer_text first on every integer option of `app` and its subcommands.
inline void make_integer_flags_decimal(CLI::App& app) {
  for (CLI::Option* option : app.get_options()) {
    const std::string type = option->get_type_name();
    if (type != "INT" && type != "UINT") continue;
    bool has_validators = true;
    try {
      (void)option->get_validator(0);
    } catch (const CLI::OptionNotFound&) {
      has_validators = false;
    }
    option->transform(decimal_integer_text(type == "UINT", !has_validators));
  }
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) make_integer_flags_decimal(*sub);
}

// Returns an exit code to return immediately (0 for --help), or nullopt to continue.
inline std::optional<int> parse_or_exit(CLI::App& app, int argc, char** argv) {
  make_integer_flags_decimal(app);
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
