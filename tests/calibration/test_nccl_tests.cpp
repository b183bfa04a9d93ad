// tests/calibration/test_nccl_tests.cpp — the nccl-tests reader on a real posted output and on malformed
// text, and the network fit recovering known parameters from a table the simulator made with them.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "calibration/nccl_tests_calibration.hpp"
#include "calibration/nccl_tests_output.hpp"
#include "core/error.hpp"
#include "hwprofiles/profiles.hpp"
#include "reports/collective_table.hpp"

using namespace ptsim;
using calibration::parse_nccl_tests_output;

namespace {

std::string project_root() {
  const char* root = std::getenv("PTSIM_ROOT");
  REQUIRE_MESSAGE(root != nullptr, "PTSIM_ROOT is not set (meson test sets it)");
  return root;
}

std::string error_of(const std::string& text) {
  try {
    parse_nccl_tests_output(text, "bench.txt");
  } catch (const core::InputError& e) {
    return e.what();
  }
  return "";
}

// nccl-tests 2.13's layout (the `root` and `#wrong` columns), two hosts of two GPUs.
const char* kFourRanks = R"(# nThread 1 nGpus 1 minBytes 8 maxBytes 1024 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0
#
# Using devices
#  Rank  0 Group  0 Pid   1887 on   worker-1 device  0 [0x8d] NVIDIA H100 80GB HBM3
#  Rank  1 Group  0 Pid   1888 on   worker-1 device  1 [0x91] NVIDIA H100 80GB HBM3
#  Rank  2 Group  0 Pid   1885 on   worker-0 device  0 [0x8d] NVIDIA H100 80GB HBM3
#  Rank  3 Group  0 Pid   1886 on   worker-0 device  1 [0x91] NVIDIA H100 80GB HBM3
#
#                                                              out-of-place                       in-place
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
           8             2     float     sum      -1    40.64    0.00    0.00      0    45.02    0.00    0.00      0
        1024           256     float     sum      -1    47.44    0.02    0.02      0    53.56    0.02    0.03      0
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 0.0175
)";

// Fits `shipped` to the table `ptsim collective` prints for `measured` (the same cluster with other network
// values) over min_bytes..max_bytes by step_factor, written to a file as a benchmark's output would be.
calibration::NcclTestsCalibration fit_simulated_table(const sim::ClusterConfig& shipped, const sim::ClusterConfig& measured,
                                                      double min_bytes, double max_bytes, double step_factor) {
  reports::CollectiveTableSpec spec;
  spec.config = measured;
  spec.min_bytes = min_bytes;
  spec.max_bytes = max_bytes;
  spec.step_factor = step_factor;
  const auto path = std::filesystem::temp_directory_path() / "ptsim_test_nccl_tests_table.txt";
  std::ofstream(path) << reports::collective_table_to_text(reports::predict_collective_table(spec));
  const auto c = calibration::calibrate_nccl_tests(path.string(), shipped, sim::CollectiveKind::all_reduce);
  std::filesystem::remove(path);
  return c;
}

}  // namespace

TEST_CASE("the posted nccl-tests excerpt: five rows, both column groups, and nccl-tests' own average") {
  const auto out = calibration::read_nccl_tests_file(project_root() +
                                                     "/calibration/data/nccl-tests/ring-512M-8G-excerpt.txt");
  REQUIRE(out.rows.size() == 5);
  CHECK(out.rows[0].bytes == 536870912);
  CHECK(out.rows[0].count == 134217728);
  CHECK(out.rows[0].type == "float");
  CHECK(out.rows[0].redop == "sum");
  CHECK(out.rows[0].time_us == 10052);
  CHECK(out.rows[4].in_place_time_us == 158561);
  CHECK(out.ranks.empty());
  // nccl-tests' "Avg bus bandwidth" is the mean busbw over both the out-of-place and the in-place column of
  // every row; recomputed from the parsed columns (each printed to 0.01 GB/s) it matches within 0.005.
  double sum = 0;
  for (const auto& r : out.rows) sum += r.busbw_gb_per_second + r.in_place_busbw_gb_per_second;
  CHECK(out.average_busbw_gb_per_second == doctest::Approx(95.3009));
  CHECK(std::abs(sum / 10 - out.average_busbw_gb_per_second) < 0.005);
  // algbw = size / time: 536870912 B / 10052 us = 53.41 GB/s as printed.
  CHECK(out.rows[0].bytes / (out.rows[0].time_us * 1e-6) / 1e9 == doctest::Approx(53.41).epsilon(0.001));
}

