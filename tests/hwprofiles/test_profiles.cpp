// tests/hwprofiles/test_profiles.cpp — the shipped profiles load and agree with docs/references.md
// (the project's table of datasheet, paper and price figures, each with its source); malformed or
// inconsistent profiles fail with an InputError naming the file and the field.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <string>

#include "core/error.hpp"
#include "hwprofiles/profiles.hpp"
#include "tests/hwprofiles/profile_fixture.hpp"

using namespace ptsim::hwprofiles;
using ptsim::core::InputError;
using ptsim::core::Json;
using ptsim::test::ScratchProfiles;

namespace {
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
// Datasheet figures are exact in the JSON; 1e-9 relative only absorbs unit-conversion rounding.
// doctest::Contains takes a C string; messages here are built from the scratch file's path.
doctest::Contains has(const std::string& text) { return doctest::Contains(text.c_str()); }
bool same(double a, double b) { return std::fabs(a - b) <= 1e-9 * std::fabs(b); }
}  // namespace

TEST_CASE("every shipped profile loads and cross-validates") {
  const ProfileSet set = load_profiles();
  for (const char* gpu : {"t4", "v100-sxm2-16gb", "v100-sxm2-32gb", "v100-sxm3-32gb", "v100-sxm3-32gb-350w",
                          "v100-pcie-16gb", "a100-40gb", "a100-80gb", "h100-sxm", "h200"})
    CHECK_MESSAGE(set.gpus.count(gpu) == 1, gpu);
  for (const char* node : {"t4-8x-pcie", "dgx-1", "dgx-2", "dgx-2h", "p3dn-24xlarge", "p3-16xlarge", "dgx-a100",
                           "dgx-h100"})
    CHECK_MESSAGE(set.nodes.count(node) == 1, node);
  for (const char* net : {"10gbe-tcp", "25gbe-tcp", "40gbe-tcp", "efa-100g", "ib-edr", "ib-hdr", "ib-ndr", "ib-qdr-40"})
    CHECK_MESSAGE(set.networks.count(net) == 1, net);
  // Every number in a profile has a non-empty source.
  // (Named copies, not structured bindings, in the CHECK macros: clang 14 cannot capture bindings in a lambda.)
  for (const auto& [gpu_name, g] : set.gpus) {
    const std::string name = gpu_name;
    CHECK_MESSAGE(g.sources.size() == 13, name);  // 10 scalar quantities + 3 curves' half sizes (the rest is the stack's)
    for (const auto& entry : g.sources) CHECK_MESSAGE(!entry.second.empty(), name, ".", entry.first);
  }
  for (const auto& [node_name, n] : set.nodes) {
    const std::string name = node_name;
    CHECK(set.gpus.count(n.gpu) == 1);
    CHECK(set.networks.count(n.default_network) == 1);
    for (const char* field : {"gpus_per_node", "intra_node_latency", "nics_per_node", "power"})
      CHECK_MESSAGE(n.sources.count(field) == 1, name, ".", field);
  }
  for (const auto& entry : set.prices) CHECK_MESSAGE(!entry.second.source.empty(), entry.first);
}

