// core/json_reader.cpp — strict JSON field access with messages that name file and field.
#include "core/json_reader.hpp"

#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <set>
#include <fstream>
#include <sstream>

#include "core/input_file.hpp"

namespace ptsim::core {

namespace {

// Follows the parser through the document so errors can name the field: one frame per open object or
// array (the current key or element index), plus the keys already seen in each object (duplicates).
class ParsePath {
 public:
  explicit ParsePath(const std::string& source) : source_(source) {}

  bool on_event(Json::parse_event_t event, const Json& parsed) {
    using E = Json::parse_event_t;
    switch (event) {
      case E::object_start: frames_.push_back({true, {}, "", 0}); break;
      case E::array_start: frames_.push_back({false, {}, "", 0}); break;
      case E::key: on_key(parsed.get<std::string>()); break;
      case E::object_end:
      case E::array_end:
        frames_.pop_back();
        element_done();
        break;
      case E::value: element_done(); break;
    }
    return true;  // keep every value
  }

  // Dotted path of the value being parsed, e.g. "phases[0].epochs" ("the document" at the top).
  std::string path() const {
    std::string out;
    for (const auto& f : frames_) {
      if (f.object && !f.key.empty()) out += (out.empty() ? "" : ".") + f.key;
      if (!f.object) out += fmt::format("[{}]", f.index);
    }
    return out;
  }

 private:
  struct Frame {
    bool object;
    std::set<std::string> keys;
    std::string key;
    size_t index;
  };

  // nlohmann::json keeps the last of duplicate keys silently; a duplicate is almost always an edit
  // mistake (two values for one field), so it is refused rather than guessed.
  void on_key(const std::string& key) {
    Frame& f = frames_.back();
    f.key = key;
    if (!f.keys.insert(key).second)
      throw InputError(fmt::format("{}: duplicate key '{}' (field '{}' is given twice; keep one)", source_, key, path()));
  }

  void element_done() {
    if (!frames_.empty() && !frames_.back().object) ++frames_.back().index;
  }

  const std::string& source_;
  std::vector<Frame> frames_;
};

}  // namespace

Json parse_json_text(const std::string& text, const std::string& source) {
  ParsePath where(source);
  auto callback = [&where](int /*depth*/, Json::parse_event_t event, Json& parsed) {
    return where.on_event(event, parsed);
  };
  try {
    return Json::parse(text, callback);
  } catch (const Json::parse_error& e) {
    throw InputError(fmt::format("{}: not valid JSON: {}", source, e.what()));
  } catch (const Json::out_of_range& e) {
    // nlohmann reports a number beyond ±1.8e308 (e.g. 1e400) as out_of_range 406.
    const std::string field = where.path();
    throw InputError(fmt::format("{}: {}: a number that does not fit a double ({}); expected a finite number "
                                 "of magnitude below 1.8e308",
                                 source, field.empty() ? "the document" : "field '" + field + "'", e.what()));
  } catch (const Json::exception& e) {
    throw InputError(fmt::format("{}: not valid JSON: {}", source, e.what()));
  }
}

Json load_json_file(const std::string& path) {
  require_regular_file(path, "a JSON file");
  std::ifstream in(path);
  if (!in) throw InputError(fmt::format("{}: cannot open file (expected a readable JSON file)", path));
  std::stringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) throw InputError(fmt::format("{}: cannot read the file (expected a readable JSON file)", path));
  return parse_json_text(buffer.str(), path);
}

JsonReader::JsonReader(const Json& object, std::string source, std::string context)
    : object_(object), source_(std::move(source)), context_(std::move(context)) {
  if (!object_.is_object()) {
    throw InputError(fmt::format("{}: {} must be a JSON object, got {}", source_,
                                 context_.empty() ? "the document" : "field '" + context_ + "'",
                                 object_.type_name()));
  }
}

std::string JsonReader::where(const std::string& key) const {
  return fmt::format("{}: field '{}{}'", source_, context_.empty() ? "" : context_ + ".", key);
}

void JsonReader::fail(const std::string& key, const std::string& expected) const {
  throw InputError(fmt::format("{}: expected {}", where(key), expected));
}

bool JsonReader::has(const std::string& key) const { return object_.contains(key); }

const Json& JsonReader::at(const std::string& key) const {
  auto it = object_.find(key);
  if (it == object_.end()) throw InputError(fmt::format("{} is missing (required)", where(key)));
  read_.insert(key);
  return *it;
}

const Json& JsonReader::raw(const std::string& key) { return at(key); }

void JsonReader::ignore(const std::string& key) { read_.insert(key); }

std::string JsonReader::require_string(const std::string& key) {
  const Json& v = at(key);
  if (!v.is_string()) fail(key, fmt::format("a string, got {}", v.dump()));
  return v.get<std::string>();
}