TEST_CASE("ranks, hosts and GPUs per host come from the device list; mpirun tags and NCCL logs are skipped") {
  std::string tagged;
  for (std::string line : {std::string("host-a:12:34 [0] NCCL INFO Bootstrap : Using eth0")}) tagged += line + "\n";
  std::string text(kFourRanks);
  size_t start = 0;
  while (start < text.size()) {
    const size_t end = text.find('\n', start);
    tagged += "[1,0]<stdout>:" + text.substr(start, end - start) + "\n";
    start = end + 1;
  }
  const auto out = parse_nccl_tests_output(tagged, "bench.txt");
  CHECK(out.ranks.size() == 4);
  CHECK(out.hosts() == std::vector<std::string>{"worker-1", "worker-0"});
  CHECK(out.ranks_per_host() == 2);
  CHECK(out.ranks[2].device_name == "NVIDIA H100 80GB HBM3");
  REQUIRE(out.rows.size() == 2);
  CHECK(out.rows[1].time_us == doctest::Approx(47.44));
}

TEST_CASE("the 2019 layout (no root column, a float error column) reads the same") {
  const std::string old = "#   Rank  0 Pid   1320 on hostA device  0 [0x00] Tesla V100-SXM2-16GB\n"
                          "#   Rank  1 Pid   2066 on hostB device  0 [0x00] Tesla V100-SXM2-16GB\n"
                          "#       size         count      type   redop     time   algbw   busbw  error     time   algbw   busbw  error\n"
                          "  1310720000     327680000     float     sum  1159541    1.13    1.13  0e+00  1160012    1.13    1.13  0e+00\n";
  const auto out = parse_nccl_tests_output(old, "old.txt");
  REQUIRE(out.rows.size() == 1);
  CHECK(out.rows[0].time_us == 1159541);
  CHECK(out.hosts().size() == 2);
}

TEST_CASE("malformed nccl-tests text: exit-2 errors that name the line and what was expected") {
  const std::string header = "#  size count type redop root time algbw busbw #wrong time algbw busbw #wrong\n";
  CHECK(error_of(header + "8 2 float sum -1 40.6 0.00 0.00 0 45.0 0.00\n").find("bench.txt line 2: 11 columns") !=
        std::string::npos);
  CHECK(error_of(header + "8 2 float sum -1 fast 0.00 0.00 0 45.0 0.00 0.00 0\n").find("line 2: column 'time' is 'fast'") !=
        std::string::npos);
  CHECK(error_of(header + "8 2 float sum -1 0 0.00 0.00 0 45.0 0.00 0.00 0\n").find("expected a positive time") !=
        std::string::npos);
  CHECK(error_of("hello\nworld\n").find("no result rows found") != std::string::npos);
  CHECK(error_of("").find("no result rows found") != std::string::npos);
  CHECK(error_of("#  size bytes\n").find("line 1: a table header must name size, count, time") != std::string::npos);
  const std::string run = "# nThread 1 nGpus 1 minBytes 8 maxBytes 8\n" + header + "8 2 float sum -1 40.6 0.00 0.00 0 45.0 0.00 0.00 0\n";
  CHECK(error_of(run + run).find("holds 2 separate nccl-tests runs") != std::string::npos);
  // Counts beyond int were "internal error: stoi"; a 1 MB line crashed the regex reader (stack overflow).
  CHECK(error_of("# nThread 99999999999 nGpus 1\n" + header).find("line 1: nThread '99999999999': expected a whole "
                                                                   "number below 2^31") != std::string::npos);
  CHECK(error_of("#  Rank  4294967296 Group  0 Pid  1 on  h device  0 [0x8d] X\n")
            .find("line 1: Rank '4294967296'") != std::string::npos);
  for (const std::string& long_line : {"[" + std::string(1 << 20, '7'), std::string(1 << 20, ' ') + "x",
                                       "# Avg bus bandwidth : " + std::string(1 << 20, '9')})
    CHECK(error_of(header + long_line + "\n").find("line 2: 10485") != std::string::npos);  // "1048577 bytes long"
}

