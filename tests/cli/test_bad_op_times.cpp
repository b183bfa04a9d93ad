// tests/cli/test_bad_op_times.cpp — bad per-op times files (schema ptsim.op_times.v1) given to
// `ptsim calibrate measured`, through the real binary: each row is exit 2 naming the file and field.
// The valid file is `ptsim predict --gpu --op-times` output relabelled "measured" (the runtime writes the
// same schema when it measures).
#include <doctest/doctest.h>

#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/support/bad_inputs.hpp"
#include "tests/support/temp_dir.hpp"

using ptsim::test::BadInput;
using ptsim::test::run_ptsim;

namespace {

nlohmann::json valid_measurement() {
  const auto dir = ptsim::test::process_temp_dir("bad_op_times_valid");
  const std::string path = (dir / "predicted.json").string();
  const auto r = run_ptsim("predict --gpu cpu-xeon-2c --model bert-tiny --precision fp32 --micro-batch 4 --seq-len 64 "
                           "--op-times " + path);
  REQUIRE(r.exit_code == 0);
  std::ifstream in(path);
  nlohmann::json j = nlohmann::json::parse(in);
  j["source"] = "measured";
  return j;
}

std::string write(const std::string& name, const std::string& text) {
  const auto path = ptsim::test::process_temp_dir("bad_op_times_" + name) / "ops.json";
  std::ofstream(path) << text;
  return path.string();
}

BadInput op_times_case(const std::string& name, const std::string& text, std::vector<std::string> expected) {
  const std::string path = write(name, text);
  expected.insert(expected.begin(), path);
  return {name, "calibrate measured --op-times " + path, std::move(expected)};
}

std::string changed(const nlohmann::json& base, const std::function<void(nlohmann::json&)>& change) {
  nlohmann::json j = base;
  change(j);
  return j.dump(1);
}

}  // namespace

TEST_CASE("calibrate measured: the valid file fits, and each bad variant is exit 2") {
  const nlohmann::json good = valid_measurement();
  const auto ok = run_ptsim("calibrate measured --op-times " + write("good", good.dump()));
  CHECK(ok.exit_code == 0);
  CHECK(ok.output.find("fit step") != std::string::npos);

  std::string with_1e400 = good.dump();
  const std::string first_seconds = "\"seconds\":";
  with_1e400.replace(with_1e400.find(first_seconds), first_seconds.size(), "\"seconds\":1e400,\"x\":");
  ptsim::test::check_all_refused({
      op_times_case("all_zero", changed(good, [](auto& j) { for (auto& op : j["ops"]) op["seconds"] = 0; }),
                    {"field 'ops'", "positive, finite total"}),
      op_times_case("seconds_1e400", with_1e400, {"a number that does not fit a double"}),
      op_times_case("negative_seconds", changed(good, [](auto& j) { j["ops"][0]["seconds"] = -1; }),
                    {"field 'ops[0].seconds'", "non-negative"}),
      // 1e308 bytes (or FLOPs) in one op used to fit without a word and print a 300-digit table cell.
      op_times_case("bytes_read_1e308", changed(good, [](auto& j) { j["ops"][0]["bytes_read"] = 1e308; }),
                    {"field 'ops[0].bytes_read'", "[0, 9.223372036854776e+18]"}),
      op_times_case("flops_1e30", changed(good, [](auto& j) { j["ops"][0]["flops"] = 1e30; }),
                    {"field 'ops[0].flops'", "[0, 1e+21]"}),
      op_times_case("unknown_op_id", changed(good, [](auto& j) { j["ops"][1]["id"] = 100000; }),
                    {"field 'ops[1].id'", "got 100000"}),
      op_times_case("repeated_op_id", changed(good, [](auto& j) { j["ops"][1]["id"] = 0; }),
                    {"field 'ops[1].id'", "each op id once"}),
      op_times_case("unknown_kind", changed(good, [](auto& j) { j["ops"][0]["kind"] = "warp_drive"; }),
                    {"field 'ops[0].kind'"}),
      op_times_case("grad_accum_zero", changed(good, [](auto& j) { j["recipe"]["grad_accum"] = 0; }),
                    {"field 'recipe.grad_accum'", "got 0"}),
      op_times_case("predicted_not_measured", changed(good, [](auto& j) { j["source"] = "predicted"; }),
                    {"field 'source'", "calibrate on measured times"}),
      op_times_case("duplicate_key", R"({"schema": "ptsim.op_times.v1", "schema": "x"})", {"duplicate key 'schema'"}),
  });
}
