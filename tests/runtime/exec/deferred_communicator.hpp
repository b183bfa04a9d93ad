// tests/runtime/exec/deferred_communicator.hpp — a rank 0 of 2 standing in for MPI whose started all-reduces
// (start_all_reduce_sum) are summed only in wait(): the bucket is read from the backend, summed by
// sum_started() and written back there, so a bucket read or written between start and wait would show.
// Derive, say what the other rank adds (sum_started, and the blocking all_reduce_sum overloads). Users:
// test_comm_overlap.cpp (the other rank holds the same values), test_16bit_params.cpp (it holds 0.75·x).
#pragma once
#include <cstdint>
#include <span>
#include <stdexcept>
#include <utility>
#include <vector>

#include "runtime/comm/communicator.hpp"
#include "runtime/exec/backend.hpp"

namespace ptsim::test {

class DeferredCommunicator : public runtime::Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 2; }
  using runtime::Communicator::all_reduce_sum;
  // fp32 only (sums_natively keeps its default: 16-bit buckets come through the executor's fp32 staging).
  runtime::CommRequest start_all_reduce_sum(runtime::Backend& backend, const runtime::DeviceSpan& data,
                                            models::DType dtype, runtime::Stream) override {
    if (dtype != models::DType::f32) throw std::logic_error("DeferredCommunicator: fp32 buckets only");
    pending_.push_back({&backend, data});
    return runtime::CommRequest{static_cast<int32_t>(pending_.size() - 1)};
  }
  void wait(runtime::CommRequest request) override {
    const auto& [backend, span] = pending_.at(static_cast<size_t>(request.id));
    std::vector<float> v(span.bytes / sizeof(float));
    backend->copy_to_host(v.data(), span);
    sum_started(std::span<float>(v));
    backend->copy_to_device(span, v.data());
  }
  void barrier() override {}

 protected:
  // The sum of a started bucket (fp32 gradients), in place.
  virtual void sum_started(std::span<float> data) = 0;

 private:
  std::vector<std::pair<runtime::Backend*, runtime::DeviceSpan>> pending_;
};

}  // namespace ptsim::test
