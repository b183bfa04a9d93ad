// tests/runtime/optim/test_loss_scale_state.cpp — the fp16 dynamic loss scale's shared update
// (runtime/optim/loss_scale_state.hpp: update_loss_scale, derive_step_factors, PTSIM_HD) against the host
// expressions it replaced in LossScaler::update (written out below as OldScaler, from the LossScaler of
// before the device scale: docs/training.md, "Loss scaling"), bit for bit: growth at the interval, the cap at
// 2^24, halving on a skip, the tracker restarting, the skipped count, and the min-scale error at the same
// step. The same sequences through the CPU backend's in-place op and Backend's host-copy default
// (Backend::update_loss_scale, reading the skip from a StepScalars) give the same bytes; LossScaler::mirror of
// the device state throws the error message LossScaler::update throws. No tolerance anywhere: the device copy
// must be the host's value, or a resumed or GPU run would follow another sequence of scales.
#include <doctest/doctest.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "runtime/exec/backend.hpp"
#include "runtime/optim/loss_scale_state.hpp"
#include "runtime/optim/loss_scaler.hpp"

using namespace ptsim::runtime;
using optim_math::LossScaleState;

namespace {

// LossScaler::update as it was written before the shared function (the expressions under test).
struct OldScaler {
  bool dynamic = true;
  double scale = 65536.0;
  int64_t growth_interval = 2000, growth_tracker = 0, skipped_steps = 0;
  bool underflow = false;  // where the old code threw
  void update(bool skipped) {
    if (skipped) ++skipped_steps;
    if (!dynamic) return;
    if (skipped) {
      scale *= 0.5;
      growth_tracker = 0;
      if (scale < kMinLossScale) underflow = true;
      return;
    }
    if (++growth_tracker == growth_interval) {
      scale = std::min(scale * 2.0, kMaxLossScale);
      growth_tracker = 0;
    }
  }
};

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }
bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

// A deterministic skip pattern: bit k of a splitmix-style hash of (seed, k), skipping about one step in
// `one_in`.
bool skip_at(uint64_t seed, int64_t k, uint64_t one_in) {
  uint64_t z = seed * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(k) * 0xBF58476D1CE4E5B9ull;
  z ^= z >> 31;
  z *= 0x94D049BB133111EBull;
  z ^= z >> 29;
  return z % one_in == 0;
}

LossScaleState initial_state(double scale, int64_t interval, bool dynamic, int64_t micro_steps) {
  LossScaleState s;
  s.scale = scale;
  s.growth_interval = interval;
  s.dynamic = dynamic ? 1 : 0;
  s.micro_steps = static_cast<double>(micro_steps);
  optim_math::derive_step_factors(s);
  return s;
}

void check_equal(const LossScaleState& s, const OldScaler& old, int64_t micro_steps) {
  CHECK(same_bits(s.scale, old.scale));
  CHECK(s.growth_tracker == old.growth_tracker);
  CHECK(s.skipped_steps == old.skipped_steps);
  CHECK(s.underflow == (old.underflow ? 1 : 0));
  // The trainer's seed and the executor's unscale, as the host wrote them.
  CHECK(same_bits(s.loss_grad, static_cast<float>(old.scale / static_cast<double>(micro_steps))));
  CHECK(same_bits(s.grad_factor, static_cast<float>(1.0 / old.scale)));
}

}  // namespace

