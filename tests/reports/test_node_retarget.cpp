// tests/reports/test_node_retarget.cpp — node-type what-ifs (reports/node_retarget.hpp): a sweep over every
// shipped node type from the T4 scenario runs, each configuration names its stack and prices; a stack or price
// the user pinned is kept (and fails where it does not apply); the price a swapped-in node takes.
// Expected items below are read off hwprofiles/prices/*.json and hwprofiles/stacks/*.json (each GPU has one
// stack there today); if those files change, these names change with them.
#include <doctest/doctest.h>

#include <algorithm>

#include "core/data_path.hpp"
#include "hwprofiles/profiles.hpp"
#include "reports/node_retarget.hpp"
#include "reports/prediction.hpp"
#include "reports/price_resolution.hpp"
#include "reports/sweep.hpp"
#include "reports/sweep_output.hpp"
#include "tests/support/shipped_profiles.hpp"

using namespace ptsim;
using namespace ptsim::reports;

namespace {

const hwprofiles::ProfileSet& profiles() { return test::shipped_profiles(); }

// One short phase instead of the scenario's two long ones: the sweeps below test choices, not time to train.
constexpr const char* kOnePhase = "phases=[{\"name\":\"p\",\"seq_len\":128,\"micro_batch\":8,\"steps\":100}]";

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// The T4 scenario cut to one small phase (BERT-base, 100 steps, 2 nodes) with `overrides`, and `axes`.
SweepSpec small_t4_sweep(const std::vector<std::string>& axes, std::vector<std::string> overrides = {}) {
  for (const char* o : {"model=bert-base", "cluster.nodes=2", kOnePhase}) overrides.push_back(o);
  SweepSpec spec;
  spec.base = load_base_scenario("t4-academic-cluster", overrides, &spec.base_source, &spec.base_edits);
  for (const auto& a : axes) spec.axes.push_back(parse_axis(a));
  return spec;
}

std::vector<ConfigResult> run(const SweepSpec& spec) {
  validate_sweep(spec, profiles());
  std::vector<size_t> indices(configuration_count(spec));
  for (size_t i = 0; i < indices.size(); ++i) indices[i] = i;
  return evaluate_configurations(spec, indices, profiles(), 2);
}

std::string every_node_axis() {
  std::string axis = "cluster.node=";
  for (const auto& [name, _] : profiles().nodes) axis += (axis.back() == '=' ? "" : ",") + name;
  return axis;
}

}  // namespace

TEST_CASE("a sweep over every shipped node type from the T4 scenario: each names its stack and prices") {
  REQUIRE(profiles().nodes.size() >= 11);  // t4-8x-pcie, dgx-1, …, dgx-h200 (hwprofiles/nodes/)
  std::vector<ConfigResult> results = run(small_t4_sweep({every_node_axis()}));
  REQUIRE(results.size() == profiles().nodes.size());
  for (const auto& r : results) {
    const std::string node = r.settings.at(0).second.get<std::string>();
    INFO("node " << node << ": " << r.infeasible_kind << " " << r.reason);
    REQUIRE(r.feasible);
    const std::string gpu = hwprofiles::find_node(profiles(), node).gpu;
    CHECK(r.stack == hwprofiles::default_stack_for(profiles(), gpu));
    for (const auto& figure_item : r.price_items) {  // not a structured binding: clang 14 cannot capture one
      const hwprofiles::PriceItem& p = profiles().prices.at(figure_item.second);
      CHECK_MESSAGE(p.applies_to == (p.unit == "gpu_hour" ? gpu : node),
                    figure_item.first << " price " << figure_item.second);
    }
    if (node == "t4-8x-pcie") {  // the scenario's own node: its own stack and prices, nothing swapped
      CHECK(r.what_if_notes.empty());
      CHECK(r.price_items.at("rental") == "gcp-t4-on-demand-2020");
      CHECK(r.price_items.at("purchase") == "t4-8x-node-purchase");
    } else {
      CHECK(!r.what_if_notes.empty());
    }
    // Every node other than the T4 one swaps the T4 stack (fitted on T4 and V100) only where it has no values.
    const bool apex_fits = hwprofiles::stack_fit_for(hwprofiles::find_stack(profiles(), "pytorch-apex-ngc19.07"), gpu);
    CHECK(std::any_of(r.what_if_notes.begin(), r.what_if_notes.end(),
                      [](const std::string& n) { return n.starts_with("stack "); }) == !apex_fits);
  }
  const auto by_node = [&](const std::string& node) {
    return *std::find_if(results.begin(), results.end(),
                         [&](const ConfigResult& r) { return r.settings.at(0).second == node; });
  };
  // DGX A100: aws-current prices an A100 40 GB GPU-hour (hwprofiles/prices/cloud-current.json); its purchase is
  // the node's listed one (purchase.json).
  const ConfigResult a100 = by_node("dgx-a100");
  CHECK(a100.stack == "pytorch-ngc20.06");
  CHECK(a100.price_items.at("rental") == "aws-p4d-24xlarge-on-demand-per-gpu");
  CHECK(a100.price_items.at("purchase") == "dgx-a100-purchase-2020");
  // DGX-1: no price set has an on-demand price for it or its V100 SXM2 16 GB: no rental, said in a note.
  const ConfigResult dgx1 = by_node("dgx-1");
  CHECK(!dgx1.rental_usd);
  CHECK(std::any_of(dgx1.what_if_notes.begin(), dgx1.what_if_notes.end(),
                    [](const std::string& n) { return contains(n, "no rental price") && contains(n, "dgx-1"); }));
  // p3dn.24xlarge: aws-current has none; the newest of any set is the 2019 instance price.
  CHECK(by_node("p3dn-24xlarge").price_items.at("rental") == "aws-p3dn-24xlarge-on-demand");

  // The outputs carry them: JSON (read back as MPI slices are), CSV columns, the table's columns and notes.
  SweepSpec spec = small_t4_sweep({every_node_axis()});
  const SweepAnalysis analysis = analyse_sweep(spec, results);
  const auto json = sweep_to_json(spec, results, analysis);
  for (const auto& c : json.at("configurations")) {
    CHECK(c.contains("stack"));
    CHECK(c.contains("what_if_notes"));
    const ConfigResult back = config_result_from_json(c);
    CHECK(back.stack == c.at("stack").get<std::string>());
    CHECK(back.price_items.size() == c.at("price_items").size());
  }
  const std::string csv = sweep_to_csv(spec, results);
  CHECK(contains(csv.substr(0, csv.find('\n')), ",stack,rental_price,spot_price,purchase_price"));
  CHECK(contains(csv, ",pytorch-ngc20.06,aws-p4d-24xlarge-on-demand-per-gpu,,dgx-a100-purchase-2020"));
  const std::string text = sweep_to_text(spec, results, analysis, 40);
  CHECK(contains(text, "rental price"));
  CHECK(contains(text, "swapped-in node types"));
}

