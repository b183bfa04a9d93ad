// tests/calibration/test_published_fit.cpp — the fit of the shipped V100/T4 profiles to the published
// single-GPU runs (calibration/data/published_single_gpu.json).
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>

#include "calibration/calibrate.hpp"
#include "calibration/published_fit.hpp"
#include "hwprofiles/profiles.hpp"
#include "tests/support/temp_dir.hpp"

using namespace ptsim;

TEST_CASE("the shipped V100 and T4 profiles reproduce the published single-GPU runs") {
  // Published throughputs: REFERENCE.md (NVIDIA DeepLearningExamples README; T4 paper's benchmark logs).
  // Fit runs: within 5% (the fit has as many parameters as runs for T4, and two for two runs on V100).
  // Held-out DGX-1 runs (never seen by the fit): within 10% — a real extrapolation to another V100
  // variant, memory size and micro-batch.
  hwprofiles::ProfileSet profiles = hwprofiles::load_profiles();
  calibration::PublishedRunSet set = calibration::load_published_runs(calibration::default_published_runs_path());
  REQUIRE(set.runs.size() == 6);
  int holdouts = 0;
  for (const auto& run : set.runs) {
    double predicted = calibration::predict_run(run, hwprofiles::find_gpu(profiles, run.gpu));
    CAPTURE(run.id);
    CAPTURE(predicted);
    if (run.role == "fit") {
      CHECK(predicted == doctest::Approx(run.sequences_per_second).epsilon(0.05));
    } else {
      ++holdouts;
      CHECK(predicted == doctest::Approx(run.sequences_per_second).epsilon(0.10));
    }
  }
  CHECK(holdouts == 2);
}

TEST_CASE("the fit recovers parameters it did not start from") {
  // Perturb the shipped V100 profiles' memory efficiency and refit: the objective returns to ~0.
  hwprofiles::ProfileSet profiles = hwprofiles::load_profiles();
  for (auto& [name, gpu] : profiles.gpus)
    if (name.rfind("v100", 0) == 0) gpu.memory_efficiency *= 0.6;
  calibration::PublishedRunSet set = calibration::load_published_runs(calibration::default_published_runs_path());
  calibration::FitResult fit = calibration::fit_group(set, "v100", profiles);
  for (const auto& e : fit.after)
    if (e.role == "fit") CHECK(std::abs(e.relative_error()) < 0.01);
  for (const auto& e : fit.before)
    if (e.role == "fit") CHECK(e.relative_error() < -0.05);  // the perturbation made predictions too slow
}

TEST_CASE("calibrate published --write stores the fitted values, with provenance, in every profile of the group") {
  // A copy of the shipped profiles with the V100 memory efficiency perturbed; the written files, read
  // back by the loader, must hold exactly the fitted values (the writer is the loader's inverse).
  test::TempDir dir("calibrate_write");
  std::filesystem::copy(hwprofiles::hwprofiles_directory(), dir.path, std::filesystem::copy_options::recursive);
  hwprofiles::ProfileSet profiles = hwprofiles::load_profiles(dir.path.string());
  calibration::PublishedCalibration c =
      calibration::calibrate_published(calibration::default_published_runs_path(), profiles);
  const calibration::FitResult* v100 = nullptr;
  for (const auto& fit : c.fits)
    if (fit.group == "v100") v100 = &fit;
  REQUIRE(v100 != nullptr);
  std::vector<std::string> written = calibration::write_published_fit(dir.path.string(), c, *v100, profiles, "2000-01-02");
  CHECK(written.size() == c.set.groups.at("v100").apply_to.size());
  hwprofiles::ProfileSet reread = hwprofiles::load_profiles(dir.path.string());
  for (const auto& name : c.set.groups.at("v100").apply_to) {
    const hwprofiles::GpuProfile& g = hwprofiles::find_gpu(reread, name);
    CAPTURE(name);
    CHECK(g.memory_efficiency == doctest::Approx(v100->values.at("memory_efficiency")).epsilon(1e-12));
    CHECK(g.sources.at("memory_efficiency").find("fitted: memory_efficiency by 'ptsim calibrate published'") == 0);
    CHECK(g.sources.at("memory_efficiency").find("2000-01-02") != std::string::npos);
  }
  // The JSON the command prints has one entry per group, with every run of the group.
  nlohmann::json j = calibration::published_fit_json(c);
  CHECK(j.size() == c.set.groups.size());
}
