// tests/reports/test_price_resolution.cpp — reports::resolve_prices: named prices are checked against the
// scenario's node, prices.set fills the rest (instance price before GPU price), missing and ambiguous
// figures are reported; and the shipped price-set scenario predicts with a rental figure.
#include <doctest/doctest.h>

#include <algorithm>

#include "core/error.hpp"
#include "hwprofiles/profiles.hpp"
#include "reports/prediction.hpp"
#include "reports/price_resolution.hpp"
#include "reports/scenario.hpp"
#include "tests/support/shipped_profiles.hpp"

using namespace ptsim;
using hwprofiles::PriceItem;
using reports::resolve_prices;

namespace {
const hwprofiles::ProfileSet& profiles() { return test::shipped_profiles(); }

// A scenario on `node` that names no hardware price and uses price set `set`.
reports::Scenario scenario_on(const std::string& node, const std::string& set) {
  reports::Scenario s;
  s.file = "test-scenario.json";
  s.node = node;
  s.prices.set = set;
  return s;
}

PriceItem hourly(const std::string& name, const std::string& unit, double usd, const std::string& applies_to,
                 const std::string& kind, const std::string& set) {
  PriceItem p;
  p.name = name;
  p.unit = unit;
  p.usd = usd;
  p.applies_to = applies_to;
  p.kind = kind;
  p.date = "2026-01";
  p.price_set = set;
  p.source = "test";
  return p;
}

doctest::Contains has(const std::string& text) { return doctest::Contains(text.c_str()); }
}  // namespace

TEST_CASE("a price set gives the GPU-hour price to a node without an instance price") {
  const auto& node = hwprofiles::find_node(profiles(), "dgx-h100");
  const reports::PriceResolution r = resolve_prices(scenario_on("dgx-h100", "lambda-current"), node, profiles());
  REQUIRE(r.rental);
  CHECK(r.rental->item.name == "lambda-8x-h100-sxm-on-demand");
  CHECK(r.rental->how == "set");
  // Lambda's set has no spot price: the figure is missing, with a note, not an error.
  CHECK_FALSE(r.spot);
  CHECK(r.missing == std::vector<std::string>{"spot"});
  REQUIRE(r.notes.size() == 1);
  CHECK(r.notes[0].find("no spot price for node 'dgx-h100' or its GPU 'h100-sxm'") != std::string::npos);
  // The set has no purchase price: the node's listed one stands in, as without a set.
  REQUIRE(r.purchase);
  CHECK(r.purchase->item.name == "dgx-h100-purchase-2023");
  CHECK(r.purchase->how == "node");
  CHECK(r.ambiguous.empty());
}

TEST_CASE("a price set prefers the node's instance price to its GPU's") {
  hwprofiles::ProfileSet set = profiles();
  set.price_sets["test-set"] = "test";
  for (PriceItem p : {hourly("test-p4d-instance", "instance_hour", 20.0, "p4d-24xlarge", "on_demand", "test-set"),
                      hourly("test-a100-gpu", "gpu_hour", 1.0, "a100-40gb", "on_demand", "test-set"),
                      hourly("test-a100-spot", "gpu_hour", 0.5, "a100-40gb", "spot", "test-set")})
    set.prices[p.name] = p;
  const auto& p4d = hwprofiles::find_node(set, "p4d-24xlarge");
  const reports::PriceResolution r = resolve_prices(scenario_on("p4d-24xlarge", "test-set"), p4d, set);
  REQUIRE(r.rental);
  CHECK(r.rental->item.name == "test-p4d-instance");
  REQUIRE(r.spot);  // no instance spot price: the GPU's
  CHECK(r.spot->item.name == "test-a100-spot");
  // A DGX A100 has the same GPU but no instance price of its own: the GPU-hour price.
  const auto& dgx = hwprofiles::find_node(set, "dgx-a100");
  CHECK(resolve_prices(scenario_on("dgx-a100", "test-set"), dgx, set).rental->item.name == "test-a100-gpu");
  // The shipped AWS set: p4d's own on-demand instance price.
  const auto& shipped_p4d = hwprofiles::find_node(profiles(), "p4d-24xlarge");
  const auto aws = resolve_prices(scenario_on("p4d-24xlarge", "aws-current"), shipped_p4d, profiles());
  CHECK(aws.rental->item.name == "aws-p4d-24xlarge-on-demand-2026");
  // ... and a DGX A100 (same A100 40GB GPUs) the set's per-GPU price.
  const auto& shipped_dgx = hwprofiles::find_node(profiles(), "dgx-a100");
  CHECK(resolve_prices(scenario_on("dgx-a100", "aws-current"), shipped_dgx, profiles()).rental->item.name ==
        "aws-p4d-24xlarge-on-demand-per-gpu");
}

