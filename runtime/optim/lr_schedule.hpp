// runtime/optim/lr_schedule.hpp — learning-rate schedules: the learning rate of optimizer step t.
// Steps are 1-based: lr(t) is the rate of the t-th optimizer step (t = optimizer.step_count() + 1),
// which is how NVIDIA's PolyWarmUpScheduler counts (last_epoch = param_group['step'] + 1), so the first
// step already has a non-zero rate and step t = total_steps has rate 0.
// Not here: per-parameter-group rates (every tensor gets the same rate).
#pragma once
#include <cstdint>

#include "core/json_reader.hpp"  // defines: Json

namespace ptsim::runtime {

enum class LrScheduleKind {
  // NVIDIA DeepLearningExamples BERT PolyWarmUpScheduler (schedulers.py): with p = t / total_steps,
  //   lr = peak · p / warmup_proportion            while p < warmup_proportion
  //   lr = peak · (1 − p)^degree                   after (degree 0.5 is NVIDIA's default)
  poly_warmup,
  // LANS (Zheng et al. 2020): linear warmup to peak over warmup_steps, constant_steps at peak, then a
  // linear decay that reaches 0 at t = total_steps:
  //   lr = peak · t / warmup_steps                 t <= warmup_steps
  //   lr = peak                                    t <= warmup_steps + constant_steps
  //   lr = peak · (total − t) / (total − warmup − constant)   after
  warmup_constant_linear,
  constant,  // lr = peak for every step (tests, short runs)
};

struct LrSchedule {
  LrScheduleKind kind = LrScheduleKind::poly_warmup;
  double peak_lr = 6e-3;            // NVIDIA BERT phase 1 LAMB (global batch 65,536)
  int64_t total_steps = 7038;       // NVIDIA BERT phase 1
  double warmup_proportion = 0.2843;  // poly_warmup only; NVIDIA BERT phase 1
  double degree = 0.5;              // poly_warmup only; NVIDIA PolyWarmUpScheduler default
  int64_t warmup_steps = 0;         // warmup_constant_linear only
  int64_t constant_steps = 0;       // warmup_constant_linear only

  // Rate of the 1-based step t; 0 for t <= 0 and t >= total_steps (poly / linear decay).
  double lr(int64_t t) const;
};

// Throws core::InputError naming the field: peak_lr > 0, total_steps > 0, warmup_proportion in [0, 1],
// degree > 0, warmup_steps + constant_steps <= total_steps.
void validate_lr_schedule(const LrSchedule& schedule);

// As stored in a checkpoint's state.json ("lr_schedule"): {"kind": "poly_warmup", "peak_lr": ..., ...}.
core::Json to_json(const LrSchedule& schedule);
LrSchedule lr_schedule_from_json(const core::Json& j, const std::string& source);
const char* to_string(LrScheduleKind kind);

}  // namespace ptsim::runtime
