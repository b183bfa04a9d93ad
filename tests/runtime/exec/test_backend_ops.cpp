// tests/runtime/exec/test_backend_ops.cpp — the backend-ops harness (after ggml's test-backend-ops): every
// case of backend_ops_cases.cpp (every op kind, forward and backward, many shapes) runs on backend A and on
// the reference backend B from the same inputs, through the Backend interface only, and each output must
// agree within its stated tolerance (backend_ops_cases.hpp). Prints one line per case.
//   test_backend_ops cpu    — A = CPU f32, B = CPU f64 (suite cpu)
//   test_backend_ops cuda   — A = CUDA f32, B = CPU f64 (suite gpu); exit 77 (meson: skipped) without a GPU
//   … --smoke               — one small case per op kind (the smallest that is not degenerate: dropout
//                             p strictly between 0 and 1, more than one position), each kind's verdict on one
//                             line ("smoke KIND: ok|FAIL …"), an exception caught per case: tools/gpu_check.sh's
//                             first stage, so that a kernel that does not launch shows within seconds
//   … --kind K[,K…]         — only the cases of these op kinds (with --smoke: rerun one kind in a fresh
//                             process, away from another kind's sticky CUDA error)
// Before the cases, a self-check proves the comparison can fail: a reference output perturbed by twice
// its tolerance must be rejected, and one perturbed by half of it accepted.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "runtime/exec/backend.hpp"
#include "tests/runtime/exec/backend_ops_cases.hpp"
#ifdef PTSIM_HAVE_CUDA
#include "runtime/exec/cuda/cuda_backend.hpp"  // defines: cuda_device_count
#endif
#include "tests/support/backend_under_test.hpp"  // defines: make_test_backend
#include "tests/support/gpu_skip.hpp"  // defines: gpu_test_skip_status

using namespace ptsim;
using namespace ptsim::test::backend_ops;
using runtime::Backend;
using runtime::ComputeType;
using runtime::DeviceBuffer;
using runtime::DeviceSpan;
using Values = std::vector<std::vector<double>>;