TEST_CASE("GPU figures match the datasheets in docs/references.md (GPUs table)") {
  const ProfileSet set = load_profiles();
  const GpuProfile& t4 = find_gpu(set, "t4");
  CHECK(same(t4.peak_fp16_tensor_flops_per_second, 65e12));
  CHECK(same(t4.peak_fp32_flops_per_second, 8.1e12));
  CHECK(t4.peak_bf16_tensor_flops_per_second == 0);  // "fp16; no bf16"
  CHECK(same(t4.memory_bandwidth_bytes_per_second, 320e9));
  CHECK(same(t4.memory_bytes, 16 * kGiB));
  CHECK(same(t4.power_watts, 70));
  CHECK(t4.pcie_generation == "3.0");
  CHECK(t4.sustained_clock_fraction < 1.0);  // "throttles under sustained load"

  const GpuProfile& v100 = find_gpu(set, "v100-sxm2-16gb");
  CHECK(same(v100.peak_fp16_tensor_flops_per_second, 125e12));
  CHECK(same(v100.peak_fp32_flops_per_second, 15.7e12));
  CHECK(same(v100.memory_bandwidth_bytes_per_second, 900e9));
  CHECK(same(v100.power_watts, 300));
  CHECK(same(find_gpu(set, "v100-sxm2-32gb").memory_bytes, 32 * kGiB));

  const GpuProfile& sxm3 = find_gpu(set, "v100-sxm3-32gb");  // DGX-2H part: ~130 TFLOPS at 450 W
  CHECK(same(sxm3.peak_fp16_tensor_flops_per_second, 130e12));
  CHECK(same(sxm3.power_watts, 450));
  CHECK(same(sxm3.memory_bytes, 32 * kGiB));
  CHECK(same(find_gpu(set, "v100-sxm3-32gb-350w").power_watts, 350));

  const GpuProfile& pcie = find_gpu(set, "v100-pcie-16gb");
  CHECK(same(pcie.peak_fp16_tensor_flops_per_second, 112e12));
  CHECK(same(pcie.peak_fp32_flops_per_second, 14e12));
  CHECK(same(pcie.power_watts, 250));

  const GpuProfile& a100 = find_gpu(set, "a100-40gb");
  CHECK(same(a100.peak_fp16_tensor_flops_per_second, 312e12));
  CHECK(same(a100.peak_bf16_tensor_flops_per_second, 312e12));
  CHECK(same(a100.peak_tf32_flops_per_second, 156e12));
  CHECK(same(a100.peak_fp32_flops_per_second, 19.5e12));
  CHECK(same(a100.memory_bandwidth_bytes_per_second, 1555e9));
  CHECK(same(find_gpu(set, "a100-80gb").memory_bandwidth_bytes_per_second, 2039e9));

  const GpuProfile& h100 = find_gpu(set, "h100-sxm");
  CHECK(same(h100.peak_bf16_tensor_flops_per_second, 989e12));
  CHECK(same(h100.peak_fp8_tensor_flops_per_second, 1979e12));  // datasheet: 3,958 with sparsity
  CHECK(same(find_gpu(set, "h200").peak_fp8_tensor_flops_per_second, 1979e12));
  CHECK(a100.peak_fp8_tensor_flops_per_second == 0);  // fp8 arrived with Hopper
  CHECK(same(h100.peak_fp32_flops_per_second, 67e12));
  CHECK(same(h100.memory_bandwidth_bytes_per_second, 3.35e12));
  CHECK(same(h100.power_watts, 700));
  const GpuProfile& h200 = find_gpu(set, "h200");
  CHECK(same(h200.memory_bandwidth_bytes_per_second, 4.8e12));
  CHECK(same(h200.memory_bytes, 141 * kGiB));
  // docs/references.md, H200 measurements: D2D copy 4.27 of 4.8 TB/s; bf16 GEMM 700-777 TFLOP/s of 989 (the
  // pytorch-2-sdpa stack's H200 values).
  const GpuProfile h200_stacked = device_profile(set, "h200", "pytorch-2-sdpa");
  CHECK(h200_stacked.memory_efficiency == doctest::Approx(4.27 / 4.8).epsilon(0.01));
  CHECK(h200_stacked.gemm.max_efficiency >= 700.0 / 989);
  CHECK(h200_stacked.gemm.max_efficiency <= 777.0 / 989 + 0.01);
  // V100 large-GEMM efficiency under the 2019 stack is expected in 0.7-0.8 of peak.
  const GpuProfile v100_stacked = device_profile(set, "v100-sxm2-16gb", "pytorch-apex-ngc19.07");
  CHECK(v100_stacked.gemm.max_efficiency >= 0.7);
  CHECK(v100_stacked.gemm.max_efficiency <= 0.8);
}

