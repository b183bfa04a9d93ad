// core/json_reader.hpp — strict reading of JSON objects from user files.
// Every read names the file and the dotted field path in its error; unknown keys are errors
// (call finish() after reading all fields). Used by models/, hwprofiles/ and reports/ scenarios.
// Every JSON input goes through parse_json_text/load_json_file: duplicate keys and numbers that do not
// fit a double are InputErrors naming the file and the field.
#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/checked_math.hpp"
#include "core/error.hpp"

namespace ptsim::core {

using Json = nlohmann::json;

// Parse a whole file as JSON; InputError names the file and the parse position on failure.
Json load_json_file(const std::string& path);
// Parse JSON text from `source` (a file name, "--set ..."): InputError on a syntax error, a duplicate key
// or a number that does not fit a double, naming the source and the field's dotted path.
Json parse_json_text(const std::string& text, const std::string& source);

class JsonReader {
 public:
  // `source` names the file (or "--set" etc.), `context` is the dotted path of this object in it.
  JsonReader(const Json& object, std::string source, std::string context = "");

  bool has(const std::string& key) const;
  const Json& raw(const std::string& key);  // marks the key as read; throws if missing

  std::string require_string(const std::string& key);
  double require_number(const std::string& key);
  double require_positive(const std::string& key);       // > 0
  double require_non_negative(const std::string& key);   // >= 0
  long long require_int(const std::string& key);
  long long require_positive_int(const std::string& key);
  bool require_bool(const std::string& key);
  // Range-checked reads (core/checked_math.hpp, docs/input-ranges.md): the error names the value and range.
  long long require_int(const std::string& key, const IntRange& range);
  long long get_int(const std::string& key, const IntRange& range, long long fallback);
  double require_number(const std::string& key, const NumberRange& range);
  double get_number(const std::string& key, const NumberRange& range, double fallback);

  std::string get_string(const std::string& key, const std::string& fallback);
  double get_number(const std::string& key, double fallback);
  double get_positive(const std::string& key, double fallback);
  double get_non_negative(const std::string& key, double fallback);
  long long get_int(const std::string& key, long long fallback);
  long long get_positive_int(const std::string& key, long long fallback);
  bool get_bool(const std::string& key, bool fallback);
  // One of `allowed`; the error lists them.
  std::string require_enum(const std::string& key, const std::vector<std::string>& allowed);
  std::string get_enum(const std::string& key, const std::vector<std::string>& allowed,
                       const std::string& fallback);

  // A child object, with its own reader (its unknown keys are checked by its own finish()).
  JsonReader child(const std::string& key);
  // Marks a key as known without reading it (e.g. "source", "comment").
  void ignore(const std::string& key);

  // Throws InputError listing every key that was never read.
  void finish() const;

  // "file: field 'a.b'" — for messages built by callers.
  std::string where(const std::string& key) const;
  [[noreturn]] void fail(const std::string& key, const std::string& expected) const;

  const std::string& source() const { return source_; }
  const Json& object() const { return object_; }

 private:
  const Json& at(const std::string& key) const;
  const Json& object_;
  std::string source_;
  std::string context_;
  mutable std::set<std::string> read_;
};

}  // namespace ptsim::core
