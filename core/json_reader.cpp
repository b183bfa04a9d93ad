// core/json_reader.cpp — strict JSON field access with messages that name file and field.
#include "core/json_reader.hpp"

#include <fmt/format.h>

#include <cmath>
#include <fstream>
#include <sstream>

namespace ptsim::core {

Json load_json_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InputError(fmt::format("{}: cannot open file (expected a readable JSON file)", path));
  std::stringstream buffer;
  buffer << in.rdbuf();
  try {
    return Json::parse(buffer.str());
  } catch (const Json::parse_error& e) {
    throw InputError(fmt::format("{}: not valid JSON: {}", path, e.what()));
  }
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
  return v.get<long long>();
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