TEST_CASE("stacks: every GPU has exactly one stack; a stack lacking a GPU says which stacks have it") {
  const ProfileSet set = load_profiles();
  for (const auto& entry : set.gpus) {
    const std::string name = entry.first;  // a copy: clang 14 cannot capture bindings in CAPTURE's lambda
    CAPTURE(name);
    CHECK_NOTHROW(default_stack_for(set, name));
  }
  CHECK(find_stack(set, "pytorch-2-sdpa").fuses_op("fused_attention"));
  CHECK_FALSE(find_stack(set, "pytorch-apex-ngc19.07").fuses_op("fused_attention"));
  CHECK_THROWS_WITH_AS(device_profile(set, "t4", "pytorch-ngc20.06"),
                       has("stack 'pytorch-ngc20.06' has no values for GPU 't4' (it was fitted on: a100-40gb)"),
                       InputError);
  CHECK_THROWS_WITH_AS(device_profile(set, "t4", "pytorch-ngc20.06"), has("pytorch-apex-ngc19.07"), InputError);
}

TEST_CASE("malformed stacks name the file and the field") {
  ScratchProfiles scratch;
  const std::string file = scratch.path("stacks/pytorch-ngc20.06.json");
  SUBCASE("a fusion ptsim does not model") {
    scratch.edit("stacks/pytorch-ngc20.06.json", [](Json& j) { j["fuses"] = {"fused_bias_dropout_residual_layernorm"}; });
    CHECK_THROWS_WITH_AS(load_stack_profile(file), has(file + ": field 'fuses': expected fusions among"), InputError);
  }
  SUBCASE("the fusions ptsim models load") {
    scratch.edit("stacks/pytorch-ngc20.06.json",
                 [](Json& j) { j["fuses"] = {"fused_softmax_dropout", "fused_bias_dropout_residual"}; });
    const StackProfile st = load_stack_profile(file);
    CHECK(st.fuses_op("fused_softmax_dropout"));
    CHECK(st.fuses_op("fused_bias_dropout_residual"));
  }
  SUBCASE("an efficiency above 1") {
    scratch.edit("stacks/pytorch-ngc20.06.json",
                 [](Json& j) { j["fits"]["ga100-40gb"]["gemm_max_efficiency"]["value"] = 1.2; });
    CHECK_THROWS_WITH_AS(load_stack_profile(file), has("gemm_max_efficiency.value': expected a fraction"), InputError);
  }
  SUBCASE("an unknown GPU") {
    scratch.edit("stacks/pytorch-ngc20.06.json", [](Json& j) { j["fits"]["ga100-40gb"]["gpus"] = {"a100-41gb"}; });
    CHECK_THROWS_WITH_AS(load_profiles(scratch.dir()), has("field 'fits.ga100-40gb.gpus': unknown GPU profile 'a100-41gb'"),
                         InputError);
  }
}