TEST_CASE("update_loss_scale is LossScaler's old update bit for bit: growth, the 2^24 cap, halving, underflow") {
  struct Case {
    double scale;
    int64_t interval;
    bool dynamic;
    uint64_t one_in;  // skip about one step in this many
    int64_t micro_steps;
  };
  // 2^16 with rare skips (growth at the interval); 2^23 growing into the cap; 1000 (not a power of two: the
  // factors are then inexact, and must still be the host's roundings); a static scale (never changes, skips
  // counted); 2^-20 skipping every other step (underflows below 2^-24 within ~10 steps).
  const Case cases[] = {{65536.0, 3, true, 7, 2},  {8388608.0, 2, true, 50, 1}, {1000.0, 4, true, 3, 3},
                        {128.0, 5, false, 2, 2},   {0x1.0p-20, 3, true, 2, 2}};
  auto backend = make_cpu_backend(ComputeType::f32, 1);
  const DeviceBuffer state_buf = backend->allocate(sizeof(LossScaleState));
  const DeviceBuffer scalars_buf = backend->allocate(sizeof(optim_math::StepScalars));
  for (const Case& c : cases)
    for (uint64_t seed : {1u, 2u, 3u}) {
      CAPTURE(c.scale);
      CAPTURE(seed);
      OldScaler old;
      old.dynamic = c.dynamic;
      old.scale = c.scale;
      old.growth_interval = c.interval;
      LossScaleState s = initial_state(c.scale, c.interval, c.dynamic, c.micro_steps);
      LossScaleState on_cpu = s, on_default = s;
      bool grew_to_cap = false, underflowed = false;
      for (int64_t k = 0; k < 200 && !old.underflow; ++k) {
        CAPTURE(k);
        const bool skipped = skip_at(seed, k, c.one_in);
        old.update(skipped);
        optim_math::update_loss_scale(s, skipped);
        check_equal(s, old, c.micro_steps);
        // The backend ops read the skip from the step's StepScalars: in place and through host copies.
        optim_math::StepScalars verdict;
        verdict.skip = skipped ? 1 : 0;
        backend->copy_to_device(DeviceSpan::of(scalars_buf), &verdict);
        for (LossScaleState* dev : {&on_cpu, &on_default}) {
          backend->copy_to_device(DeviceSpan::of(state_buf), dev);
          if (dev == &on_cpu) backend->update_loss_scale(DeviceSpan::of(state_buf), DeviceSpan::of(scalars_buf));
          else backend->Backend::update_loss_scale(DeviceSpan::of(state_buf), DeviceSpan::of(scalars_buf));
          backend->copy_to_host(dev, DeviceSpan::of(state_buf));
          CHECK(std::memcmp(dev, &s, sizeof s) == 0);
        }
        grew_to_cap = grew_to_cap || old.scale == kMaxLossScale;
        underflowed = underflowed || old.underflow;
      }
      // Each case reaches the behaviour it is there for (else the sequence tested nothing).
      if (c.scale == 8388608.0) CHECK(grew_to_cap);
      if (c.scale == 0x1.0p-20) CHECK(underflowed);
      if (!c.dynamic) CHECK(same_bits(s.scale, c.scale));
    }
  backend->free(state_buf);
  backend->free(scalars_buf);
}

TEST_CASE("LossScaler mirrors a device state; an underflowed one throws update()'s message") {
  LossScalerConfig cfg;
  cfg.enabled = true;
  cfg.initial_scale = 0x1.0p-23;  // two skips from below 2^-24
  cfg.growth_interval = 10;
  LossScaler host(cfg), mirror(cfg);
  LossScaleState device = mirror.device_state(2);
  CHECK(same_bits(device.loss_grad, static_cast<float>(0x1.0p-23 / 2.0)));
  CHECK(device.dynamic == 1);
  host.update(true);
  optim_math::update_loss_scale(device, true);
  mirror.mirror(device);
  CHECK(same_bits(mirror.scale(), host.scale()));
  CHECK(mirror.skipped_steps() == host.skipped_steps());
  std::string host_error, mirror_error;
  try {
    host.update(true);
  } catch (const std::runtime_error& e) {
    host_error = e.what();
  }
  optim_math::update_loss_scale(device, true);
  try {
    mirror.mirror(device);
  } catch (const std::runtime_error& e) {
    mirror_error = e.what();
  }
  CHECK(!host_error.empty());
  CHECK(host_error.find("fell below 2^-24 after 2 skipped steps") != std::string::npos);
  CHECK(mirror_error == host_error);
}
