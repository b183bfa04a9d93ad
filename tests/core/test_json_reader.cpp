// tests/core/test_json_reader.cpp — strict JSON reading (messages name file and field; unknown and duplicate
// keys fail; numbers beyond a double fail), range-checked reads, checked arithmetic, the shared MLM default.
#include <doctest/doctest.h>

#include "core/json_reader.hpp"
#include "core/mlm_defaults.hpp"

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

TEST_CASE("duplicate keys are refused, naming the key, its path and the source") {
  using ptsim::core::parse_json_text;
  CHECK_THROWS_WITH_AS(parse_json_text(R"({"model": "a", "model": "b"})", "s.json"),
                       doctest::Contains("s.json: duplicate key 'model'"), InputError);
  CHECK_THROWS_WITH_AS(parse_json_text(R"({"phases": [{"steps": 1}, {"steps": 2, "steps": 3}]})", "s.json"),
                       doctest::Contains("field 'phases[1].steps' is given twice"), InputError);
  // The same key in two different objects is fine.
  CHECK(parse_json_text(R"({"a": {"x": 1}, "b": {"x": 2}, "c": [{"x": 3}, {"x": 4}]})", "s.json")["c"][1]["x"] == 4);
}

TEST_CASE("a number beyond a double (1e400) is an InputError naming the field, not an internal error") {
  using ptsim::core::parse_json_text;
  CHECK_THROWS_WITH_AS(parse_json_text(R"({"phases": [{"steps": 1}, {"epochs": 1e400}]})", "s.json"),
                       doctest::Contains("s.json: field 'phases[1].epochs': a number that does not fit a double"),
                       InputError);
  CHECK_THROWS_WITH_AS(parse_json_text("{\"a\": 1,}", "t.json"), doctest::Contains("t.json: not valid JSON"), InputError);
}

TEST_CASE("range-checked integers reject non-integers, out-of-range values and values beyond int64") {
  using ptsim::core::IntRange;
  const IntRange nodes{1, 1'000'000, "test"};
  Json j = Json::parse(R"({"ok": 8, "big": 4294967297, "huge": 18446744073709551615, "frac": 2.5, "neg": -1})");
  JsonReader r(j, "c.json");
  CHECK(r.require_int("ok", nodes) == 8);
  CHECK_THROWS_WITH_AS(r.require_int("big", nodes),
                       doctest::Contains("c.json: field 'big': expected an integer in [1, 1000000] (test; see docs/input-ranges.md), got 4294967297"),
                       InputError);
  CHECK_THROWS_WITH_AS(r.require_int("huge", nodes), doctest::Contains("got 18446744073709551615"), InputError);
  CHECK_THROWS_WITH_AS(r.require_int("huge"), doctest::Contains("an integer below 2^63"), InputError);
  CHECK_THROWS_WITH_AS(r.require_int("frac", nodes), doctest::Contains("got 2.5"), InputError);
  CHECK_THROWS_WITH_AS(r.require_int("neg", nodes), doctest::Contains("got -1"), InputError);
  CHECK(r.get_int("absent", nodes, 3) == 3);
}

TEST_CASE("checked arithmetic throws InputError naming the quantity instead of wrapping") {
  using ptsim::core::checked_add;
  using ptsim::core::checked_mul;
  CHECK(checked_mul(1 << 20, 1 << 20, "x") == (int64_t{1} << 40));
  CHECK_THROWS_WITH_AS(checked_mul(INT64_MAX, 2, "global batch"), doctest::Contains("global batch: 9223372036854775807 × 2"),
                       InputError);
  CHECK_THROWS_AS(checked_add(INT64_MAX, 1, "steps"), InputError);
}

TEST_CASE("one masked-LM default for predict and data prepare: NVIDIA's 20 at seq 128 and 80 at seq 512") {
  using ptsim::core::default_max_predictions;
  // ⌈0.15 × S⌉ rounded up to a multiple of 4 (BERT's create_pretraining_data.py recipe, NVIDIA's values).
  CHECK(default_max_predictions(128) == 20);  // 19.2 -> 20
  CHECK(default_max_predictions(512) == 80);  // 76.8 -> 77 -> 80
  CHECK(default_max_predictions(256) == 40);  // 38.4 -> 39 -> 40
  CHECK(default_max_predictions(64) == 12);   // 9.6 -> 10 -> 12 (predict once used 20 here)
  CHECK(default_max_predictions(2) == 2);     // never more than the sequence
  CHECK(default_max_predictions(128, 0.2) == 28);  // 25.6 -> 26 -> 28: data prepare's --masked-lm-prob
}
