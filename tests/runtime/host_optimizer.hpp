// tests/runtime/host_optimizer.hpp — test support: an Optimizer over tensors kept in host vectors. It owns a
// CPU backend, gives every tensor a weight and a gradient buffer there, copies the host values in before a
// step (step, step_begin) and the weights back out after it (step, step_end), so a test can set gradients
// and read weights as plain vectors while the update runs as the runtime runs it (Backend::optimizer_step).
// Not here: the optimizer itself (runtime/optim/optimizer.hpp).
#pragma once
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "runtime/exec/backend.hpp"
#include "runtime/optim/optimizer.hpp"

namespace ptsim::test {

// One tensor as the test holds it: its weights and gradient (same size), by reference.
struct HostTensor {
  std::string name;
  std::vector<float>* w = nullptr;
  std::vector<float>* g = nullptr;
  bool decay = true;
};

class HostOptimizer {
 public:
  // `threads`: the CPU backend's vector-pass threads (results must not depend on it).
  HostOptimizer(const runtime::OptimizerConfig& config, std::vector<HostTensor> tensors, int threads = 1)
      : backend_(runtime::make_cpu_backend(runtime::ComputeType::f32, threads)), tensors_(std::move(tensors)) {
    std::vector<runtime::ParamSlot> slots;
    for (const HostTensor& t : tensors_) {
      const size_t bytes = t.w->size() * sizeof(float);
      const runtime::DeviceSpan w = runtime::DeviceSpan::of(backend_->allocate(bytes));
      const runtime::DeviceSpan g = runtime::DeviceSpan::of(backend_->allocate(bytes));
      slots.push_back(runtime::ParamSlot{t.name, w, g, t.w->size(), t.decay});
    }
    optimizer_ = runtime::make_optimizer(*backend_, config, std::move(slots));
    copy_in();
  }

  void step(double lr, std::optional<double> norm = std::nullopt) {
    copy_in();
    optimizer_->step(lr, norm);
    copy_out();
  }
  void step_begin(double lr, std::optional<double> norm = std::nullopt) {
    copy_in();
    optimizer_->step_begin(lr, norm);
  }
  void update(std::span<const size_t> slots) { optimizer_->update(slots); }
  void step_end() {
    optimizer_->step_end();
    copy_out();
  }
  runtime::Optimizer& optimizer() { return *optimizer_; }
  double last_grad_norm() const { return optimizer_->last_grad_norm(); }
  double last_clip_divisor() const { return optimizer_->last_clip_divisor(); }
  runtime::OptimizerState save_state() const { return optimizer_->save_state(); }
  void load_state(const runtime::OptimizerState& s, const std::string& source = "optimizer state") {
    optimizer_->load_state(s, source);
  }
  int64_t step_count() const { return optimizer_->step_count(); }

 private:
  void copy_in() {
    for (size_t i = 0; i < tensors_.size(); ++i) {
      backend_->copy_to_device(optimizer_->slots()[i].weight, tensors_[i].w->data());
      backend_->copy_to_device(optimizer_->slots()[i].grad, tensors_[i].g->data());
    }
  }
  void copy_out() {
    for (size_t i = 0; i < tensors_.size(); ++i)
      backend_->copy_to_host(tensors_[i].w->data(), optimizer_->slots()[i].weight);
  }

  std::unique_ptr<runtime::Backend> backend_;  // declared first: outlives the optimizer's state buffers
  std::vector<HostTensor> tensors_;
  std::unique_ptr<runtime::Optimizer> optimizer_;
};

}  // namespace ptsim::test