TEST_CASE("nodes and networks match docs/references.md (Nodes and networks)") {
  const ProfileSet set = load_profiles();
  const NodeProfile& dgx2h = find_node(set, "dgx-2h");
  CHECK(dgx2h.gpu == "v100-sxm3-32gb");
  CHECK(dgx2h.gpus_per_node == 16);
  CHECK(dgx2h.topology == IntraNodeTopology::nvswitch);
  CHECK(dgx2h.nics_per_node == 8);
  CHECK(dgx2h.default_network == "ib-edr");
  CHECK(same(dgx2h.nvlink_bytes_per_second, 150e9));  // 300 GB/s per GPU, both directions
  CHECK(same(find_node(set, "dgx-2").power_watts, 10e3));
  CHECK(same(dgx2h.power_watts, 12e3));

  const NodeProfile& dgx1 = find_node(set, "dgx-1");
  CHECK(dgx1.topology == IntraNodeTopology::nvlink_cube_mesh);
  CHECK(dgx1.nics_per_node == 4);
  CHECK(dgx1.nvlink_links_per_gpu == 6);

  const NodeProfile& p3dn = find_node(set, "p3dn-24xlarge");
  CHECK(p3dn.gpu == "v100-sxm2-32gb");
  CHECK(same(find_network(set, p3dn.default_network).link_bytes_per_second, 12.5e9));  // 100 Gbps EFA
  const NodeProfile& p3 = find_node(set, "p3-16xlarge");
  CHECK(p3.gpu == "v100-sxm2-16gb");
  CHECK(same(find_network(set, p3.default_network).link_bytes_per_second, 3.125e9));  // 25 Gbps

  CHECK(same(find_network(set, find_node(set, "dgx-a100").default_network).link_bytes_per_second, 25e9));  // HDR
  CHECK(same(find_network(set, find_node(set, "dgx-h100").default_network).link_bytes_per_second, 50e9));  // NDR

  const NodeProfile& t4node = find_node(set, "t4-8x-pcie");
  CHECK(t4node.topology == IntraNodeTopology::pcie_tree);
  CHECK(t4node.gpus_per_node == 8);
  CHECK(t4node.nics_per_node == 1);
  CHECK(same(t4node.pcie_link_bytes_per_second, 15.75e9));  // PCIe 3.0 x16
  const NetworkProfile& tenge = find_network(set, t4node.default_network);
  CHECK(same(tenge.link_bytes_per_second, 1.25e9));  // 10 GbE
  CHECK(tenge.transport == Transport::tcp_socket);
  CHECK(tenge.host_staging);

  // DeepSpeed: 40 GbE TCP measured 4.1 Gbps effective.
  const NetworkProfile& forty = find_network(set, "40gbe-tcp");
  CHECK(forty.link_bytes_per_second * 8 * forty.achieved_fraction == doctest::Approx(4.1e9).epsilon(1e-6));
  CHECK(find_network(set, "ib-edr").transport == Transport::rdma);
}

TEST_CASE("prices match docs/references.md (Prices table and validation targets)") {
  const ProfileSet set = load_profiles();
  const PriceItem& t4 = set.prices.at("gcp-t4-on-demand-2020");
  CHECK(t4.unit == "gpu_hour");
  CHECK(t4.applies_to == "t4");
  // T4 rental target: $25,739 for 256 T4 x 12 days; $0.349 rounded reproduces it to 0.1%.
  CHECK(256 * 12 * 24 * t4.usd == doctest::Approx(25739).epsilon(1e-3));
  CHECK(set.prices.at("aws-p3dn-24xlarge-on-demand").usd == 31.212);
  CHECK(set.prices.at("aws-p3-16xlarge-on-demand").usd == 24.48);
  CHECK(set.prices.at("aws-p4d-24xlarge-on-demand-2024").usd == 32.77);
  // Purchase prices are attached to their nodes by load_profiles.
  CHECK(find_node(set, "dgx-2").purchase_usd == 399999);
  CHECK(find_node(set, "dgx-1").purchase_usd == 149000);
  CHECK(find_node(set, "dgx-a100").purchase_usd == 199000);
  CHECK(32 * find_node(set, "t4-8x-pcie").purchase_usd == doctest::Approx(624e3).epsilon(1e-3));  // ~$624K
  CHECK(find_node(set, "dgx-2h").purchase_usd == 0);  // unknown
  CHECK(set.prices.at("electricity-us-2020").unit == "kwh");
  CHECK(set.prices.at("electricity-us-2020").source.rfind("assumption:", 0) == 0);
  CHECK(set.prices.at("pue-typical").ratio >= 1.0);
}

TEST_CASE("every shipped price item has a kind, a date, a declared price set and a source") {
  const ProfileSet set = load_profiles();
  CHECK(set.price_sets.count("published-2019-2020") == 1);
  for (const auto& [price_name, p] : set.prices) {
    const std::string name = price_name;
    CAPTURE(name);
    CHECK(std::find(price_kinds().begin(), price_kinds().end(), p.kind) != price_kinds().end());
    CHECK((p.date.size() == 4 || p.date.size() == 7));
    CHECK(set.price_sets.count(p.price_set) == 1);
    CHECK(!p.source.empty());
  }
  // The published scenarios' prices keep their set; current prices sit in provider sets.
  for (const char* name : {"gcp-t4-on-demand-2020", "aws-p3dn-24xlarge-on-demand", "aws-p3-16xlarge-on-demand",
                           "t4-8x-node-purchase", "dgx-2-purchase-2018", "electricity-us-2020", "pue-typical"})
    CHECK_MESSAGE(set.prices.at(name).price_set == "published-2019-2020", name);
  CHECK(set.prices.at("aws-p4d-24xlarge-on-demand-2024").price_set == "aws-2024");
  CHECK(set.prices.at("dgx-a100-purchase-2020").date == "2020-05");
  CHECK(set.prices.at("pue-typical").kind == "energy");
  CHECK(find_node(set, "dgx-h100").purchase_usd == 270000);  // SemiAnalysis estimate (servers-current)
}

