// runtime/optim/lr_schedule.cpp — learning-rate schedules (formulas in lr_schedule.hpp).
#include "runtime/optim/lr_schedule.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/error.hpp"

namespace ptsim::runtime {
using core::InputError;

const char* to_string(LrScheduleKind kind) {
  switch (kind) {
    case LrScheduleKind::poly_warmup: return "poly_warmup";
    case LrScheduleKind::warmup_constant_linear: return "warmup_constant_linear";
    case LrScheduleKind::constant: return "constant";
  }
  return "?";
}

double LrSchedule::lr(int64_t t) const {
  if (t <= 0) return 0.0;
  switch (kind) {
    case LrScheduleKind::constant:
      return peak_lr;
    case LrScheduleKind::poly_warmup: {
      const double p = static_cast<double>(t) / static_cast<double>(total_steps);
      if (p < warmup_proportion) return peak_lr * p / warmup_proportion;
      return peak_lr * std::pow(std::max(0.0, 1.0 - p), degree);
    }
    case LrScheduleKind::warmup_constant_linear: {
      if (t <= warmup_steps) return peak_lr * static_cast<double>(t) / static_cast<double>(warmup_steps);
      if (t <= warmup_steps + constant_steps) return peak_lr;
      const int64_t decay_steps = total_steps - warmup_steps - constant_steps;
      if (decay_steps <= 0 || t >= total_steps) return 0.0;
      return peak_lr * static_cast<double>(total_steps - t) / static_cast<double>(decay_steps);
    }
  }
  return 0.0;
}

void validate_lr_schedule(const LrSchedule& s) {
  if (!(std::isfinite(s.peak_lr) && s.peak_lr > 0.0))
    throw InputError(fmt::format("lr schedule: field 'peak_lr' must be a positive number, got {}", s.peak_lr));
  if (s.total_steps <= 0)
    throw InputError(fmt::format("lr schedule: field 'total_steps' must be a positive integer, got {}", s.total_steps));
  if (s.kind == LrScheduleKind::poly_warmup) {
    if (!(s.warmup_proportion >= 0.0 && s.warmup_proportion <= 1.0))
      throw InputError(fmt::format("lr schedule: field 'warmup_proportion' must be in [0, 1], got {}",
                                   s.warmup_proportion));
    if (!(std::isfinite(s.degree) && s.degree > 0.0))
      throw InputError(fmt::format("lr schedule: field 'degree' must be a positive number, got {}", s.degree));
  }
  if (s.kind == LrScheduleKind::warmup_constant_linear) {
    if (s.warmup_steps < 0 || s.constant_steps < 0)
      throw InputError(fmt::format("lr schedule: fields 'warmup_steps' ({}) and 'constant_steps' ({}) must be >= 0",
                                   s.warmup_steps, s.constant_steps));
    if (s.warmup_steps + s.constant_steps > s.total_steps)
      throw InputError(fmt::format(
          "lr schedule: warmup_steps + constant_steps ({} + {}) exceeds total_steps ({}); lower one of them",
          s.warmup_steps, s.constant_steps, s.total_steps));
  }
}

core::Json to_json(const LrSchedule& s) {
  core::Json j = {{"kind", to_string(s.kind)}, {"peak_lr", s.peak_lr}, {"total_steps", s.total_steps}};
  if (s.kind == LrScheduleKind::poly_warmup) {
    j["warmup_proportion"] = s.warmup_proportion;
    j["degree"] = s.degree;
  }
  if (s.kind == LrScheduleKind::warmup_constant_linear) {
    j["warmup_steps"] = s.warmup_steps;
    j["constant_steps"] = s.constant_steps;
  }
  return j;
}

LrSchedule lr_schedule_from_json(const core::Json& j, const std::string& source) {
  core::JsonReader r(j, source, "lr_schedule");
  LrSchedule s;
  const std::string kind = r.require_enum("kind", {"poly_warmup", "warmup_constant_linear", "constant"});
  s.kind = kind == "poly_warmup"              ? LrScheduleKind::poly_warmup
           : kind == "warmup_constant_linear" ? LrScheduleKind::warmup_constant_linear
                                              : LrScheduleKind::constant;
  s.peak_lr = r.require_positive("peak_lr");
  s.total_steps = r.require_positive_int("total_steps");
  if (s.kind == LrScheduleKind::poly_warmup) {
    s.warmup_proportion = r.require_non_negative("warmup_proportion");
    s.degree = r.get_positive("degree", 0.5);
  }
  if (s.kind == LrScheduleKind::warmup_constant_linear) {
    s.warmup_steps = r.require_int("warmup_steps");
    s.constant_steps = r.require_int("constant_steps");
  }
  r.finish();
  validate_lr_schedule(s);
  return s;
}

}  // namespace ptsim::runtime
