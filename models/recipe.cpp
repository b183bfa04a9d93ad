// models/recipe.cpp — recipe enums and validation.
#include "models/recipe.hpp"

#include <fmt/format.h>

#include "core/checked_math.hpp"
#include "core/error.hpp"

namespace ptsim::models {
using core::InputError;

const char* to_string(Precision p) {
  switch (p) {
    case Precision::fp32: return "fp32";
    case Precision::tf32: return "tf32";
    case Precision::fp16: return "fp16";
    case Precision::bf16: return "bf16";
  }
  return "?";
}

const char* to_string(OptimizerKind o) {
  switch (o) {
    case OptimizerKind::adamw: return "adamw";
    case OptimizerKind::lamb: return "lamb";
    case OptimizerKind::lans: return "lans";
    case OptimizerKind::sgd: return "sgd";
  }
  return "?";
}

Precision parse_precision(const std::string& name, const std::string& what) {
  for (Precision p : {Precision::fp32, Precision::tf32, Precision::fp16, Precision::bf16})
    if (name == to_string(p)) return p;
  throw InputError(fmt::format("{}: unknown precision '{}' (expected fp32, tf32, fp16 or bf16)", what, name));
}

OptimizerKind parse_optimizer(const std::string& name, const std::string& what) {
  for (OptimizerKind o : {OptimizerKind::adamw, OptimizerKind::lamb, OptimizerKind::lans, OptimizerKind::sgd})
    if (name == to_string(o)) return o;
  throw InputError(fmt::format("{}: unknown optimizer '{}' (expected adamw, lamb, lans or sgd)", what, name));
}

void validate_recipe(const Recipe& r) {
  // Names as the flags spell them: scenario fields are range-checked (with their file) before this.
  core::check_range(r.micro_batch, core::ranges::micro_batch, "micro-batch");
  core::check_range(r.seq_len, core::ranges::seq_len, "seq-len");
  core::check_range(r.grad_accum, core::ranges::grad_accum, "grad-accum");
  core::check_range(r.data_parallel, core::ranges::parallel, "data-parallel");
  core::check_range(r.tensor_parallel, core::ranges::parallel, "tensor-parallel");
  core::check_range(r.bucket_bytes / (1024.0 * 1024.0), core::ranges::bucket_mib, "bucket size (MiB)");
  core::check_range(r.max_predictions, core::ranges::max_predictions, "max-predictions (0 = derive from seq-len)");
}

}  // namespace ptsim::models
