// tests/runtime/exec/attention_tc_gpu_check.cpp — the gpu suite's check of the tensor-core fused attention
// kernels (cuda/attention_tc.hpp), forward and backward, against the CPU fused attention on the same
// 16-bit-rounded inputs: every case and bound of attention_tc_cases.hpp (the cpu suite's test_attention_tc.cpp holds the host emulation
// to the same bounds), bf16 on sm_80 and newer, fp16 everywhere. Also prints how far the device is from the
// host emulation (informational: MMA accumulation order is unspecified, so not a bit-for-bit check).
// Exit 0 when every case is within its bound, 1 otherwise, 77 (meson: skipped) without a CUDA build or GPU.
//   attention_tc_gpu_check [--only LABEL] [--dtype bf16|fp16]: one case (its label as printed, e.g.
//   "S=130 d=64 padded causal dropout") and/or one type — tools/gpu_check.sh's compute-sanitizer stage runs
//   racecheck and synccheck on one small case, where the whole list would take too long; exit 2 for a
//   label or type that does not exist.
#include <cstdio>
#include <cstdlib>

#include "tests/support/gpu_skip.hpp"  // defines: gpu_test_skip_status

#if PTSIM_HAVE_CUDA
#include <cuda_runtime_api.h>

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "runtime/exec/cuda/attention_args.hpp"
#include "runtime/exec/cuda/attention_tc.hpp"
#include "tests/runtime/exec/attention_tc_host_run.hpp"

namespace cuda = ptsim::runtime::cuda;
using namespace ptsim::test::attention_tc;

namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "attention_tc_gpu_check: %s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}

// A device copy of n elements of T.
template <class T>
T* upload(const T* host, size_t n) {
  void* p = nullptr;
  check(cudaMalloc(&p, std::max<size_t>(n, 1) * sizeof(T)), "cudaMalloc");
  if (n > 0) check(cudaMemcpy(p, host, n * sizeof(T), cudaMemcpyHostToDevice), "cudaMemcpy to the device");
  return static_cast<T*>(p);
}

template <class E>
Result run_device(const Inputs& in, const AttentionProblem& p, const int32_t* keep_host, cuda::Attention16 dtype) {
  const std::vector<E> q = narrowed<E>(in.q), k = narrowed<E>(in.k), v = narrowed<E>(in.v);
  std::vector<E> context(q.size(), E(NAN));
  Result r;
  r.lse.assign(static_cast<size_t>(p.batch_heads * p.seq), NAN);
  E *dq = upload(q.data(), q.size()), *dk = upload(k.data(), k.size()), *dv = upload(v.data(), v.size());
  E* dc = upload(context.data(), context.size());
  float* dl = upload(r.lse.data(), r.lse.size());
  int32_t* dm = keep_host != nullptr ? upload(keep_host, in.mask.size()) : nullptr;
  const cuda::FusedAttentionArgs a = cuda::fused_attention_args(p, dm);
  cuda::launch_fused_attention_tc_forward(dc, dl, dq, dk, dv, dtype, a, nullptr);
  check(cudaDeviceSynchronize(), "the tensor-core attention kernel");
  check(cudaMemcpy(context.data(), dc, context.size() * sizeof(E), cudaMemcpyDeviceToHost), "cudaMemcpy back");
  check(cudaMemcpy(r.lse.data(), dl, r.lse.size() * sizeof(float), cudaMemcpyDeviceToHost), "cudaMemcpy back");
  for (void* ptr : {static_cast<void*>(dq), static_cast<void*>(dk), static_cast<void*>(dv), static_cast<void*>(dc),
                    static_cast<void*>(dl), static_cast<void*>(dm)})
    if (ptr != nullptr) check(cudaFree(ptr), "cudaFree");
  r.context = widened(context);
  return r;
}

template <class E>
Gradients run_device_backward(const Inputs& in, const BackwardInputs& b, const AttentionProblem& p,
                              const int32_t* keep_host, cuda::Attention16 dtype) {
  const std::vector<E> q = narrowed<E>(in.q), k = narrowed<E>(in.k), v = narrowed<E>(in.v),
                       dout = narrowed<E>(b.dout), out = narrowed<E>(b.context);
  std::vector<E> dq(q.size(), E(NAN)), dk(q.size(), E(NAN)), dv(q.size(), E(NAN));
  E *gq = upload(q.data(), q.size()), *gk = upload(k.data(), k.size()), *gv = upload(v.data(), v.size());
  E *gdout = upload(dout.data(), dout.size()), *gout = upload(out.data(), out.size());
  E *gdq = upload(dq.data(), dq.size()), *gdk = upload(dk.data(), dk.size()), *gdv = upload(dv.data(), dv.size());
  float* glse = upload(b.lse.data(), b.lse.size());
  int32_t* gm = keep_host != nullptr ? upload(keep_host, in.mask.size()) : nullptr;
  const cuda::FusedAttentionArgs a = cuda::fused_attention_args(p, gm);
  void* scratch = nullptr;
  check(cudaMalloc(&scratch, cuda::fused_attention_backward_scratch_bytes(a)), "cudaMalloc");
  cuda::launch_fused_attention_tc_backward(gdq, gdk, gdv, gdout, gq, gk, gv, gout, glse, dtype, a, scratch, nullptr);
  check(cudaDeviceSynchronize(), "the tensor-core attention backward kernels");
  for (auto [host, dev] : {std::pair{&dq, gdq}, std::pair{&dk, gdk}, std::pair{&dv, gdv}})
    check(cudaMemcpy(host->data(), dev, host->size() * sizeof(E), cudaMemcpyDeviceToHost), "cudaMemcpy back");
  for (void* ptr : {static_cast<void*>(gq), static_cast<void*>(gk), static_cast<void*>(gv), static_cast<void*>(gdout),
                    static_cast<void*>(gout), static_cast<void*>(gdq), static_cast<void*>(gdk),
                    static_cast<void*>(gdv), static_cast<void*>(glse), static_cast<void*>(gm), scratch})
    if (ptr != nullptr) check(cudaFree(ptr), "cudaFree");
  return widened_gradients(dq, dk, dv);
}

