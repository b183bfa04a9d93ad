// calibration/nccl_tests_output.hpp — reads the text a nccl-tests benchmark (all_reduce_perf, all_gather_perf,
// ...) prints: its parameter line, the "Rank N ... on HOST device D [BUS] NAME" lines, the result table and
// the average bus bandwidth. Accepts the layouts of nccl-tests releases since 2019 (with or without the
// `root` column; `error` or `#wrong`), lines prefixed by mpirun's "[1,0]<stdout>:" tags, and blank or
// unrelated lines around the output (NCCL INFO logs). Refuses, naming the line, a table row that does not
// match its header, a file with no result rows, and a file holding several separate runs.
// Not here: what the numbers mean for the network model (network_fit.hpp).
#pragma once
#include <string>
#include <vector>

namespace ptsim::calibration {

struct NcclTestsRank {
  int rank = 0;
  std::string host;
  int device = 0;
  std::string device_name;  // e.g. "NVIDIA H100 80GB HBM3"
};

struct NcclTestsRow {
  int line = 0;             // in the file, 1-based
  double bytes = 0;         // the "size" column
  long long count = 0;      // elements
  std::string type;         // float, half, bfloat16, ...
  std::string redop;        // sum, none, ...
  double time_us = 0;       // out-of-place
  double algbw_gb_per_second = 0;
  double busbw_gb_per_second = 0;
  double in_place_time_us = 0;  // 0 when the row has no in-place columns
  double in_place_busbw_gb_per_second = 0;
};

struct NcclTestsOutput {
  std::string source;       // the file name, for messages
  int threads = 0, gpus_per_thread = 0;  // "nThread T nGpus G"
  std::vector<NcclTestsRank> ranks;      // empty when the file has no "Rank" lines
  std::vector<NcclTestsRow> rows;
  double average_busbw_gb_per_second = 0;  // "# Avg bus bandwidth : X" (0 when absent)

  // Distinct hosts in first-seen order, and GPUs per host (throws InputError when hosts hold different
  // numbers of ranks: nccl-tests' busbw then does not describe one node shape).
  std::vector<std::string> hosts() const;
  int ranks_per_host() const;
};

// Throws core::InputError naming `source` and the line when the text is not nccl-tests output.
NcclTestsOutput parse_nccl_tests_output(const std::string& text, const std::string& source);
NcclTestsOutput read_nccl_tests_file(const std::string& path);

}  // namespace ptsim::calibration
