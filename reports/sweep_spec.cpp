// reports/sweep_spec.cpp — parsing of sweep axes, ranges, durations and sweep files; axis expansion.
#include "reports/sweep_spec.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/number_text.hpp"
#include "reports/scenario.hpp"

namespace ptsim::reports {
namespace {

using core::InputError;
using core::Json;

int64_t parse_integer(const std::string& axis, const std::string& text, const std::string& role) {
  int64_t value = 0;
  if (!core::parse_int64(text, value))
    throw InputError(fmt::format("--vary {}: {} '{}' is not an integer (ranges are A..B, A..B+STEP or A..BxFACTOR)",
                                 axis, role, text));
  return value;
}

// A list value: JSON if it is JSON (numbers, true/false, quoted strings), read strictly as every JSON input
// is (core::parse_json_text: duplicate keys refused), else a bare string. A number JSON cannot hold (1e400)
// is an InputError, not a string and not an nlohmann exception (found by tests/fuzz/fuzz_sweep).
Json parse_value(const std::string& axis, const std::string& text) {
  if (Json::accept(text)) return core::parse_json_text(text, fmt::format("--vary {}", axis));
  try {
    const Json ignored = Json::parse(text);  // for its exception only
    (void)ignored;
  } catch (const Json::out_of_range&) {
    throw InputError(fmt::format("--vary {}: value '{}' is a number that does not fit a double", axis, text));
  } catch (const Json::exception&) {
  }
  return Json(text);
}

std::vector<Json> split_values(const std::string& axis, const std::string& list) {
  std::vector<Json> values;
  size_t start = 0;
  while (true) {
    const size_t comma = list.find(',', start);
    const std::string item = list.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (item.empty()) throw InputError(fmt::format("--vary {}: empty value in '{}'", axis, list));
    if (item.find("..") != std::string::npos) {
      for (auto& v : parse_range(axis, item)) values.push_back(std::move(v));
    } else {
      values.push_back(parse_value(axis, item));
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (values.size() > kMaxAxisValues)
    throw InputError(fmt::format("--vary {}: {} values, more than the {} an axis may have", axis, values.size(),
                                 kMaxAxisValues));
  return values;
}

void check_key(const std::string& key, const std::string& what) {
  const bool ok = !key.empty() && key.front() != '.' && key.back() != '.' && key.find("..") == std::string::npos &&
                  std::all_of(key.begin(), key.end(), [](char c) {
                    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-';
                  });
  if (!ok)
    throw InputError(fmt::format("{} '{}': expected a dotted scenario key such as cluster.nodes or "
                                 "phases.0.micro_batch (docs/sweep.md)", what, key));
}

// A paired axis' values from the command line: "A:B" per item, one part per key (no ranges inside a pair).
std::vector<Json> split_pairs(const std::string& axis, const std::string& list, size_t keys) {
  std::vector<Json> values;
  for (const Json& item : split_values(axis, list)) {
    const std::string text = item.is_string() ? item.get<std::string>() : item.dump();
    Json pair = Json::array();
    size_t start = 0;
    for (size_t colon = text.find(':');; colon = text.find(':', start)) {
      const std::string part = text.substr(start, colon == std::string::npos ? std::string::npos : colon - start);
      if (part.empty()) throw InputError(fmt::format("--vary {}: empty part in '{}'", axis, text));
      pair.push_back(parse_value(axis, part));
      if (colon == std::string::npos) break;
      start = colon + 1;
    }
    if (pair.size() != keys)
      throw InputError(fmt::format("--vary {}: value '{}' has {} part{}, expected {} (one per key, joined by ':', "
                                   "e.g. dgx-a100:pytorch-ngc20.06)",
                                   axis, text, pair.size(), pair.size() == 1 ? "" : "s", keys));
    values.push_back(std::move(pair));
  }
  return values;
}

// A sweep file's paired-axis value: a list with one entry per key.
void check_pair(const Json& value, size_t keys, const core::JsonReader& a) {
  if (!value.is_array() || value.size() != keys)
    a.fail("values", fmt::format("lists of {} values each, one per key of the paired axis; got {}", keys, value.dump()));
}

}  // namespace

std::vector<std::string> axis_keys(const std::string& key) {
  std::vector<std::string> keys;
  size_t start = 0;
  for (size_t plus = key.find('+');; plus = key.find('+', start)) {
    keys.push_back(key.substr(start, plus == std::string::npos ? std::string::npos : plus - start));
    if (plus == std::string::npos) return keys;
    start = plus + 1;
  }
}

std::vector<std::string> axis_assignments(const std::string& key, const Json& value) {
  const std::vector<std::string> keys = axis_keys(key);
  if (keys.size() == 1) return {key + "=" + value.dump()};
  std::vector<std::string> out;
  for (size_t k = 0; k < keys.size(); ++k) out.push_back(keys[k] + "=" + value.at(k).dump());
  return out;
}

const std::vector<std::string>& auto_recipe_keys() {
  static const std::vector<std::string> keys = {"micro_batch",          "grad_accum",
                                                "recipe.recompute",     "recipe.tensor_parallel",
                                                "recipe.pipeline_parallel", "recipe.pipeline_schedule",
                                                "recipe.virtual_stages", "recipe.stage_layers",
                                                "recipe.zero_stage",    "recipe.shard_group",
                                                "recipe.sequence_parallel"};
  return keys;
}

std::vector<Json> parse_range(const std::string& axis, const std::string& range) {
  const size_t dots = range.find("..");
  if (dots == std::string::npos)  // a sweep file's "range" reaches here unchecked ("" once threw std::out_of_range)
    throw InputError(fmt::format("--vary {}: range '{}' is not A..B, A..B+STEP or A..BxFACTOR", axis, range));
  const std::string first_text = range.substr(0, dots);
  std::string rest = range.substr(dots + 2);
  char op = '+';
  int64_t step = 1;
  if (const size_t at = rest.find_first_of("+x"); at != std::string::npos) {
    op = rest[at];
    step = parse_integer(axis, rest.substr(at + 1), op == 'x' ? "factor" : "step");
    rest = rest.substr(0, at);
  }
  const int64_t first = parse_integer(axis, first_text, "start");
  const int64_t last = parse_integer(axis, rest, "end");
  if (last < first) throw InputError(fmt::format("--vary {}: range '{}' ends before it starts", axis, range));
  if (op == '+' && step < 1) throw InputError(fmt::format("--vary {}: range '{}' needs a step >= 1", axis, range));
  if (op == 'x' && (step < 2 || first < 1))
    throw InputError(fmt::format("--vary {}: geometric range '{}' needs a start >= 1 and a factor >= 2", axis, range));
  std::vector<Json> values;
  for (int64_t v = first; v <= last;) {
    if (values.size() >= kMaxAxisValues)
      throw InputError(fmt::format("--vary {}: range '{}' has more than {} values", axis, range, kMaxAxisValues));
    values.emplace_back(v);
    const bool overflow = op == 'x' ? v > std::numeric_limits<int64_t>::max() / step
                                    : v > std::numeric_limits<int64_t>::max() - step;
    if (overflow) break;
    v = op == 'x' ? v * step : v + step;
  }
  return values;
}

SweepAxis parse_axis(const std::string& text) {
  const size_t eq = text.find('=');
  if (eq == std::string::npos)
    throw InputError(fmt::format("--vary '{}': expected KEY=V1,V2,… or KEY=A..B (e.g. cluster.nodes=1..64x2)", text));
  SweepAxis axis;
  axis.key = text.substr(0, eq);
  const std::vector<std::string> keys = axis_keys(axis.key);
  for (const auto& key : keys) check_key(key, "--vary");
  axis.values = keys.size() == 1 ? split_values(axis.key, text.substr(eq + 1))
                                 : split_pairs(axis.key, text.substr(eq + 1), keys.size());
  return axis;
}

double parse_duration_seconds(const std::string& text, const std::string& what) {
  static const std::vector<std::pair<std::string, double>> units = {
      {"min", 60}, {"s", 1}, {"m", 60}, {"h", 3600}, {"d", 86400}, {"w", 7 * 86400}};
  double scale = 1;
  std::string number = text;
  for (const auto& [suffix, seconds] : units)
    if (text.size() > suffix.size() && text.ends_with(suffix)) {
      number = text.substr(0, text.size() - suffix.size());
      scale = seconds;
      break;
    }
  double value = 0;
  if (!core::parse_finite_number(number, value) || value <= 0)
    throw InputError(fmt::format("{} '{}': expected a positive duration such as 21d, 36h, 90min, 3600s (or seconds)",
                                 what, text));
  if (!std::isfinite(value * scale))  // 1e306d: finite days, but no double holds the seconds
    throw InputError(fmt::format("{} '{}': the duration in seconds does not fit a double", what, text));
  return value * scale;
}

SweepObjective parse_objective(const std::string& name, const std::string& what) {
  for (auto o : {SweepObjective::time, SweepObjective::rental, SweepObjective::spot, SweepObjective::ownership,
                 SweepObjective::gpu_hours})
    if (name == to_string(o)) return o;
  throw InputError(fmt::format("{} '{}': expected one of time, rental, spot, ownership, gpu_hours", what, name));
}

const char* to_string(SweepObjective o) {
  switch (o) {
    case SweepObjective::time: return "time";
    case SweepObjective::rental: return "rental";
    case SweepObjective::spot: return "spot";
    case SweepObjective::ownership: return "ownership";
    case SweepObjective::gpu_hours: return "gpu_hours";
  }
  return "?";
}

SweepSpec parse_sweep_json(const Json& json, const std::string& source) {
  core::JsonReader r(json, source);
  SweepSpec spec;
  const Json& base = r.raw("base");
  if (base.is_string()) spec.base = load_base_scenario(base.get<std::string>(), {}, &spec.base_source);
  else if (base.is_object()) spec.base = base, spec.base_source = source;
  else r.fail("base", "a shipped scenario name, a scenario file, or an inline scenario object");
  spec.base_edits = scenario_edits(spec.base, {});
  if (r.has("set")) {
    const Json& set = r.raw("set");
    if (!set.is_object()) r.fail("set", "an object of scenario key → value");
    for (const auto& [key, value] : set.items()) {
      apply_override(spec.base, key + "=" + value.dump());
      spec.base_edits.keys.push_back(key);
    }
  }
  const Json& axes = r.raw("axes");
  if (!axes.is_array() || axes.empty()) r.fail("axes", "a non-empty list of {\"key\", \"values\"} or {\"key\", \"range\"}");
  for (size_t i = 0; i < axes.size(); ++i) {
    core::JsonReader a(axes[i], source, fmt::format("axes[{}]", i));
    SweepAxis axis;
    axis.key = a.require_string("key");
    const std::vector<std::string> keys = axis_keys(axis.key);
    for (const auto& key : keys) check_key(key, a.where("key"));
    if (a.has("range") && keys.size() > 1) a.fail("range", "a 'values' list: a paired axis has no ranges");
    if (a.has("range")) {
      axis.values = parse_range(axis.key, a.require_string("range"));
    } else {
      const Json& values = a.raw("values");
      if (!values.is_array() || values.empty()) a.fail("values", "a non-empty list");
      if (values.size() > kMaxAxisValues)  // as a --vary list or range may have (docs/sweep.md)
        a.fail("values", fmt::format("a list of at most {} values (it has {})", kMaxAxisValues, values.size()));
      axis.values.assign(values.begin(), values.end());
      if (keys.size() > 1)
        for (const Json& value : axis.values) check_pair(value, keys.size(), a);
    }
    a.finish();
    spec.axes.push_back(std::move(axis));
  }
  spec.auto_recipe = r.get_bool("auto_recipe", false);
  if (r.has("deadline")) {
    const Json& d = r.raw("deadline");
    spec.constraints.deadline_seconds =
        parse_duration_seconds(d.is_string() ? d.get<std::string>() : d.dump(), r.where("deadline"));
  }
  if (r.has("budget_usd")) spec.constraints.budget_usd = r.require_positive("budget_usd");
  if (r.has("max_gpus")) spec.constraints.max_gpus = r.require_positive_int("max_gpus");
  spec.objective = parse_objective(r.get_string("objective", "rental"), r.where("objective"));
  r.ignore("comment");
  r.ignore("description");
  r.finish();
  return spec;
}

SweepSpec load_sweep_file(const std::string& path) {
  return parse_sweep_json(core::load_json_file(path), path);
}

size_t configuration_count(const SweepSpec& spec) {
  size_t count = 1;
  for (const auto& axis : spec.axes) {
    if (axis.values.empty()) throw InputError(fmt::format("axis {}: no values", axis.key));
    if (count > kMaxConfigurations / axis.values.size())
      throw InputError(fmt::format("the axes make more than {} configurations: narrow a range or split the sweep",
                                   kMaxConfigurations));
    count *= axis.values.size();
  }
  return count;
}

std::vector<std::pair<std::string, Json>> configuration_settings(const SweepSpec& spec, size_t index) {
  std::vector<std::pair<std::string, Json>> settings(spec.axes.size());
  for (size_t a = spec.axes.size(); a-- > 0;) {  // the last axis varies fastest
    const auto& axis = spec.axes[a];
    settings[a] = {axis.key, axis.values[index % axis.values.size()]};
    index /= axis.values.size();
  }
  return settings;
}

Json configuration_json(const SweepSpec& spec, size_t index) {
  Json json = spec.base;
  for (const auto& [key, value] : configuration_settings(spec, index))
    for (const auto& assignment : axis_assignments(key, value)) apply_override(json, assignment);
  return json;
}

}  // namespace ptsim::reports
