// runtime/comm/communicator.cpp — the default all-reduce of backend memory: host-memory collectives on the
// backend's buffers (in place where they are host memory, else staged through a host copy), f32/f64 always,
// f16/bf16 for a communicator that sums them natively; its non-blocking form defaults to the blocking one.
#include "runtime/comm/communicator.hpp"

#include <fmt/format.h>

#include <stdexcept>
#include <type_traits>
#include <vector>

#include "runtime/exec/backend.hpp"
#include "runtime/exec/span_elements.hpp"

namespace ptsim::runtime {
namespace {

// The host-memory sum of n elements of T at `host` (T = uint16_t: 16-bit floats of `dtype`).
template <class T>
void host_sum(Communicator& comm, T* host, size_t n, models::DType dtype) {
  if constexpr (std::is_same_v<T, uint16_t>) comm.all_reduce_sum_16bit(std::span<T>(host, n), dtype);
  else comm.all_reduce_sum(std::span<T>(host, n));
}

template <class T>
void reduce_span(Communicator& comm, Backend& backend, const DeviceSpan& data, models::DType dtype) {
  const size_t n = data.bytes / sizeof(T);
  if (backend.host_addressable()) return host_sum(comm, static_cast<T*>(backend.kernel_address(data)), n, dtype);
  std::vector<T> host(n);
  backend.copy_to_host(host.data(), data);
  host_sum(comm, host.data(), n, dtype);
  backend.copy_to_device(data, host.data());
}

}  // namespace

bool is_summable_float(models::DType dtype) {
  return dtype == models::DType::f32 || dtype == models::DType::f64 || dtype == models::DType::f16 ||
         dtype == models::DType::bf16;
}

void Communicator::all_reduce_sum_16bit(std::span<uint16_t>, models::DType dtype) {
  throw std::logic_error(fmt::format("this communicator does not sum {} natively (sums_natively is false)",
                                     models::to_string(dtype)));
}

bool Communicator::sums_natively(models::DType dtype) const {
  return dtype == models::DType::f32 || dtype == models::DType::f64;
}

void Communicator::all_reduce_sum(Backend& backend, const DeviceSpan& data, models::DType dtype, Stream stream) {
  if (!sums_natively(dtype))
    throw std::invalid_argument(fmt::format("Communicator::all_reduce_sum: this communicator does not sum elements of "
                                            "dtype {} (sums_natively is false)",
                                            models::to_string(dtype)));
  (void)whole_element_count(data, dtype, "Communicator::all_reduce_sum");
  backend.synchronize(stream);  // host collectives read the memory now: what `stream` queued must have run
  if (dtype == models::DType::f64) reduce_span<double>(*this, backend, data, dtype);
  else if (dtype == models::DType::f32) reduce_span<float>(*this, backend, data, dtype);
  else reduce_span<uint16_t>(*this, backend, data, dtype);
}

CommRequest Communicator::start_all_reduce_sum(Backend& backend, const DeviceSpan& data, models::DType dtype,
                                               Stream stream) {
  all_reduce_sum(backend, data, dtype, stream);
  return CommRequest{0};  // already complete
}

void Communicator::wait(CommRequest) {}

}  // namespace ptsim::runtime
