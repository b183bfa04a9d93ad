// runtime/exec/cuda/elementwise_steps.hpp — the per-element step of every elementwise CUDA kernel (add,
// dropout, GELU, tanh, bias_dropout_residual, split/merge heads, the row gather), written once over a storage
// tag: float (fp32 storage: load and store are plain reads and writes), bf16 or fp16 bits (load = the exact
// widening of math/half_bits.hpp, store = one round-to-nearest-even narrowing). The maths in between is
// the fp32 maths of the existing PTSIM_HD headers (activation_math.hpp, fused_dropout_math.hpp,
// norm_math.hpp), unchanged, so a 16-bit step computes exactly what the op boundary computes: widen every
// input, run the fp32 kernel, narrow every output once (cuda_16bit_boundary.hpp; an output the op adds into
// is read through load, summed in fp32, stored once). Plain C++ (PTSIM_HD): the kernels run each step in a
// grid-stride loop (elementwise_kernel.cuh); tests/runtime/exec/test_native16_elementwise.cpp runs the same
// steps in a host loop against the CPU backend's boundary. docs/cuda-backend.md, "16-bit storage".
#pragma once
#include <cstdint>

#include "core/host_device.hpp"
#include "runtime/exec/dropout_mask.hpp"
#include "runtime/exec/math/activation_math.hpp"
#include "runtime/exec/math/fused_dropout_math.hpp"
#include "runtime/exec/math/norm_math.hpp"
#include "runtime/exec/math/storage.hpp"