namespace {

size_t element_bytes(const models::Tensor& t, ComputeType compute) {
  if (t.dtype == DType::i32) return 4;
  if (t.dtype == DType::u8) return 1;
  return compute == ComputeType::f64 ? 8 : 4;
}

// Bytes of tensor values as `backend` stores them (float-like in its compute type; i32; u8).
std::vector<std::byte> encode(const models::Tensor& t, const std::vector<double>& v, ComputeType compute) {
  std::vector<std::byte> bytes(v.size() * element_bytes(t, compute));
  for (size_t i = 0; i < v.size(); ++i) {
    std::byte* at = bytes.data() + i * element_bytes(t, compute);
    if (t.dtype == DType::i32) {
      const auto x = static_cast<int32_t>(v[i]);
      std::memcpy(at, &x, 4);
    } else if (t.dtype == DType::u8) {
      const auto x = static_cast<uint8_t>(v[i]);
      std::memcpy(at, &x, 1);
    } else if (compute == ComputeType::f64) {
      std::memcpy(at, &v[i], 8);
    } else {
      const auto x = static_cast<float>(v[i]);
      std::memcpy(at, &x, 4);
    }
  }
  return bytes;
}

std::vector<double> decode(const models::Tensor& t, const std::vector<std::byte>& bytes, ComputeType compute) {
  const size_t width = element_bytes(t, compute);
  std::vector<double> v(bytes.size() / width);
  for (size_t i = 0; i < v.size(); ++i) {
    const std::byte* at = bytes.data() + i * width;
    if (t.dtype == DType::i32) {
      int32_t x;
      std::memcpy(&x, at, 4);
      v[i] = x;
    } else if (t.dtype == DType::u8) {
      v[i] = static_cast<double>(static_cast<uint8_t>(*at));
    } else if (compute == ComputeType::f64) {
      std::memcpy(&v[i], at, 8);
    } else {
      float x;
      std::memcpy(&x, at, 4);
      v[i] = x;
    }
  }
  return v;
}

// Runs the case's ops in order on `backend` from `values` (|values| for float tensors when abs_inputs);
// returns the outputs in op order, each op's in op.outputs order.
Values run_case(Backend& backend, const Case& c, bool abs_inputs) {
  const TaskGraph& g = c.graph;
  const ComputeType compute = backend.compute();
  std::vector<DeviceBuffer> buffers;
  for (const models::Tensor& t : g.tensors) {
    std::vector<double> v = c.values[static_cast<size_t>(t.id)];
    if (abs_inputs && t.dtype == DType::f32)
      for (double& x : v) x = std::abs(x);
    const std::vector<std::byte> bytes = encode(t, v, compute);
    buffers.push_back(backend.allocate(bytes.size()));
    backend.copy_to_device(DeviceSpan::of(buffers.back()), bytes.data());
  }
  const runtime::OpContext context{.seed = 42, .step = 3, .micro_step = 1};
  for (const Op& op : g.ops) {
    std::vector<void*> in, out;
    for (int id : op.inputs) in.push_back(backend.kernel_address(DeviceSpan::of(buffers[static_cast<size_t>(id)])));
    for (int id : op.outputs) out.push_back(backend.kernel_address(DeviceSpan::of(buffers[static_cast<size_t>(id)])));
    backend.run(g, op, in, out, context);
  }
  backend.synchronize();
  Values results;
  for (const Op& op : g.ops)
    for (int id : op.outputs) {
      const DeviceBuffer& b = buffers[static_cast<size_t>(id)];
      std::vector<std::byte> bytes(b.bytes);
      backend.copy_to_host(bytes.data(), DeviceSpan::of(b));
      results.push_back(decode(g.tensor(id), bytes, compute));
    }
  for (const DeviceBuffer& b : buffers) backend.free(b);
  return results;
}

double max_abs(const std::vector<double>& v) {
  double m = 0;
  for (double x : v) m = std::max(m, std::abs(x));
  return m;
}

struct Verdict {
  bool ok = true;
  double worst_units = 0;  // max |a − b| / (u·S): the error in units of u·S (compare with c)
  std::string detail;      // the first failing element
};

// a against reference b for output `o` with scale S.
Verdict compare(const std::vector<double>& a, const std::vector<double>& b, const Tolerance& tol, double S) {
  Verdict v;
  const double allowed = tol.c * kUnitRoundoff * S;
  for (size_t i = 0; i < b.size(); ++i) {
    const double err = std::abs(a[i] - b[i]);
    if (S > 0) v.worst_units = std::max(v.worst_units, err / (kUnitRoundoff * S));
    const bool bad = !std::isfinite(a[i]) ? std::isfinite(b[i]) || !(std::isnan(a[i]) && std::isnan(b[i]))
                                          : !(err <= allowed);
    if (bad && v.ok) {
      v.ok = false;
      v.detail = fmt::format("element {}: {} vs reference {} (|diff| {:.3g} > allowed {:.3g} = {}·u·{:.3g})", i, a[i],
                             b[i], err, allowed, tol.c, S);
    }
  }
  return v;
}

double scale_of(const Case& c, size_t o, const Values& ref, const Values& ref_abs) {
  const Tolerance& t = c.tolerances[o];
  switch (t.scale) {
    case Scale::max_abs: return max_abs(ref[o]);
    case Scale::abs_run: return max_abs(ref_abs[o]);
    case Scale::custom: return t.custom(c.values, ref);
  }
  return 0;
}

// The comparison must be able to fail: a perturbation of 2× the allowed error is rejected, ½× accepted
// (and for an exact output, any change is rejected). 1: passed, 0: no output with a nonzero reference here.
int self_check(const Case& c, const Values& ref, const Values& ref_abs) {
  for (size_t o = 0; o < ref.size(); ++o) {
    const double S = scale_of(c, o, ref, ref_abs);
    if (S <= 0) continue;
    const double allowed = c.tolerances[o].c * kUnitRoundoff * S;
    const double step = allowed > 0 ? allowed : 1e-6 * S;
    std::vector<double> big = ref[o], small = ref[o];
    big[big.size() / 2] += 2 * step;
    small[small.size() / 2] += 0.5 * allowed;
    const bool caught = !compare(big, ref[o], c.tolerances[o], S).ok;
    const bool passed = compare(small, ref[o], c.tolerances[o], S).ok;
    fmt::print("self-check on '{}' output {}: +{:.3g} {}, +{:.3g} {}\n", c.label, o, 2 * step,
               caught ? "rejected" : "ACCEPTED", 0.5 * allowed, passed ? "accepted" : "REJECTED");
    return caught && passed ? 1 : -1;
  }
  return 0;
}

std::unique_ptr<Backend> backend_under_test(const std::string& which) {
  if (which == "cpu") return runtime::make_cpu_backend(ComputeType::f32, 1);
  return test::make_test_backend(runtime::BackendKind::cuda, ComputeType::f32, 1);
}

// Every op kind the backends run (models::OpKind's body ops).
const OpKind kBodyKinds[] = {
    OpKind::embedding, OpKind::embedding_backward, OpKind::gemm, OpKind::batched_gemm, OpKind::bias_grad,
    OpKind::add, OpKind::layernorm, OpKind::layernorm_backward, OpKind::softmax, OpKind::softmax_backward,
    OpKind::dropout, OpKind::dropout_backward, OpKind::gelu, OpKind::gelu_backward, OpKind::tanh,
    OpKind::tanh_backward, OpKind::split_heads, OpKind::merge_heads, OpKind::gather_rows,
    OpKind::gather_rows_backward, OpKind::cross_entropy, OpKind::cross_entropy_backward,
    OpKind::fused_attention, OpKind::fused_attention_backward,
    OpKind::softmax_dropout, OpKind::softmax_dropout_backward, OpKind::bias_dropout_residual,
    OpKind::bias_dropout_residual_backward};

struct Options {
  std::string which = "cpu";
  bool smoke = false;
  std::vector<std::string> kinds;  // empty: every kind
};

// Parses `cpu|cuda [--smoke] [--kind K[,K…]]`; an unknown word or kind is an error naming what was expected.
bool parse_options(int argc, char** argv, Options& o) {
  std::vector<std::string> args(argv + 1, argv + argc);
  for (size_t i = 0; i < args.size(); ++i) {
    if (i == 0 && (args[i] == "cpu" || args[i] == "cuda")) {
      o.which = args[i];
    } else if (args[i] == "--smoke") {
      o.smoke = true;
    } else if (args[i] == "--kind" && i + 1 < args.size()) {
      std::string list = args[++i] + ",";
      for (size_t at = list.find(','); at != std::string::npos; at = list.find(',')) {
        const std::string k = list.substr(0, at);
        list.erase(0, at + 1);
        if (std::none_of(std::begin(kBodyKinds), std::end(kBodyKinds), [&](OpKind b) { return models::to_string(b) == k; })) {
          fmt::print(stderr, "test_backend_ops: --kind '{}' is not an op kind the backends run (expected e.g. gemm, "
                     "layernorm_backward, fused_attention)\n", k);
          return false;
        }
        o.kinds.push_back(k);
      }
    } else {
      fmt::print(stderr, "usage: test_backend_ops cpu|cuda [--smoke] [--kind K[,K...]] (got '{}')\n", args[i]);
      return false;
    }
  }
  return true;
}

int64_t case_elements(const Case& c) {
  int64_t n = 0;
  for (const models::Tensor& t : c.graph.tensors) n += t.elements();
  return n;
}

// A case that may skip the kernel's main path: dropout p = 0 or 1 on an op with dropout, or one sequence
// position. The smoke run takes such a case only when its op kind has no other.
bool degenerate(const Case& c) {
  const models::OpAttrs& a = c.op().attrs;
  const bool has_dropout = c.label.find("p=") != std::string::npos;
  return (has_dropout && (a.dropout_p == 0 || a.dropout_p == 1)) || a.seq == 1;
}

// The smoke run's preference: a non-degenerate case first, then the fewest elements.
bool smoke_prefers(const Case& a, const Case& b) {
  if (degenerate(a) != degenerate(b)) return !degenerate(a);
  return case_elements(a) < case_elements(b);
}

// The cases to run: every case, or (--smoke) one per op kind (smoke_prefers); only --kind's kinds when given.
std::vector<Case> selected_cases(const Options& o) {
  std::vector<Case> picked;
  for (Case& c : all_cases()) {
    const std::string kind = models::to_string(c.op().kind);
    if (!o.kinds.empty() && std::find(o.kinds.begin(), o.kinds.end(), kind) == o.kinds.end()) continue;
    auto same = std::find_if(picked.begin(), picked.end(), [&](const Case& p) { return p.op().kind == c.op().kind; });
    if (!o.smoke || same == picked.end())
      picked.push_back(std::move(c));
    else if (smoke_prefers(c, *same))
      *same = std::move(c);
  }
  return picked;
}

// The smoke run: each selected case once, an exception (a launch or a CUDA error) caught per case, one
// verdict line per op kind, then the list of kinds that failed.
int run_smoke(Backend& a, Backend& b, const std::vector<Case>& cases) {
  std::vector<std::string> failing;
  for (const Case& c : cases) {
    const std::string kind = models::to_string(c.op().kind);
    std::string verdict = "ok";
    double worst = 0;
    try {
      const Values ref = run_case(b, c, false), ref_abs = run_case(b, c, true);
      const Values got = run_case(a, c, false);
      for (size_t o = 0; o < ref.size(); ++o) {
        const Verdict v = compare(got[o], ref[o], c.tolerances[o], scale_of(c, o, ref, ref_abs));
        worst = std::max(worst, v.worst_units);
        if (!v.ok && verdict == "ok") verdict = fmt::format("FAIL output {}: {}", o, v.detail);
      }
    } catch (const std::exception& e) {
      verdict = fmt::format("FAIL exception: {}", e.what());
    }
    fmt::print("smoke {}: {} (case '{}', {} elements, worst {:.3g}·u·S)\n", kind, verdict, c.label, case_elements(c),
               worst);
    std::fflush(stdout);
    if (verdict != "ok") failing.push_back(kind);
  }
  fmt::print("test_backend_ops smoke on {}: {} of {} op kinds pass{}{}\n", a.name(), cases.size() - failing.size(),
             cases.size(), failing.empty() ? "" : "; failing: ", fmt::join(failing, " "));
  return failing.empty() ? 0 : 1;
}

// The full run: every selected case, the self-check first, one line per output; every op kind covered.
int run_full(Backend& a, Backend& b, const std::vector<Case>& cases, bool every_kind) {
  int self_checked = 0;  // cases checked so far (one exact, one with a tolerance)
  bool checked_exact = false, checked_tolerance = false;
  int failures = 0;
  std::vector<std::string> kinds;
  for (const Case& c : cases) {
    const Values ref = run_case(b, c, false), ref_abs = run_case(b, c, true);
    const bool exact_case = c.tolerances.front().c == 0;
    if (exact_case ? !checked_exact : !checked_tolerance) {
      const int r = self_check(c, ref, ref_abs);
      if (r < 0) {
        fmt::print("test_backend_ops: the comparison cannot tell a wrong result from a right one\n");
        return 1;
      }
      if (r > 0) {
        (exact_case ? checked_exact : checked_tolerance) = true;
        ++self_checked;
      }
    }
    const Values got = run_case(a, c, false);
    for (size_t o = 0; o < ref.size(); ++o) {
      const Verdict v = compare(got[o], ref[o], c.tolerances[o], scale_of(c, o, ref, ref_abs));
      fmt::print("{:4} {} vs {}: {} [output {}] error {:.3g}·u·S (allowed {})\n", v.ok ? "ok" : "FAIL", a.name(),
                 b.name(), c.label, o, v.worst_units, c.tolerances[o].c);
      if (!v.ok) {
        fmt::print("     {}\n", v.detail);
        ++failures;
      }
    }
    const std::string kind = models::to_string(c.op().kind);
    if (std::find(kinds.begin(), kinds.end(), kind) == kinds.end()) kinds.push_back(kind);
  }
  fmt::print("test_backend_ops: {} cases over {} op kinds, {} failing outputs\n", cases.size(), kinds.size(),
             failures);
  if (!every_kind) return failures == 0 ? 0 : 1;  // --kind: the coverage checks belong to the whole run
  for (OpKind k : kBodyKinds)
    if (std::find(kinds.begin(), kinds.end(), models::to_string(k)) == kinds.end()) {
      fmt::print("test_backend_ops: no case runs op kind {}\n", models::to_string(k));
      return 1;
    }
  if (self_checked != 2) {
    fmt::print("test_backend_ops: the self-check did not run on an exact and a toleranced output\n");
    return 1;
  }
  return failures == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!parse_options(argc, argv, o)) return 2;
  if (o.which == "cuda") {
#ifdef PTSIM_HAVE_CUDA
    if (runtime::cuda_device_count() == 0) {
      fmt::print("test_backend_ops: no CUDA device was found: skipping the CUDA-vs-CPU cases\n");
      return ptsim::test::gpu_test_skip_status();
    }
#else
    fmt::print("test_backend_ops: this build has no CUDA backend: skipping\n");
    return ptsim::test::gpu_test_skip_status();
#endif
  }
  try {
    std::unique_ptr<Backend> a = backend_under_test(o.which);
    std::unique_ptr<Backend> b = runtime::make_cpu_backend(ComputeType::f64, 1);
    const std::vector<Case> cases = selected_cases(o);
    return o.smoke ? run_smoke(*a, *b, cases) : run_full(*a, *b, cases, o.kinds.empty());
  } catch (const std::exception& e) {
    fmt::print(stderr, "test_backend_ops: {}\n", e.what());
    return 1;
  }
}