double JsonReader::require_number(const std::string& key) {
  const Json& v = at(key);
  if (!v.is_number()) fail(key, fmt::format("a number, got {}", v.dump()));
  double x = v.get<double>();
  if (!std::isfinite(x)) fail(key, "a finite number");
  return x;
}

double JsonReader::require_positive(const std::string& key) {
  double x = require_number(key);
  if (!(x > 0)) fail(key, fmt::format("a positive number, got {}", x));
  return x;
}

double JsonReader::require_non_negative(const std::string& key) {
  double x = require_number(key);
  if (x < 0) fail(key, fmt::format("a non-negative number, got {}", x));
  return x;
}

long long JsonReader::require_int(const std::string& key) {
  const Json& v = at(key);
  if (!v.is_number_integer()) fail(key, fmt::format("an integer, got {}", v.dump()));
  // An unsigned literal above 2^63 - 1 would wrap negative in long long: refuse it instead.
  if (v.is_number_unsigned() && v.get<unsigned long long>() > static_cast<unsigned long long>(INT64_MAX))
    fail(key, fmt::format("an integer below 2^63, got {}", v.dump()));
  return v.get<long long>();
}

long long JsonReader::require_int(const std::string& key, const IntRange& range) {
  const Json& v = at(key);
  const bool fits = v.is_number_integer() &&
                    !(v.is_number_unsigned() && v.get<unsigned long long>() > static_cast<unsigned long long>(INT64_MAX));
  if (!fits) fail(key, fmt::format("{}, got {}", describe(range), v.dump()));
  const long long x = v.get<long long>();
  if (x < range.min || x > range.max) fail(key, fmt::format("{}, got {}", describe(range), x));
  return x;
}

long long JsonReader::get_int(const std::string& key, const IntRange& range, long long fallback) {
  return has(key) ? require_int(key, range) : fallback;
}

double JsonReader::require_number(const std::string& key, const NumberRange& range) {
  const double x = require_number(key);
  if (!in_range(x, range)) fail(key, fmt::format("{}, got {}", describe(range), x));
  return x;
}

double JsonReader::get_number(const std::string& key, const NumberRange& range, double fallback) {
  return has(key) ? require_number(key, range) : fallback;
}

long long JsonReader::require_positive_int(const std::string& key) {
  long long x = require_int(key);
  if (x <= 0) fail(key, fmt::format("a positive integer, got {}", x));
  return x;
}

bool JsonReader::require_bool(const std::string& key) {
  const Json& v = at(key);
  if (!v.is_boolean()) fail(key, fmt::format("true or false, got {}", v.dump()));
  return v.get<bool>();
}

std::string JsonReader::get_string(const std::string& key, const std::string& fallback) {
  return has(key) ? require_string(key) : fallback;
}
double JsonReader::get_number(const std::string& key, double fallback) {
  return has(key) ? require_number(key) : fallback;
}
double JsonReader::get_positive(const std::string& key, double fallback) {
  return has(key) ? require_positive(key) : fallback;
}
double JsonReader::get_non_negative(const std::string& key, double fallback) {
  return has(key) ? require_non_negative(key) : fallback;
}
long long JsonReader::get_int(const std::string& key, long long fallback) {
  return has(key) ? require_int(key) : fallback;
}
long long JsonReader::get_positive_int(const std::string& key, long long fallback) {
  return has(key) ? require_positive_int(key) : fallback;
}
bool JsonReader::get_bool(const std::string& key, bool fallback) {
  return has(key) ? require_bool(key) : fallback;
}

std::string JsonReader::require_enum(const std::string& key, const std::vector<std::string>& allowed) {
  std::string v = require_string(key);
  for (const auto& a : allowed)
    if (a == v) return v;
  fail(key, fmt::format("one of [{}], got \"{}\"", fmt::join(allowed, ", "), v));
}

std::string JsonReader::get_enum(const std::string& key, const std::vector<std::string>& allowed,
                                 const std::string& fallback) {
  return has(key) ? require_enum(key, allowed) : fallback;
}

JsonReader JsonReader::child(const std::string& key) {
  const Json& v = at(key);
  if (!v.is_object()) fail(key, fmt::format("an object, got {}", v.type_name()));
  return JsonReader(v, source_, context_.empty() ? key : context_ + "." + key);
}

void JsonReader::finish() const {
  std::vector<std::string> unknown;
  for (auto it = object_.begin(); it != object_.end(); ++it)
    if (!read_.count(it.key())) unknown.push_back(it.key());
  if (!unknown.empty()) {
    throw InputError(fmt::format("{}: unknown field{} '{}' in {} (check the spelling; see docs/json-formats.md)",
                                 source_, unknown.size() > 1 ? "s" : "", fmt::join(unknown, "', '"),
                                 context_.empty() ? "the document" : "'" + context_ + "'"));
  }
}

}  // namespace ptsim::core
