// models/recipe.cpp — recipe enums and validation.
#include "models/recipe.hpp"

#include <fmt/format.h>

#include "core/error.hpp"

namespace ptsim::models {
using core::InputError;

const char* to_string(Precision p) {
  switch (p) {
    case Precision::fp32: return "fp32";
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
  for (Precision p : {Precision::fp32, Precision::fp16, Precision::bf16})
    if (name == to_string(p)) return p;
  throw InputError(fmt::format("{}: unknown precision '{}' (expected fp32, fp16 or bf16)", what, name));
}

OptimizerKind parse_optimizer(const std::string& name, const std::string& what) {
  for (OptimizerKind o : {OptimizerKind::adamw, OptimizerKind::lamb, OptimizerKind::lans, OptimizerKind::sgd})
    if (name == to_string(o)) return o;
  throw InputError(fmt::format("{}: unknown optimizer '{}' (expected adamw, lamb, lans or sgd)", what, name));
}

void validate_recipe(const Recipe& r) {
  auto positive = [](int64_t v, const char* flag) {
    if (v <= 0) throw InputError(fmt::format("{} must be a positive integer, got {}", flag, v));
  };
  positive(r.micro_batch, "micro-batch");
  positive(r.seq_len, "seq-len");
  positive(r.grad_accum, "grad-accum");
  positive(r.data_parallel, "data-parallel");
  positive(r.tensor_parallel, "tensor-parallel");
  if (r.bucket_bytes <= 0) throw InputError(fmt::format("bucket size must be positive, got {} bytes", r.bucket_bytes));
  if (r.max_predictions < 0) throw InputError("max-predictions must be >= 0 (0 = derive from seq-len)");
}

}  // namespace ptsim::models