namespace ptsim::runtime::cuda {

// The storage tag and its load/store structs are math/storage.hpp's (one set for every kernel).
using math::Bf16Storage;
using math::Elem;
using math::F16Storage;
using math::F32Storage;
using math::with_storage;

// ---- activations (activation.cu) ----

template <class S>
struct GeluForwardStep {
  Elem<S>* y;
  const Elem<S>* x;
  bool tanh_form;
  PTSIM_HD void operator()(int64_t i) const { S::store(y, i, math::gelu_value(S::load(x, i), tanh_form)); }
};
template <class S>
struct GeluBackwardStep {
  Elem<S>* dx;
  const Elem<S>* dy;
  const Elem<S>* x;
  bool tanh_form;
  PTSIM_HD void operator()(int64_t i) const {
    S::store(dx, i, S::load(dy, i) * math::gelu_grad(S::load(x, i), tanh_form));
  }
};
template <class S>
struct TanhForwardStep {
  Elem<S>* y;
  const Elem<S>* x;
  PTSIM_HD void operator()(int64_t i) const { S::store(y, i, math::tanh_of(S::load(x, i))); }
};
template <class S>
struct TanhBackwardStep {
  Elem<S>* dx;
  const Elem<S>* dy;
  const Elem<S>* y;
  PTSIM_HD void operator()(int64_t i) const {
    S::store(dx, i, math::tanh_grad_from_output(S::load(dy, i), S::load(y, i)));
  }
};

// ---- add (add.cu) ----

inline constexpr int kMaxAddInputs = 8;  // inputs per launch; the fp32 kernel adds more onto y in further launches
template <class S>
struct AddStep {
  Elem<S>* y;
  const Elem<S>* x[kMaxAddInputs];
  int count;    // 0: y = 0
  bool onto_y;  // y already holds the running sum of earlier inputs (fp32 storage only: 16-bit would round it)
  PTSIM_HD void operator()(int64_t i) const {
    if (count == 0 && !onto_y) {
      S::store(y, i, 0.0f);
      return;
    }
    float s = onto_y ? S::load(y, i) : S::load(x[0], i);
    for (int k = onto_y ? 0 : 1; k < count; ++k) s += S::load(x[k], i);
    S::store(y, i, s);
  }
};

// ---- dropout (dropout.cu) ----

// The constants a dropout step takes for probability p: the keep threshold (dropout_mask.hpp), the scale
// 1/(1−p) and whether everything is dropped (p ≥ 1). The launchers and the host emulation both derive them here.
struct DropoutConstants {
  uint64_t threshold = 0;
  float scale = 1.0f;
  bool drop_all = false;
};
inline DropoutConstants dropout_constants(double p) {
  DropoutConstants c;
  c.drop_all = p >= 1.0;
  c.threshold = c.drop_all ? 0 : dropout_threshold(p < 0.0 ? 0.0 : p);  // std::max(p, 0.0), as the CPU
  c.scale = math::dropout_scale<float>(p);
  return c;
}
// bias_dropout_residual's: without a mask operand the graph has no dropout there (keep all, scale 1).
inline DropoutConstants fused_dropout_constants(bool has_mask, double p) {
  return has_mask ? dropout_constants(p) : DropoutConstants{};
}

template <class S>
struct DropoutForwardStep {
  Elem<S>* y;
  uint8_t* mask;
  const Elem<S>* x;
  uint64_t key, threshold;
  float scale;
  bool drop_all;
  PTSIM_HD void operator()(int64_t i) const {
    const bool keep = !drop_all && dropout_keep(key, static_cast<uint64_t>(i), threshold);
    mask[i] = keep ? 1 : 0;
    S::store(y, i, math::dropout_apply(S::load(x, i), keep, scale));
  }
};
template <class S>
struct DropoutBackwardStep {
  Elem<S>* dx;
  const Elem<S>* dy;
  const uint8_t* mask;
  float scale;
  PTSIM_HD void operator()(int64_t i) const { S::store(dx, i, math::dropout_apply(S::load(dy, i), mask[i] != 0, scale)); }
};

// ---- bias_dropout_residual (bias_dropout_residual.cu) ----

template <class S>
struct BiasDropoutResidualStep {
  Elem<S>* out;
  uint8_t* mask;  // null: the graph has no dropout here (keep all, scale 1)
  const Elem<S>* y;
  const Elem<S>* bias;
  const Elem<S>* residual;
  int64_t N;
  uint64_t key, threshold;
  float scale;
  bool drop_all;
  PTSIM_HD void operator()(int64_t i) const {
    const bool keep = mask == nullptr || (!drop_all && dropout_keep(key, static_cast<uint64_t>(i), threshold));
    if (mask != nullptr) mask[i] = keep ? 1 : 0;
    S::store(out, i, math::bias_dropout_residual_value(S::load(y, i), S::load(bias, i % N), S::load(residual, i),
                                                       keep, scale));
  }
};
// The backward's column-sum term (column_sums.cuh visits each (m, n) once): stores dy (rounded once) and
// returns the fp32 value, which the column sums add — what the fp32 kernel sums on the boundary's scratch.
template <class S>
struct DropoutBackwardTerm {
  Elem<S>* dy;
  const Elem<S>* dout;
  const uint8_t* mask;  // null: no dropout (scale 1)
  float scale;
  int64_t N;
  PTSIM_HD float operator()(int64_t m, int64_t n) const {
    const int64_t i = m * N + n;
    const float v = math::dropout_apply(S::load(dout, i), mask == nullptr || mask[i] != 0, scale);
    S::store(dy, i, v);
    return v;
  }
};

// ---- moves: split/merge heads (heads.cu), the row gather (gather_rows.cu) ----
// A move still loads and stores: a 16-bit value survives widening and narrowing unchanged except a NaN,
// which becomes the quiet NaN with its sign, exactly as through the boundary.

template <class S>
struct SplitHeadsStep {  // y (B·nh, S, d) ← x (B·S, nh·d)
  Elem<S>* y;
  const Elem<S>* x;
  int64_t seq, heads, head_dim;
  PTSIM_HD void operator()(int64_t i) const { S::store(y, i, S::load(x, math::heads_x_index(i, seq, heads, head_dim))); }
};
template <class S>
struct MergeHeadsStep {  // y (B·S, nh·d) ← x (B·nh, S, d)
  Elem<S>* y;
  const Elem<S>* x;
  int64_t seq, heads, head_dim;
  PTSIM_HD void operator()(int64_t i) const { S::store(y, math::heads_x_index(i, seq, heads, head_dim), S::load(x, i)); }
};
// y (P,N) = x (M,N)[index (P)]; an index outside [0, M) gives a zero row. Returns whether element i's row
// index was in range (the kernel reports a bad one: device_error.hpp).
template <class S>
struct GatherRowsStep {
  Elem<S>* y;
  const Elem<S>* x;
  const int32_t* index;
  int64_t M, N;
  PTSIM_HD bool operator()(int64_t i) const {
    const int64_t p = i / N, n = i % N;
    const int32_t row = index[p];
    const bool ok = row >= 0 && row < M;
    S::store(y, i, ok ? S::load(x, static_cast<int64_t>(row) * N + n) : 0.0f);
    return ok;
  }
};

}  // namespace ptsim::runtime::cuda
