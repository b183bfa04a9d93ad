// runtime/exec/math/row_storage.hpp — how the CUDA row kernels (layernorm.cu, softmax.cu, softmax_dropout.cu,
// cross_entropy.cu, row_segments.cu) read and write a tensor in its stored dtype (fp32, bfloat16 or binary16
// bits), so that under 16-bit storage they skip the op boundary with the boundary's bits: loads and stores
// are math/storage.hpp's (the exact widening, one round-to-nearest-even narrowing); everything in between
// stays the fp32 kernel's maths. PTSIM_HD, so the cpu suite
// runs the typed element functions below against widen → fp32 → narrow (tests/runtime/exec/
// test_native16_rows.cpp). Design: docs/cuda-backend.md, "16-bit storage".
#pragma once
#include <cstdint>

#include "core/host_device.hpp"
#include "runtime/exec/math/fused_dropout_math.hpp"
#include "runtime/exec/math/norm_math.hpp"
#include "runtime/exec/math/storage.hpp"  // defines: Storage, F32Storage, Bf16Storage, F16Storage

namespace ptsim::runtime::math {

// The typed element maths: load each stored operand, the fp32 formula of norm_math.hpp /
// fused_dropout_math.hpp, store the result once.
template <class S>
PTSIM_HD typename S::Elem layernorm_output_stored(typename S::Elem x, float mean, float rstd, typename S::Elem gamma,
                                                  typename S::Elem beta) {
  return S::store(layernorm_output(S::load(x), mean, rstd, S::load(gamma), S::load(beta)));
}
template <class S>
PTSIM_HD typename S::Elem layernorm_dx_stored(typename S::Elem dy, typename S::Elem gamma, typename S::Elem x,
                                              float mean, float rstd, float g_mean, float gx_mean) {
  return S::store(layernorm_dx(S::load(dy), S::load(gamma), layernorm_xhat(S::load(x), mean, rstd), rstd, g_mean,
                               gx_mean));
}
template <class S>
PTSIM_HD typename S::Elem softmax_dscore_stored(typename S::Elem p, typename S::Elem dp, float dot) {
  return S::store(softmax_dscore(S::load(p), S::load(dp), dot));
}
template <class S>
PTSIM_HD typename S::Elem softmax_dropout_dscore_stored(typename S::Elem p, typename S::Elem ddropped, bool keep,
                                                        float scale, float dot) {
  return S::store(softmax_dropout_dscore(S::load(p), S::load(ddropped), keep, scale, dot));
}
template <class S>
PTSIM_HD typename S::Elem cross_entropy_dlogit_stored(typename S::Elem z, float lse, float scale, bool is_label) {
  return S::store(cross_entropy_dlogit(S::load(z), lse, scale, is_label));
}

// An output the op adds into (dtable +=, dγ +=, dβ +=): the stored value widened, the op's fp32 terms added
// to it in order, rounded once — the boundary's widen, the fp32 kernel's loop, its narrow.
// out = store(load(out) + terms[0] + terms[1] + …), terms[i] = term(i) for i in [0, n).
template <class S, class Term>
PTSIM_HD typename S::Elem accumulate_stored(typename S::Elem out, int64_t n, Term term) {
  float s = S::load(out);
  for (int64_t i = 0; i < n; ++i) s += term(i);
  return S::store(s);
}

// One column h of a segment add (row_segments.cu: dtable[id] += the rows of dy with that id): out (the
// stored dst[id][h]) plus src[rows[0]][h] + src[rows[1]][h] + … in the rows' order, each src value loaded.
template <class S>
PTSIM_HD typename S::Elem segment_column_add(typename S::Elem out, const typename S::Elem* src, const int32_t* rows,
                                             int64_t count, int64_t H, int64_t h) {
  return accumulate_stored<S>(out, count,
                              [&](int64_t i) { return S::load(src[static_cast<int64_t>(rows[i]) * H + h]); });
}

}  // namespace ptsim::runtime::math
