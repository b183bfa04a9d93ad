// core/json_reader.hpp — strict reading of JSON objects from user files.
// Every read names the file and the dotted field path in its error; unknown keys are errors
// (call finish() after reading all fields). Used by models/, hwprofiles/ and reports/ scenarios.
#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/error.hpp"

namespace ptsim::core {

using Json = nlohmann::json;

// Parse a whole file as JSON; InputError names the file and the parse position on failure.
Json load_json_file(const std::string& path);

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