TEST_CASE("two matching prices in a set are reported as ambiguous; predict refuses them") {
  // The published set has two Google Cloud T4 on-demand prices (the paper's implied $0.349 and the list $0.35).
  const auto& node = hwprofiles::find_node(profiles(), "t4-8x-pcie");
  reports::Scenario s = scenario_on("t4-8x-pcie", "published-2019-2020");
  const reports::PriceResolution r = resolve_prices(s, node, profiles());
  CHECK_FALSE(r.rental);
  REQUIRE(r.ambiguous.count("rental") == 1);
  CHECK(r.ambiguous.at("rental") ==
        std::vector<std::string>{"gcp-t4-on-demand-2020", "gcp-t4-on-demand-list-2020"});
  CHECK_THROWS_WITH_AS(reports::require_unambiguous(r, s),
                       has("test-scenario.json: field 'prices.set': price set 'published-2019-2020' has 2 on_demand "
                           "prices for GPU 't4' (gcp-t4-on-demand-2020, gcp-t4-on-demand-list-2020)"),
                       core::InputError);
  // Naming one resolves it.
  s.prices.rental = "gcp-t4-on-demand-2020";
  CHECK(resolve_prices(s, node, profiles()).rental->how == "named");
}

TEST_CASE("a named price for another node or GPU is an error naming both") {
  const auto& t4 = hwprofiles::find_node(profiles(), "t4-8x-pcie");
  reports::Scenario s = scenario_on("t4-8x-pcie", "");
  s.prices.rental = "aws-p3dn-24xlarge-on-demand";
  CHECK_THROWS_WITH_AS(resolve_prices(s, t4, profiles()),
                       has("'prices.rental': price 'aws-p3dn-24xlarge-on-demand' applies to node 'p3dn-24xlarge', "
                           "but the scenario's node is 't4-8x-pcie'"),
                       core::InputError);
  s.prices.rental = "lambda-8x-h100-sxm-on-demand";
  CHECK_THROWS_WITH_AS(resolve_prices(s, t4, profiles()),
                       has("applies to GPU 'h100-sxm', but the scenario's node 't4-8x-pcie' has GPU 't4'"),
                       core::InputError);
  s.prices.rental = "";
  s.prices.purchase = "dgx-1-purchase";
  CHECK_THROWS_WITH_AS(resolve_prices(s, t4, profiles()), has("applies to node 'dgx-1'"), core::InputError);
  s.prices.purchase = "gcp-t4-on-demand-2020";  // right GPU, wrong unit
  CHECK_THROWS_WITH_AS(resolve_prices(s, t4, profiles()), has("is per 'gpu_hour', expected a price per purchase"),
                       core::InputError);
}

TEST_CASE("named prices win over the set; an unknown set is an error") {
  const auto& node = hwprofiles::find_node(profiles(), "dgx-h100");
  reports::Scenario s = scenario_on("dgx-h100", "lambda-current");
  s.prices.rental = "lambda-h100-sxm-reserved";
  CHECK(resolve_prices(s, node, profiles()).rental->item.name == "lambda-h100-sxm-reserved");
  s.prices.set = "cloud-2099";
  CHECK_THROWS_WITH_AS(resolve_prices(s, node, profiles()),
                       has("'prices.set': unknown price set 'cloud-2099' (expected one of: aws-2024, aws-current"),
                       core::InputError);
}

TEST_CASE("without a set, resolution is what scenarios always had") {
  const auto& node = hwprofiles::find_node(profiles(), "t4-8x-pcie");
  const reports::Scenario s = reports::load_scenario("t4-academic-cluster");
  const reports::PriceResolution r = resolve_prices(s, node, profiles());
  CHECK(r.rental->item.name == "gcp-t4-on-demand-2020");
  CHECK(r.purchase->item.name == "t4-8x-node-purchase");
  CHECK(r.electricity->item.name == "electricity-us-2020");
  CHECK(r.pue->item.name == "pue-typical");
  CHECK_FALSE(r.spot);
  CHECK(r.missing.empty());  // nothing was asked of a set
}

TEST_CASE("the shipped price-set scenario predicts with a rental figure") {
  const reports::Prediction p =
      reports::predict_scenario(reports::load_scenario("bert-large-h100-cloud-2026"), profiles());
  REQUIRE(p.cost.rental_usd);
  // Rental = GPUs x hours x Lambda's per-GPU-hour price.
  CHECK(*p.cost.rental_usd == doctest::Approx(64 * p.time_to_train_seconds / 3600 * 3.99).epsilon(1e-9));
  CHECK_FALSE(p.cost.spot_usd);
  CHECK(p.cost.purchase_usd);
  const nlohmann::json j = reports::prediction_to_json(p);
  CHECK(j["prices"]["used"][0]["item"] == "lambda-8x-h100-sxm-on-demand");
  CHECK(j["prices"]["used"][0]["date"] == "2026-09");
  CHECK(j["prices"]["used"][0]["chosen_by"] == "set");
  CHECK(j["prices"]["missing"] == nlohmann::json::array({"spot"}));
  const std::string text = reports::prediction_to_text(p);
  CHECK(text.find("prices          rental      lambda-8x-h100-sxm-on-demand (on_demand, 2026-09") != std::string::npos);
  CHECK(text.find("no spot price") != std::string::npos);
}

TEST_CASE("an ambiguous set stops predict with exit-2 input error") {
  CHECK_THROWS_AS(reports::predict_scenario(
                      reports::load_scenario("t4-academic-cluster",
                                             {"prices.rental=\"\"", "prices.set=published-2019-2020"}),
                      profiles()),
                  core::InputError);
}