// Runs one case, forward and backward; returns whether both are within their bounds.
template <class E>
bool check_case(const Case& c, Format16 format, cuda::Attention16 dtype, const char* type) {
  const Inputs in = make_inputs<E>(c, seed_of(c));
  const AttentionProblem p = problem_of(c);
  const int32_t* keep = c.padded ? in.mask.data() : nullptr;
  const Result got = run_device<E>(in, p, keep, dtype);
  const Verdict v = compare(c, in, got, format);
  const Result host = run_host<E>(in, p, keep);
  double host_diff = 0;
  for (size_t x = 0; x < got.context.size(); ++x)
    host_diff = std::max(host_diff, std::abs(double(got.context[x]) - double(host.context[x])));
  const BackwardInputs b = make_backward_inputs<E>(c, in, seed_of(c) + 1);
  const Verdict vb = compare_backward(c, in, b, run_device_backward<E>(in, b, p, keep, dtype), format);
  std::printf("%-5s %-42s forward %.3f  backward %.3f (worst error/bound)  max |device - host| context %.3g  %s\n",
              type, c.label().c_str(), v.worst, vb.worst, host_diff, v.failures + vb.failures == 0 ? "ok" : "FAIL");
  for (const Verdict* x : {&v, &vb})
    if (x->failures > 0)
      std::printf("      %lld out of bound; first: %s\n", static_cast<long long>(x->failures), x->first_failure.c_str());
  return v.failures + vb.failures == 0;
}

struct Options {
  std::string only;  // a case label; empty: every case
  bool bf16 = true, fp16 = true;
};

bool parse_options(int argc, char** argv, Options& o) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--only" && i + 1 < argc) {
      o.only = argv[++i];
      const std::vector<Case> all = cases();
      if (std::none_of(all.begin(), all.end(), [&](const Case& c) { return c.label() == o.only; })) {
        std::fprintf(stderr, "attention_tc_gpu_check: --only '%s' is no case's label (expected e.g. 'S=130 d=64 padded causal dropout')\n",
                     o.only.c_str());
        return false;
      }
    } else if (a == "--dtype" && i + 1 < argc && (std::string(argv[i + 1]) == "bf16" || std::string(argv[i + 1]) == "fp16")) {
      o.bf16 = std::string(argv[++i]) == "bf16";
      o.fp16 = !o.bf16;
    } else {
      std::fprintf(stderr, "usage: attention_tc_gpu_check [--only LABEL] [--dtype bf16|fp16] (got '%s')\n", a.c_str());
      return false;
    }
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!parse_options(argc, argv, o)) return 2;
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    std::printf("attention_tc_gpu_check: no CUDA device: skipped\n");
    return ptsim::test::gpu_test_skip_status();
  }
  int major = 0;
  check(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0), "cudaDeviceGetAttribute");
  auto wanted = [&](const Case& c) { return o.only.empty() || c.label() == o.only; };
  bool ok = true;
  if (major >= 8 && o.bf16) {
    for (const Case& c : cases())
      if (wanted(c)) ok = check_case<Eigen::bfloat16>(c, kBf16, cuda::Attention16::bf16, "bf16") && ok;
  } else if (o.bf16) {
    std::printf("bf16 cases not run: the device is sm_%d0-class (bf16 needs sm_80)\n", major);
  }
  if (o.fp16)
    for (const Case& c : cases())
      if (wanted(c)) ok = check_case<Eigen::half>(c, kFp16, cuda::Attention16::f16, "fp16") && ok;
  std::printf("attention_tc_gpu_check: %s\n", ok ? "every case within its bound" : "FAILED");
  return ok ? 0 : 1;
}

#else
int main() {
  std::printf("attention_tc_gpu_check: built without the CUDA backend: skipped\n");
  return ptsim::test::gpu_test_skip_status();
}
#endif
