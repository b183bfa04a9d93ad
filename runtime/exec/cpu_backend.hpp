// runtime/exec/cpu_backend.hpp — the CPU reference kernels, one forward and one backward function per
// TaskGraph op kind, templated on the scalar type (float for training, double for finite-difference
// checks; both are instantiated in cpu_backend.cpp), and the CpuBackend that dispatches ops to them.
// Semantics (the comments on models::OpKind, formulas in docs/executor.md) are what a CUDA kernel must match.
// Argument order as llm.c: outputs first, then inputs, then sizes. Shapes in comments; row-major.
// Not here: memory (the executor passes pointers into its arena), the step tail (executor.cpp).
#pragma once
#include <cstdint>
#include <span>

#include "models/task_graph.hpp"
#include "runtime/exec/backend.hpp"
#include "runtime/exec/dropout_mask.hpp"  // defines: dropout_key, dropout_keep

namespace ptsim::runtime::cpu {

// ---- embeddings, gathers ----
// y (M,H) = table (V,H) [ids (M)]. Throws core::InputError for an id outside [0, V).
template <class T>
void embedding_forward(T* y, const T* table, const int32_t* ids, int64_t M, int64_t H, int64_t V);
// dtable (V,H) += dy (M,H) scattered by ids (M); repeated ids sum.
template <class T>
void embedding_backward(T* dtable, const T* dy, const int32_t* ids, int64_t M, int64_t H, int64_t V);
// y (P,N) = x (M,N) [index (P)]. Throws core::InputError for an index outside [0, M).
template <class T>
void gather_rows_forward(T* y, const T* x, const int32_t* index, int64_t P, int64_t M, int64_t N);
// dx (M,N) = 0, then dx[index[p]] += dy[p] (repeated rows sum).
template <class T>
void gather_rows_backward(T* dx, const T* dy, const int32_t* index, int64_t P, int64_t M, int64_t N);

// ---- matrix products (OpenBLAS when the build has it, else Eigen: cpu_gemm.hpp) ----
// C (m,n) (+)= alpha · op(A) · op(B) (+ bias (n)); A is (m,k), or (k,m) with trans_a; B is (k,n), or (n,k)
// with trans_b. `bias` is read only when attrs.has_bias.
template <class T>
void gemm_forward(T* C, const T* A, const T* B, const T* bias, const models::GemmAttrs& attrs);
// attrs.batch independent gemms on contiguous (batch, ·, ·) operands; no bias.
template <class T>
void batched_gemm_forward(T* C, const T* A, const T* B, const models::GemmAttrs& attrs);
// dbias (N) += column sums of dy (M,N).
template <class T>
void bias_grad(T* dbias, const T* dy, int64_t M, int64_t N);

// ---- elementwise ----
// y (n) = Σ_i xs[i] (n).
template <class T>
void add_forward(T* y, std::span<const T* const> xs, int64_t n);
// dropout: keep element i iff hash(key, i) ≥ p·2^32 (dropout_mask.hpp, shared by every backend);
// y = x·keep/(1−p).
using runtime::dropout_key;
template <class T>
void dropout_forward(T* y, uint8_t* mask, const T* x, int64_t n, double p, uint64_t key);
template <class T>
void dropout_backward(T* dx, const T* dy, const uint8_t* mask, int64_t n, double p);
// GELU: erf form x·Φ(x) (BERT), or the tanh approximation (GPT-2) when tanh_form.
template <class T>
void gelu_forward(T* y, const T* x, int64_t n, bool tanh_form);
template <class T>
void gelu_backward(T* dx, const T* dy, const T* x, int64_t n, bool tanh_form);
template <class T>
void tanh_forward(T* y, const T* x, int64_t n);
// dx = dy · (1 − y²), from the forward output y.
template <class T>
void tanh_backward(T* dx, const T* dy, const T* y, int64_t n);

// ---- normalisation ----
// Per row of x (M,N): mean (M), rstd (M) = 1/sqrt(biased var + eps), y (M,N) = (x−mean)·rstd·gamma + beta.
template <class T>
void layernorm_forward(T* y, T* mean, T* rstd, const T* x, const T* gamma, const T* beta, int64_t M, int64_t N,
                       double eps);
// dx (M,N) = rstd·(g − mean(g) − x̂·mean(g·x̂)) with g = dy·gamma, x̂ = (x−mean)·rstd;
// dgamma (N) += Σ_rows dy·x̂; dbeta (N) += Σ_rows dy.
template <class T>
void layernorm_backward(T* dx, T* dgamma, T* dbeta, const T* dy, const T* x, const T* gamma, const T* mean,
                        const T* rstd, int64_t M, int64_t N);

// Which keys a softmax row may attend to. Row r of scores (B·nh, S, S) is query i = r mod S of batch
// b = r / (nh·S); key j is masked when keep[b·S + j] == 0 (padding) or, if causal, j > i.
struct SoftmaxMask {
  const int32_t* keep = nullptr;  // attention_mask (B,S), 1 keep / 0 pad; null = no padding mask
  int64_t heads = 1;
  int64_t seq = 0;                // S (= cols)
  bool causal = false;
};
// probs (rows, cols) = softmax over unmasked keys; masked keys get exactly 0; a row with every key
// masked is all zeros.
template <class T>
void softmax_forward(T* probs, const T* scores, int64_t rows, int64_t cols, const SoftmaxMask& mask);
// dscores = probs · (dprobs − Σ_j dprobs·probs) per row (0 where probs is 0, i.e. masked keys).
template <class T>
void softmax_backward(T* dscores, const T* dprobs, const T* probs, int64_t rows, int64_t cols);

// ---- heads ----
// split: x (B·S, nh·d) → y (B·nh, S, d); merge is its inverse (and its adjoint: it is a permutation).
template <class T>
void split_heads(T* y, const T* x, int64_t B, int64_t S, int64_t nh, int64_t d);
template <class T>
void merge_heads(T* y, const T* x, int64_t B, int64_t S, int64_t nh, int64_t d);

// ---- loss ----
// logits (P,C), labels (P) in [0, valid) or −1 (ignored); classes ≥ valid are padding (left out of the
// softmax). lse (P) = logsumexp over the valid classes; loss (1) = mean over labelled rows of
// lse − logit[label] (0 when no row is labelled). Throws core::InputError for a label outside [−1, valid).
template <class T>
void cross_entropy_forward(T* loss, T* lse, const T* logits, const int32_t* labels, int64_t P, int64_t C,
                           int64_t valid);
// dlogits (P,C) = dloss/n_labelled · (softmax − onehot(label)) on labelled rows and valid classes, else 0.
template <class T>
void cross_entropy_backward(T* dlogits, const T* dloss, const T* logits, const int32_t* labels, const T* lse,
                            int64_t P, int64_t C, int64_t valid);

}  // namespace ptsim::runtime::cpu
