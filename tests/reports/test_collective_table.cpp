// tests/reports/test_collective_table.cpp — `ptsim collective`'s predicted nccl-tests table: nccl-tests'
// bus-bandwidth factors, size parsing, size rounding, and the defining property of busbw — for a large
// ring all-reduce with one GPU and one NIC per node it approaches the NIC's achieved bandwidth (the
// bottleneck link), with the gap the closed-form α–β time (sim/alpha_beta.hpp) predicts.
#include <doctest/doctest.h>

#include "hwprofiles/profiles.hpp"
#include "reports/collective_table.hpp"
#include "reports/prediction.hpp"
#include "sim/alpha_beta.hpp"
#include "tests/support/shipped_profiles.hpp"

using namespace ptsim;
using namespace ptsim::reports;

namespace {

const hwprofiles::ProfileSet& profiles() { return test::shipped_profiles(); }

sim::ClusterConfig cluster(const std::string& node, int nodes, int gpus_per_node, const std::string& network) {
  Scenario s;
  s.node = node;
  s.nodes = nodes;
  s.gpus_per_node = gpus_per_node;
  s.network = network;
  return resolve_cluster(s, profiles());
}

}  // namespace

TEST_CASE("bus bandwidth factors are nccl-tests' (doc/PERFORMANCE.md)") {
  CHECK(bus_bandwidth_factor(sim::CollectiveKind::all_reduce, 8) == doctest::Approx(1.75));   // 2(n−1)/n
  CHECK(bus_bandwidth_factor(sim::CollectiveKind::all_gather, 8) == doctest::Approx(0.875));  // (n−1)/n
  CHECK(bus_bandwidth_factor(sim::CollectiveKind::reduce_scatter, 4) == doctest::Approx(0.75));
  CHECK(bus_bandwidth_factor(sim::CollectiveKind::broadcast, 16) == 1.0);
}

TEST_CASE("sizes: K/M/G are powers of 1024, as nccl-tests reads -b/-e") {
  CHECK(parse_size_bytes("8", "-b") == 8);
  CHECK(parse_size_bytes("64K", "-b") == 65536);
  CHECK(parse_size_bytes("128M", "-b") == 128.0 * 1024 * 1024);
  CHECK(parse_size_bytes("1G", "-e") == 1073741824.0);
  CHECK_THROWS_AS(parse_size_bytes("1T", "-e"), core::InputError);
  CHECK_THROWS_AS(parse_size_bytes("-8", "-b"), core::InputError);
  CHECK_THROWS_AS(parse_size_bytes("", "-b"), core::InputError);
  CHECK_THROWS_AS(parse_collective_kind("alltoall"), core::InputError);
}

TEST_CASE("rows: sizes step by the factor; all_gather sizes are whole elements on every rank") {
  CollectiveTableSpec spec;
  spec.config = cluster("dgx-1", 2, 8, "ib-edr");  // 16 ranks
  spec.kind = sim::CollectiveKind::all_gather;
  spec.min_bytes = 1000;
  spec.max_bytes = 1000 * 64;
  spec.step_factor = 4;
  const CollectiveTable t = predict_collective_table(spec);
  REQUIRE(t.rows.size() == 4);  // 1000, 4000, 16000, 64000 → rounded down to multiples of 4 × 16 = 64
  CHECK(t.rows[0].bytes == 960);
  CHECK(t.rows[3].bytes == 64000);
  CHECK(t.rows[3].count == 16000);
  for (const auto& r : t.rows) CHECK(r.busbw_bytes_per_second == doctest::Approx(r.algbw_bytes_per_second * 15.0 / 16));
  spec.step_factor = 1;
  CHECK_THROWS_AS(predict_collective_table(spec), core::InputError);
}

TEST_CASE("a large ring all-reduce, one GPU and one NIC per node: busbw → the NIC's achieved bandwidth") {
  // 8 DGX-1 nodes, one GPU each (so one NIC each), InfiniBand EDR: every ring step loads each NIC direction
  // with one flow. T = 2(p−1)(α + n/(pβ)), so busbw = (n/T)·2(p−1)/p = β / (1 + αpβ/n). With β = line rate ×
  // achieved fraction and α the network's latency, that is within 1% at 1 GiB; the NIC's β is the bound.
  CollectiveTableSpec spec;
  spec.config = cluster("dgx-1", 8, 1, "ib-edr");
  spec.algorithm = sim::CollectiveAlgorithm::ring;
  spec.min_bytes = spec.max_bytes = 1 << 30;
  const CollectiveTable t = predict_collective_table(spec);
  REQUIRE(t.rows.size() == 1);
  const auto& net = spec.config.cluster.network;
  const double beta = net.link_bytes_per_second * net.achieved_fraction;
  const double n = t.rows[0].bytes;
  const double closed = sim::ring_all_reduce_seconds(8, n, net.latency_seconds, beta);
  CHECK(t.rows[0].seconds == doctest::Approx(closed).epsilon(0.01));
  CHECK(t.rows[0].busbw_bytes_per_second == doctest::Approx(beta / (1 + net.latency_seconds * 8 * beta / n)).epsilon(0.01));
  CHECK(t.rows[0].busbw_bytes_per_second <= beta * 1.0001);
}