TEST_CASE("price ages count months from the observation date") {
  CHECK(price_age_months("2026-05", 2026, 12) == 7);
  CHECK(price_age_months("2020", 2026, 12) == 83);  // a year alone counts from its January
  CHECK(price_age_months("2019-12", 2020, 1) == 1);
}

TEST_CASE("malformed price kinds, dates and sets name the file and the field") {
  ScratchProfiles scratch;
  SUBCASE("unknown kind") {
    std::string file = scratch.edit("prices/cloud.json", [](Json& j) { j["items"][0]["kind"] = "bargain"; });
    CHECK_THROWS_WITH_AS(load_price_file(file), has(file + ": field 'items[0].kind'"), InputError);
  }
  SUBCASE("kind that does not fit the unit") {
    std::string file = scratch.edit("prices/cloud.json", [](Json& j) { j["items"][0]["kind"] = "purchase"; });
    CHECK_THROWS_WITH_AS(load_price_file(file), has("one of [on_demand, spot, reserved] for unit 'gpu_hour'"),
                         InputError);
  }
  SUBCASE("missing kind") {
    std::string file = scratch.edit("prices/cloud.json", [](Json& j) { j["items"][1].erase("kind"); });
    CHECK_THROWS_WITH_AS(load_price_file(file), has(file + ": field 'items[1].kind' is missing"), InputError);
  }
  SUBCASE("malformed dates") {
    for (const char* bad : {"2020-13", "20-01", "2020/01", "2020-1", "last year"}) {
      CAPTURE(bad);
      std::string file = scratch.edit("prices/cloud.json", [&](Json& j) { j["items"][0]["date"] = bad; });
      CHECK_THROWS_WITH_AS(load_price_file(file), has(file + ": field 'items[0].date'"), InputError);
    }
  }
  SUBCASE("undeclared price set") {
    std::string file = scratch.edit("prices/cloud.json", [](Json& j) { j["items"][1]["price_set"] = "cloud-2099"; });
    CHECK_THROWS_WITH_AS(load_profiles(scratch.dir()),
                         has(file + ": field 'items[1].price_set': unknown price set 'cloud-2099'"), InputError);
  }
  SUBCASE("a set declared twice") {
    scratch.edit("prices/electricity.json", [](Json& j) { j["price_sets"] = {{"published-2019-2020", "again"}}; });
    CHECK_THROWS_WITH_AS(load_profiles(scratch.dir()), has("price set 'published-2019-2020' is already declared"),
                         InputError);
  }
}

TEST_CASE("units are converted to SI") {
  ScratchProfiles scratch;
  std::string path = scratch.edit("gpus/t4.json", [](Json& j) {
    j["memory_bandwidth"] = {{"value", 2560}, {"unit", "Gb/s"}, {"source", "test"}};
    j["memory"] = {{"value", 16000}, {"unit", "MB"}, {"source", "test"}};
    j["power"] = {{"value", 0.07}, {"unit", "kW"}, {"source", "test"}};
  });
  GpuProfile g = load_gpu_profile(path);
  CHECK(same(g.memory_bandwidth_bytes_per_second, 320e9));
  CHECK(same(g.memory_bytes, 16e9));
  CHECK(same(g.power_watts, 70));
  CHECK(g.name == "t4");
  CHECK(g.sources.at("memory") == "test");
}