TEST_CASE("a stack the user pins applies where it can; other node types are infeasible, the sweep goes on") {
  const std::vector<ConfigResult> results =
      run(small_t4_sweep({"cluster.node=t4-8x-pcie,dgx-a100"}, {"recipe.stack=pytorch-apex-ngc19.07"}));
  REQUIRE(results.size() == 2);
  CHECK(results[0].feasible);
  CHECK(!results[1].feasible);
  CHECK(results[1].infeasible_kind == "invalid");
  CHECK(contains(results[1].reason, "stack 'pytorch-apex-ngc19.07' has no values for GPU 'a100-40gb'"));
  // Varying the stack is pinning it too: the T4 stack is not swapped on the DGX A100.
  const std::vector<ConfigResult> varied =
      run(small_t4_sweep({"cluster.node=dgx-a100", "recipe.stack=pytorch-apex-ngc19.07,pytorch-ngc20.06"}));
  REQUIRE(varied.size() == 2);
  CHECK(!varied[0].feasible);
  CHECK(varied[1].feasible);
  CHECK(varied[1].stack == "pytorch-ngc20.06");
}

TEST_CASE("a price the user pins is theirs: a node type it does not apply to is refused, naming the axis") {
  CHECK_THROWS_WITH_AS(validate_sweep(small_t4_sweep({"cluster.node=t4-8x-pcie,dgx-a100"},
                                                     {"prices.rental=gcp-t4-on-demand-2020"}),
                                      profiles()),
                       doctest::Contains("--vary cluster.node: value \"dgx-a100\" is not usable"), core::InputError);
  // A price set named by the user is where a swapped-in node's prices come from.
  const std::vector<ConfigResult> results =
      run(small_t4_sweep({"cluster.node=dgx-h100"}, {"prices.set=gcp-current"}));
  REQUIRE(results.size() == 1);
  CHECK(results[0].price_items.at("rental") == "gcp-a3-highgpu-h100-on-demand-per-gpu");
  CHECK(results[0].price_items.at("spot") == "gcp-a3-highgpu-h100-spot-per-gpu");
}

TEST_CASE("swapped_in_price: the set's item, else the newest of any set, else none with the reason") {
  const auto& nodes = profiles().nodes;
  std::string why;
  auto chosen = swapped_in_price("rental", kCurrentPriceSet, nodes.at("dgx-h100"), profiles(), why);
  REQUIRE(chosen);
  CHECK(chosen->item.name == "aws-p5-48xlarge-on-demand-per-gpu");
  CHECK(chosen->how == "set");
  chosen = swapped_in_price("rental", kCurrentPriceSet, nodes.at("p3dn-24xlarge"), profiles(), why);
  REQUIRE(chosen);
  CHECK(chosen->item.name == "aws-p3dn-24xlarge-on-demand");
  CHECK(chosen->how == "newest");
  // Two T4 on-demand items, both dated 2020 (gcp-t4-on-demand-2020 and its list price): neither is chosen.
  CHECK(!swapped_in_price("rental", kCurrentPriceSet, nodes.at("t4-8x-pcie"), profiles(), why));
  CHECK(contains(why, "2 equally new rental prices"));
  CHECK(contains(why, "gcp-t4-on-demand-list-2020"));
  CHECK(!swapped_in_price("spot", kCurrentPriceSet, nodes.at("dgx-1"), profiles(), why));
  CHECK(why == "no price set has a spot price for node 'dgx-1' or its GPU 'v100-sxm2-16gb'");
}