TEST_CASE("the fit recovers the latency and achieved fraction a table was simulated with") {
  const hwprofiles::ProfileSet profiles = hwprofiles::load_profiles();
  const sim::ClusterConfig shipped =
      reports::resolve_benchmark_cluster({"dgx-1", 2, 8, "ib-edr", 0}, profiles, "test");
  // "Measured": the simulator's own table with a latency and a fraction unlike the shipped profile's.
  sim::ClusterConfig measured = shipped;
  measured.cluster.network.latency_seconds = 6e-6;
  measured.cluster.network.achieved_fraction = 0.63;
  const auto c = fit_simulated_table(shipped, measured, 8, 1 << 30, 4);
  // The table prints times to 0.01 us, so the data carry ~1e-4 relative rounding at 8 bytes; Nelder–Mead stops
  // when the objective's spread is 1e-10. Both parameters come back within 1%.
  CHECK(c.fit.latency_after_seconds == doctest::Approx(6e-6).epsilon(0.01));
  CHECK(c.fit.fraction_after == doctest::Approx(0.63).epsilon(0.01));
  CHECK(c.fit.typical_error_after < 0.01);
  CHECK(c.fit.typical_error_before > 0.05);  // the shipped profile (1.5 us, 0.9) predicts it worse
}

TEST_CASE("the file's cluster must be the flags' cluster, and its rows the --op's") {
  const hwprofiles::ProfileSet profiles = hwprofiles::load_profiles();
  const auto path = std::filesystem::temp_directory_path() / "ptsim_test_nccl_tests_ranks.txt";
  std::ofstream(path) << kFourRanks;
  const auto three_nodes = reports::resolve_benchmark_cluster({"dgx-1", 3, 2, "ib-edr", 0}, profiles, "test");
  CHECK_THROWS_WITH_AS(calibration::calibrate_nccl_tests(path.string(), three_nodes, sim::CollectiveKind::all_reduce),
                       doctest::Contains("4 ranks on 2 host(s), 2 per host, but the flags describe 3 node(s) × 2 GPUs"),
                       core::InputError);
  const auto two_nodes = reports::resolve_benchmark_cluster({"dgx-1", 2, 2, "ib-edr", 0}, profiles, "test");
  CHECK_THROWS_WITH_AS(calibration::calibrate_nccl_tests(path.string(), two_nodes, sim::CollectiveKind::all_gather),
                       doctest::Contains("redop 'sum' does not fit --op all_gather"), core::InputError);
  std::filesystem::remove(path);
}

TEST_CASE("a parameter the rows cannot determine keeps its shipped value, and the fit says why") {
  const hwprofiles::ProfileSet profiles = hwprofiles::load_profiles();
  const sim::ClusterConfig shipped =
      reports::resolve_benchmark_cluster({"t4-8x-pcie", 2, 1, "10gbe-tcp", 0}, profiles, "test");
  // Two ranks over 10 GbE at 256 MiB..1 GiB: ~0.2-0.9 s of transfer each, where even 10× the 30 us latency
  // moves the time by well under 5%; the bandwidth is the only thing these rows measure.
  sim::ClusterConfig measured = shipped;
  measured.cluster.network.achieved_fraction = 0.5;
  const auto c = fit_simulated_table(shipped, measured, 256 << 20, 1 << 30, 2);
  CHECK_FALSE(c.fit.latency_fitted);
  CHECK(c.fit.fraction_fitted);
  CHECK(c.fit.latency_after_seconds == shipped.cluster.network.latency_seconds);
  CHECK(c.fit.fraction_after == doctest::Approx(0.5).epsilon(0.01));
  CHECK(c.fit.kept_because.find("latency kept") != std::string::npos);
}