TEST_CASE("malformed GPU profiles name the file and the field") {
  ScratchProfiles scratch;
  const std::string file = scratch.path("gpus/t4.json");
  auto reload = [&] { return load_gpu_profile(file); };

  SUBCASE("unknown key") {
    scratch.edit("gpus/t4.json", [](Json& j) { j["memroy"] = j["memory"]; });
    CHECK_THROWS_WITH_AS(reload(), has(file + ": unknown field 'memroy'"), InputError);
  }
  SUBCASE("unknown key inside a quantity") {
    scratch.edit("gpus/t4.json", [](Json& j) { j["memory"]["sorce"] = "x"; });
    CHECK_THROWS_WITH_AS(reload(), has("unknown field 'sorce' in 'memory'"), InputError);
  }
  SUBCASE("missing field") {
    scratch.edit("gpus/t4.json", [](Json& j) { j.erase("memory_bandwidth"); });
    CHECK_THROWS_WITH_AS(reload(), has(file + ": field 'memory_bandwidth' is missing"), InputError);
  }
  SUBCASE("negative bandwidth") {
    scratch.edit("gpus/t4.json", [](Json& j) { j["memory_bandwidth"]["value"] = -320; });
    CHECK_THROWS_WITH_AS(reload(), has(file + ": field 'memory_bandwidth.value': expected a positive"),
                         InputError);
  }
  SUBCASE("zero bandwidth") {
    scratch.edit("gpus/t4.json", [](Json& j) { j["memory_bandwidth"]["value"] = 0; });
    CHECK_THROWS_WITH_AS(reload(), has(file + ": field 'memory_bandwidth.value'"), InputError);
  }
  SUBCASE("wrong unit") {
    scratch.edit("gpus/t4.json", [](Json& j) { j["memory_bandwidth"]["unit"] = "GB"; });
    CHECK_THROWS_WITH_AS(reload(), has(file + ": field 'memory_bandwidth.unit': expected one of"),
                         InputError);
    CHECK_THROWS_WITH_AS(reload(), has("GB/s"), InputError);  // lists the valid units
  }
  SUBCASE("missing unit") {
    scratch.edit("gpus/t4.json", [](Json& j) { j["memory_bandwidth"].erase("unit"); });
    CHECK_THROWS_WITH_AS(reload(), has(file + ": field 'memory_bandwidth.unit' is missing"),
                         InputError);
  }
  SUBCASE("a bare number instead of a quantity") {
    scratch.edit("gpus/t4.json", [](Json& j) { j["memory_bandwidth"] = 320; });
    CHECK_THROWS_WITH_AS(reload(), has(file + ": field 'memory_bandwidth': expected an object"),
                         InputError);
  }
  SUBCASE("empty source") {
    scratch.edit("gpus/t4.json", [](Json& j) { j["power"]["source"] = ""; });
    CHECK_THROWS_WITH_AS(reload(), has(file + ": field 'power.source'"), InputError);
  }
  SUBCASE("an efficiency in a GPU profile: it belongs to a stack") {
    scratch.edit("gpus/t4.json", [](Json& j) { j["memory_efficiency"] = {{"value", 0.5}, {"unit", "fraction"}, {"source", "x"}}; });
    CHECK_THROWS_WITH_AS(reload(), has(file + ": unknown field 'memory_efficiency'"), InputError);
  }
  SUBCASE("not JSON") {
    scratch.write("gpus/t4.json", "{ \"description\": ");
    CHECK_THROWS_WITH_AS(reload(), has(file + ": not valid JSON"), InputError);
  }
}

