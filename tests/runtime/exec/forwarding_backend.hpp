// tests/runtime/exec/forwarding_backend.hpp — a Backend that forwards every call to another one, for test
// doubles that change one behaviour (test_optimizer_pass.cpp: Backend's default optimizer_step; tests/
// runtime/comm/test_mpi_staged.cpp: memory the host may not dereference). Derive and override what differs.
#pragma once
#include <span>

#include "runtime/exec/backend.hpp"

namespace ptsim::test {

class ForwardingBackend : public runtime::Backend {
 public:
  explicit ForwardingBackend(runtime::Backend& inner) : inner_(inner) {}
  const char* name() const override { return inner_.name(); }
  runtime::ComputeType compute() const override { return inner_.compute(); }
  bool stores_16bit() const override { return inner_.stores_16bit(); }
  runtime::DeviceBuffer allocate(size_t bytes) override { return inner_.allocate(bytes); }
  void free(runtime::DeviceBuffer b) override { inner_.free(b); }
  void* kernel_address(const runtime::DeviceSpan& s) override { return inner_.kernel_address(s); }
  bool host_addressable() const override { return inner_.host_addressable(); }
  void copy_to_device(const runtime::DeviceSpan& d, const void* s) override { inner_.copy_to_device(d, s); }
  void copy_to_device_async(const runtime::DeviceSpan& d, const void* s) override { inner_.copy_to_device_async(d, s); }
  void copy_to_host(void* d, const runtime::DeviceSpan& s) override { inner_.copy_to_host(d, s); }
  void copy(const runtime::DeviceSpan& d, const runtime::DeviceSpan& s) override { inner_.copy(d, s); }
  void fill_zero(const runtime::DeviceSpan& s) override { inner_.fill_zero(s); }
  runtime::Stream create_stream() override { return inner_.create_stream(); }
  runtime::Event create_event() override { return inner_.create_event(); }
  void record(runtime::Event e, runtime::Stream s) override { inner_.record(e, s); }
  void wait(runtime::Stream s, runtime::Event e) override { inner_.wait(s, e); }
  double elapsed_seconds(runtime::Event a, runtime::Event b) override { return inner_.elapsed_seconds(a, b); }
  void synchronize(runtime::Stream s) override { inner_.synchronize(s); }
  void run(const models::TaskGraph& g, const models::Op& op, std::span<void* const> in, std::span<void* const> out,
           const runtime::OpContext& c) override {
    inner_.run(g, op, in, out, c);
  }
  void round_to_dtype(const runtime::DeviceSpan& s, models::DType t) override { inner_.round_to_dtype(s, t); }
  void scale(const runtime::DeviceSpan& s, double f) override { inner_.scale(s, f); }
  double sum_of_squares(const runtime::DeviceSpan& s) override { return inner_.sum_of_squares(s); }
  void optimizer_step(const runtime::optim_math::Hyperparameters& h, const runtime::DeviceSpan& scalars,
                      std::span<const runtime::OptimizerTensor> tensors) override {
    inner_.optimizer_step(h, scalars, tensors);
  }

 protected:
  runtime::Backend& inner() { return inner_; }

 private:
  runtime::Backend& inner_;
};

}  // namespace ptsim::test
