// tests/cli/test_bad_input_files.cpp — input paths that are not regular files, through the real binary: a
// directory is named as one (it read as an empty file: "not valid JSON … unexpected end of input", "has no
// words"), a FIFO is refused at once (it blocked forever); the runs file's group without fit runs and
// nccl-tests text that crashed the readers (core/input_file.hpp; the hostile pass of 2026-12-07).
#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tests/support/bad_inputs.hpp"

namespace fs = std::filesystem;
using ptsim::test::BadInput;

namespace {

// A scratch directory holding a directory `d`, a FIFO `f` and the files a case writes.
struct Scratch {
  fs::path dir;
  Scratch() {
    dir = fs::temp_directory_path() / ("ptsim-bad-input-files-" + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir / "d");
    REQUIRE(::mkfifo((dir / "f").c_str(), 0600) == 0);
  }
  ~Scratch() { fs::remove_all(dir); }
  std::string path(const std::string& name) const { return (dir / name).string(); }
};

// A FIFO must be refused, not opened: `timeout 10` turns a regression into a failure, not a hung suite.
void check_refused_in_time(const BadInput& c) {
  INFO("case: ", c.what, "\n  ptsim ", c.args);
  const auto r = ptsim::test::run_command("timeout 10 " + std::string(PTSIM_BINARY) + " " + c.args + " 2>&1");
  INFO("output: ", r.output);
  CHECK(r.exit_code == 2);
  for (const auto& e : c.expected) CHECK(r.output.find(e) != std::string::npos);
}

}  // namespace

TEST_CASE("a directory or a FIFO where a file is read: exit 2 naming the path and what it is") {
  const Scratch s;
  const std::string d = s.path("d"), f = s.path("f");
  for (const BadInput& c : std::vector<BadInput>{
           {"scenario directory", "predict --scenario " + d, {d + ": is a directory, expected a JSON file"}},
           {"scenario FIFO", "predict --scenario " + f, {f + ": is a FIFO (named pipe), expected a JSON file"}},
           {"model FIFO", "predict --gpu t4 --model " + f + " --micro-batch 8", {f + ": is a FIFO"}},
           {"corpus directory", "data vocab --corpus " + d + " --out " + s.path("v.txt"), {d + ": is a directory"}},
           {"corpus FIFO", "data vocab --corpus " + f + " --out " + s.path("v.txt"), {f + ": is a FIFO"}},
           {"nccl-tests FIFO", "calibrate nccl-tests " + f + " --node dgx-1 --nodes 2", {f + ": is a FIFO"}},
       })
    check_refused_in_time(c);
}

TEST_CASE("calibrate published: a fit group without fit runs is exit 2 naming it (was SIGSEGV)") {
  const Scratch s;
  const std::string runs = s.path("runs.json");
  const char* root = std::getenv("PTSIM_ROOT");  // the source tree (tests/meson.build's test_env)
  REQUIRE(root != nullptr);
  std::ifstream shipped(std::string(root) + "/calibration/data/published_single_gpu.json");
  REQUIRE(shipped.good());
  nlohmann::json j = nlohmann::json::parse(shipped);
  // Every run of the first group becomes held-out: nothing is left to fit that group to.
  const std::string group = j.at("runs").at(0).at("fit_group").get<std::string>();
  for (auto& run : j.at("runs"))
    if (run.at("fit_group") == group) run["role"] = "holdout";
  std::ofstream(runs) << j.dump(1);
  ptsim::test::check_refused({"holdout-only group", "calibrate published --runs " + runs + " --group " + group,
                              {runs + ": fit group '" + group + "' has no run with role \"fit\""}});
}