TEST_CASE("malformed node, network and price profiles name the file and the field") {
  ScratchProfiles scratch;
  SUBCASE("zero network bandwidth") {
    std::string file = scratch.edit("networks/ib-edr.json", [](Json& j) { j["link_bandwidth"]["value"] = 0; });
    CHECK_THROWS_WITH_AS(load_network_profile(file), has(file + ": field 'link_bandwidth.value'"),
                         InputError);
  }
  SUBCASE("unknown transport") {
    std::string file = scratch.edit("networks/ib-edr.json", [](Json& j) { j["transport"] = "verbs"; });
    CHECK_THROWS_WITH_AS(load_network_profile(file), has(file + ": field 'transport'"), InputError);
  }
  SUBCASE("sockets per connection: a whole number in [1, 64], TCP only, with a per-socket cap") {
    auto sockets = [](int value) { return Json{{"value", value}, {"unit", "count"}, {"source", "x"}}; };
    std::string file = scratch.edit("networks/25gbe-tcp.json", [&](Json& j) {
      j["sockets_per_connection"] = {{"value", 2.5}, {"unit", "count"}, {"source", "x"}};
    });
    CHECK_THROWS_WITH_AS(load_network_profile(file), has(file + ": field 'sockets_per_connection.value': expected an integer"),
                         InputError);
    file = scratch.edit("networks/25gbe-tcp.json", [&](Json& j) { j["sockets_per_connection"] = sockets(65); });
    CHECK_THROWS_WITH_AS(load_network_profile(file), has(file + ": field 'sockets_per_connection': expected at most 64"),
                         InputError);
    file = scratch.edit("networks/ib-edr.json", [&](Json& j) { j["sockets_per_connection"] = sockets(4); });
    CHECK_THROWS_WITH_AS(load_network_profile(file), has("only with transport 'tcp_socket'"), InputError);
    file = scratch.edit("networks/25gbe-tcp.json", [&](Json& j) {
      j["sockets_per_connection"] = sockets(16);
      j.erase("per_flow_bandwidth");
    });
    CHECK_THROWS_WITH_AS(load_network_profile(file), has("'per_flow_bandwidth' too"), InputError);
    file = scratch.edit("networks/25gbe-tcp.json", [&](Json& j) {
      j["per_flow_bandwidth"] = {{"value", 10}, {"unit", "Gb/s"}, {"source", "x"}};
      j["sockets_per_connection"] = sockets(16);
    });
    const NetworkProfile aws = load_network_profile(file);
    CHECK(aws.sockets_per_connection == 16);
    CHECK(aws.connection_cap_bytes_per_second() == doctest::Approx(16 * 10e9 / 8).epsilon(1e-12));  // 10 Gb/s each
  }
  SUBCASE("PCIe tree without its PCIe fields") {
    std::string file = scratch.edit("nodes/t4-8x-pcie.json", [](Json& j) { j.erase("pcie_host_bridge_bandwidth"); });
    CHECK_THROWS_WITH_AS(load_node_profile(file),
                         has(file + ": field 'pcie_host_bridge_bandwidth' is missing"), InputError);
  }
  SUBCASE("NVLink fields on a PCIe tree") {
    std::string file = scratch.edit("nodes/t4-8x-pcie.json", [](Json& j) {
      j["nvlink_bandwidth"] = {{"value", 150}, {"unit", "GB/s"}, {"source", "x"}};
    });
    CHECK_THROWS_WITH_AS(load_node_profile(file), has(file + ": field 'nvlink_bandwidth'"), InputError);
  }
  SUBCASE("cube-mesh without links per GPU") {
    std::string file = scratch.edit("nodes/dgx-1.json", [](Json& j) { j.erase("nvlink_links_per_gpu"); });
    CHECK_THROWS_WITH_AS(load_node_profile(file), has(file + ": field 'nvlink_links_per_gpu' is missing"),
                         InputError);
  }
  SUBCASE("fractional GPU count") {
    std::string file = scratch.edit("nodes/dgx-1.json", [](Json& j) { j["gpus_per_node"]["value"] = 7.5; });
    CHECK_THROWS_WITH_AS(load_node_profile(file), has(file + ": field 'gpus_per_node.value'"),
                         InputError);
  }
  SUBCASE("dangling gpu reference") {
    std::string file = scratch.edit("nodes/dgx-1.json", [](Json& j) { j["gpu"] = "v100-sxm9"; });
    CHECK_THROWS_WITH_AS(load_profiles(scratch.dir()),
                         has(file + ": field 'gpu': unknown GPU profile 'v100-sxm9'"), InputError);
    CHECK_THROWS_WITH_AS(load_profiles(scratch.dir()), has("v100-sxm2-16gb"), InputError);  // lists names
  }
  SUBCASE("dangling network reference") {
    std::string file = scratch.edit("nodes/dgx-1.json", [](Json& j) { j["default_network"] = "ib-xdr"; });
    CHECK_THROWS_WITH_AS(load_profiles(scratch.dir()),
                         has(file + ": field 'default_network': unknown network profile 'ib-xdr'"),
                         InputError);
  }
  SUBCASE("price for an unknown node") {
    std::string file = scratch.edit("prices/cloud.json", [](Json& j) { j["items"][2]["applies_to"] = "p9"; });
    CHECK_THROWS_WITH_AS(load_profiles(scratch.dir()),
                         has(file + ": field 'items[2].applies_to': unknown node profile 'p9'"),
                         InputError);
  }
  SUBCASE("price with a negative amount") {
    std::string file = scratch.edit("prices/cloud.json", [](Json& j) { j["items"][0]["usd"] = -1; });
    CHECK_THROWS_WITH_AS(load_price_file(file), has(file + ": field 'items[0].usd'"), InputError);
  }
  SUBCASE("price with an unknown key") {
    std::string file = scratch.edit("prices/cloud.json", [](Json& j) { j["items"][1]["currency"] = "EUR"; });
    CHECK_THROWS_WITH_AS(load_price_file(file), has("unknown field 'currency' in 'items[1]'"),
                         InputError);
  }
  SUBCASE("the same name in two kinds") {
    scratch.copy("networks/ib-edr.json", "networks/t4.json");
    CHECK_THROWS_WITH_AS(load_profiles(scratch.dir()), has("name 't4' is already used by"), InputError);
  }
}

