// tests/runtime/test_lr_schedule.cpp — learning-rate schedules at hand-computed steps (1-based steps).
#include <doctest/doctest.h>

#include <cmath>

#include "core/error.hpp"
#include "runtime/optim/lr_schedule.hpp"

using ptsim::core::InputError;
using ptsim::core::Json;
using namespace ptsim::runtime;

TEST_CASE("poly warmup (NVIDIA PolyWarmUpScheduler): peak 1, total 100, warmup 0.1, degree 0.5") {
  LrSchedule s;
  s.kind = LrScheduleKind::poly_warmup;
  s.peak_lr = 1.0;
  s.total_steps = 100;
  s.warmup_proportion = 0.1;
  s.degree = 0.5;
  validate_lr_schedule(s);
  const double tol = 1e-12;
  CHECK(s.lr(0) == 0.0);                                        // before the first step
  CHECK(std::abs(s.lr(1) - 0.1) < tol);                         // p = 0.01 < 0.1: 0.01/0.1
  CHECK(std::abs(s.lr(5) - 0.5) < tol);                         // p = 0.05: 0.05/0.1
  CHECK(std::abs(s.lr(10) - std::sqrt(0.9)) < tol);             // p = 0.1 is not < 0.1: (1 − 0.1)^0.5 = 0.9486833
  CHECK(std::abs(s.lr(19) - 0.9) < tol);                        // (1 − 0.19)^0.5 = √0.81 = 0.9
  CHECK(std::abs(s.lr(75) - 0.5) < tol);                        // (1 − 0.75)^0.5 = √0.25 = 0.5
  CHECK(s.lr(100) == 0.0);                                      // (1 − 1)^0.5
  CHECK(s.lr(150) == 0.0);                                      // past the end: clamped, not NaN
  s.degree = 1.0;
  CHECK(std::abs(s.lr(75) - 0.25) < tol);                       // linear decay: 1 − 0.75
}

TEST_CASE("LANS schedule: warmup 10, constant 20, total 50, peak 0.01") {
  LrSchedule s;
  s.kind = LrScheduleKind::warmup_constant_linear;
  s.peak_lr = 0.01;
  s.warmup_steps = 10;
  s.constant_steps = 20;
  s.total_steps = 50;
  validate_lr_schedule(s);
  const double tol = 1e-15;
  CHECK(std::abs(s.lr(1) - 0.001) < tol);    // 0.01·1/10
  CHECK(std::abs(s.lr(5) - 0.005) < tol);    // 0.01·5/10
  CHECK(std::abs(s.lr(10) - 0.01) < tol);    // end of warmup: peak
  CHECK(std::abs(s.lr(11) - 0.01) < tol);    // constant stage (steps 11..30)
  CHECK(std::abs(s.lr(30) - 0.01) < tol);
  CHECK(std::abs(s.lr(31) - 0.0095) < tol);  // decay over 50 − 30 = 20 steps: 0.01·(50 − 31)/20 = 0.0095
  CHECK(std::abs(s.lr(40) - 0.005) < tol);   // 0.01·10/20
  CHECK(s.lr(50) == 0.0);
  CHECK(s.lr(60) == 0.0);
}

TEST_CASE("schedules validate and round-trip through JSON") {
  LrSchedule s;
  s.kind = LrScheduleKind::warmup_constant_linear;
  s.peak_lr = 0.01;
  s.warmup_steps = 40;
  s.constant_steps = 20;
  s.total_steps = 50;
  CHECK_THROWS_WITH_AS(validate_lr_schedule(s), doctest::Contains("exceeds total_steps (50)"), InputError);
  s.total_steps = 100;
  const LrSchedule back = lr_schedule_from_json(to_json(s), "state.json");
  CHECK(back.kind == s.kind);
  CHECK(back.peak_lr == s.peak_lr);
  CHECK(back.warmup_steps == 40);
  CHECK(back.constant_steps == 20);
  CHECK(back.total_steps == 100);

  LrSchedule p;  // defaults: NVIDIA phase 1
  const LrSchedule pb = lr_schedule_from_json(to_json(p), "state.json");
  CHECK(pb.warmup_proportion == p.warmup_proportion);
  CHECK(pb.degree == 0.5);
  Json bad = to_json(p);
  bad["warmup_proportion"] = 1.5;
  CHECK_THROWS_WITH_AS(lr_schedule_from_json(bad, "state.json"), doctest::Contains("'warmup_proportion'"), InputError);
  bad = to_json(p);
  bad["kind"] = "cosine";
  CHECK_THROWS_AS(lr_schedule_from_json(bad, "state.json"), InputError);
}