TEST_CASE("predict --set cluster.node: the swapped node's stack and prices, said in the output") {
  const Scenario edited = load_scenario("t4-academic-cluster", {"cluster.node=dgx-a100", "cluster.nodes=2", kOnePhase});
  CHECK(edited.edits.file_node == "t4-8x-pcie");
  CHECK(edited.node_edited());
  const Prediction p = predict_scenario(edited, profiles());
  CHECK(p.stack == "pytorch-ngc20.06");
  REQUIRE(p.prices.rental);
  CHECK(p.prices.rental->item.name == "aws-p4d-24xlarge-on-demand-per-gpu");
  CHECK(p.prices.rental->how == "swapped_in");
  CHECK(p.what_if_notes.size() == 3);  // stack, rental, purchase
  CHECK(prediction_to_json(p).at("what_if_notes").size() == 3);
  CHECK(contains(prediction_to_text(p), "what-if         stack pytorch-ngc20.06"));
  // The scenario's own node: nothing swapped, no what_if_notes key in the JSON (its schema as before).
  const Prediction own = predict_scenario(load_scenario("t4-academic-cluster", {"cluster.nodes=2", kOnePhase}), profiles());
  CHECK(own.what_if_notes.empty());
  CHECK(!prediction_to_json(own).contains("what_if_notes"));
  // Retargeting twice changes nothing the second time.
  Scenario twice = edited;
  CHECK(retarget_to_node(twice, profiles()).size() == 3);
  CHECK(retarget_to_node(twice, profiles()).empty());
}

TEST_CASE("the benchmark sweep file's axes are all usable (tools/bench_sweep.sh runs it)") {
  const SweepSpec spec = load_sweep_file(core::data_path("reports/sweeps/bench-bert-large-10k.json"));
  CHECK_NOTHROW(validate_sweep(spec, profiles()));
  CHECK(configuration_count(spec) == 10080);
}

TEST_CASE("a paired axis varies node and stack together: each pair pinned, as the user wrote it") {
  const SweepAxis axis =
      parse_axis("cluster.node+recipe.stack=t4-8x-pcie:pytorch-apex-ngc19.07,dgx-h100:pytorch-2-sdpa");
  REQUIRE(axis.values.size() == 2);
  CHECK(axis.values[1] == core::Json::array({"dgx-h100", "pytorch-2-sdpa"}));
  CHECK(axis_assignments(axis.key, axis.values[1]) ==
        std::vector<std::string>{"cluster.node=\"dgx-h100\"", "recipe.stack=\"pytorch-2-sdpa\""});
  std::vector<ConfigResult> results = run(small_t4_sweep(
      {"cluster.node+recipe.stack=t4-8x-pcie:pytorch-apex-ngc19.07,dgx-h100:pytorch-2-sdpa", "cluster.nodes=1,2"}));
  REQUIRE(results.size() == 4);
  for (const auto& r : results) {
    REQUIRE(r.feasible);
    for (const auto& note : r.what_if_notes) CHECK(!note.starts_with("stack "));  // pinned: never swapped
  }
  CHECK(results[2].stack == "pytorch-2-sdpa");
  CHECK(results[2].node == "dgx-h100");
  SweepSpec spec = small_t4_sweep({"cluster.node+recipe.stack=t4-8x-pcie:pytorch-apex-ngc19.07,dgx-h100:pytorch-2-sdpa",
                                   "cluster.nodes=1,2"});
  const SweepAnalysis analysis = analyse_sweep(spec, results);
  CHECK(contains(sweep_to_text(spec, results, analysis, 40), "cluster.node+recipe.stack=dgx-h100:pytorch-2-sdpa"));
  CHECK_THROWS_WITH_AS(parse_axis("cluster.node+recipe.stack=dgx-a100"),
                       doctest::Contains("value 'dgx-a100' has 1 part, expected 2"), core::InputError);
  // A sweep file's paired axis takes lists.
  core::Json file = core::Json::object();
  file["base"] = "t4-academic-cluster";
  file["axes"] = core::Json::array({core::Json::object()});
  file["axes"][0]["key"] = "cluster.node+recipe.stack";
  file["axes"][0]["values"] = core::Json::array({core::Json::array({"dgx-a100", "pytorch-ngc20.06"})});
  CHECK(parse_sweep_json(file, "f.json").axes.at(0).values.at(0).size() == 2);
  core::Json bad = file;
  bad["axes"][0]["values"] = core::Json::array({"dgx-a100"});
  CHECK_THROWS_WITH_AS(parse_sweep_json(bad, "f.json"), doctest::Contains("lists of 2 values each"), core::InputError);
}
