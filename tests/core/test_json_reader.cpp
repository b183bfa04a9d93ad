// tests/core/test_json_reader.cpp — strict JSON reading: messages name file and field; unknown keys fail.
#include <doctest/doctest.h>

#include "core/json_reader.hpp"

using ptsim::core::InputError;
using ptsim::core::Json;
using ptsim::core::JsonReader;

TEST_CASE("a missing required field names the file and the field") {
  Json j = Json::parse(R"({"a": 1})");
  JsonReader r(j, "x.json");
  CHECK_THROWS_WITH_AS(r.require_number("b"), doctest::Contains("x.json: field 'b' is missing"), InputError);
}

TEST_CASE("wrong types and signs are rejected with what was expected") {
  Json j = Json::parse(R"({"s": 3, "bw": -1, "n": 2.5, "nested": {"z": "q"}})");
  JsonReader r(j, "p.json");
  CHECK_THROWS_WITH_AS(r.require_string("s"), doctest::Contains("expected a string"), InputError);
  CHECK_THROWS_WITH_AS(r.require_positive("bw"), doctest::Contains("expected a positive number, got -1"), InputError);
  CHECK_THROWS_WITH_AS(r.require_int("n"), doctest::Contains("expected an integer"), InputError);
  JsonReader child = r.child("nested");
  CHECK_THROWS_WITH_AS(child.require_enum("z", {"a", "b"}), doctest::Contains("field 'nested.z'"), InputError);
}

TEST_CASE("unknown keys are errors after finish()") {
  Json j = Json::parse(R"({"known": 1, "typo": 2})");
  JsonReader r(j, "f.json");
  CHECK(r.require_number("known") == 1);
  CHECK_THROWS_WITH_AS(r.finish(), doctest::Contains("unknown field 'typo'"), InputError);
}

TEST_CASE("defaults apply only when the key is absent") {
  Json j = Json::parse(R"({"x": 5})");
  JsonReader r(j, "f.json");
  CHECK(r.get_number("x", 1.0) == 5.0);
  CHECK(r.get_number("y", 1.0) == 1.0);
  CHECK_NOTHROW(r.finish());
}