TEST_CASE("lookups and directories") {
  const ProfileSet set = load_profiles();
  CHECK_THROWS_WITH_AS(find_gpu(set, "v200"), has("unknown GPU profile 'v200' (known: a100-40gb"),
                       InputError);
  CHECK_THROWS_WITH_AS(find_node(set, "dgx-9"), has("dgx-2h"), InputError);
  CHECK_THROWS_WITH_AS(find_network(set, "ib-xdr"), has("ib-edr"), InputError);
  CHECK_THROWS_WITH_AS(load_profiles("/nonexistent/ptsim"), has("/nonexistent/ptsim: not a hardware profile directory"),
                       InputError);
  CHECK(std::string(to_string(IntraNodeTopology::nvlink_cube_mesh)) == "nvlink_cube_mesh");
  CHECK(std::string(to_string(Transport::tcp_socket)) == "tcp_socket");
}

TEST_CASE("profiles: duplicate keys, numbers beyond a double and counts beyond their range (issue #9)") {
  ScratchProfiles scratch;
  SUBCASE("a duplicate key") {
    const std::string file = scratch.path("gpus/t4.json");
    const std::string body = Json::parse(std::ifstream(file)).dump();  // compact: starts with '{'
    scratch.write("gpus/t4.json", "{\"description\": \"first\", " + body.substr(1));
    CHECK_THROWS_WITH_AS(load_gpu_profile(file), has(file + ": duplicate key 'description'"), InputError);
  }
  SUBCASE("a number that does not fit a double") {
    std::string file = scratch.edit("gpus/t4.json", [](Json& j) { j["memory"]["value"] = 12345; });
    std::string body = Json::parse(std::ifstream(file)).dump();
    body.replace(body.find("12345"), 5, "1e400");
    scratch.write("gpus/t4.json", body);
    CHECK_THROWS_WITH_AS(load_gpu_profile(file), has(file + ": field 'memory.value': a number that does not fit a double"),
                         InputError);
  }
  SUBCASE("a count beyond its range (once narrowed to int)") {
    std::string file = scratch.edit("nodes/dgx-1.json", [](Json& j) { j["gpus_per_node"]["value"] = 4294967304LL; });
    CHECK_THROWS_WITH_AS(load_node_profile(file), has(file + ": field 'gpus_per_node.value': expected an integer in [1, 1024]"),
                         InputError);
  }
}
