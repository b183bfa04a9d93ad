// runtime/comm/communicator.cpp — the default all-reduce of backend memory: host-memory collectives on the
// backend's buffers (in place where they are host memory, else staged through a host copy); its
// non-blocking form defaults to the blocking one.
#include "runtime/comm/communicator.hpp"

#include <vector>

#include "runtime/exec/backend.hpp"

namespace ptsim::runtime {
namespace {

template <class T>
void reduce_span(Communicator& comm, Backend& backend, const DeviceSpan& data) {
  const size_t n = data.bytes / sizeof(T);
  if (backend.host_addressable()) {
    comm.all_reduce_sum(std::span<T>(static_cast<T*>(backend.kernel_address(data)), n));
    return;
  }
  std::vector<T> host(n);
  backend.copy_to_host(host.data(), data);
  comm.all_reduce_sum(std::span<T>(host));
  backend.copy_to_device(data, host.data());
}

}  // namespace

void Communicator::all_reduce_sum(Backend& backend, const DeviceSpan& data, ComputeType type, Stream stream) {
  backend.synchronize(stream);  // host collectives read the memory now: what `stream` queued must have run
  if (type == ComputeType::f64) reduce_span<double>(*this, backend, data);
  else reduce_span<float>(*this, backend, data);
}

CommRequest Communicator::start_all_reduce_sum(Backend& backend, const DeviceSpan& data, ComputeType type,
                                               Stream stream) {
  all_reduce_sum(backend, data, type, stream);
  return CommRequest{0};  // already complete
}

void Communicator::wait(CommRequest) {}

}  // namespace ptsim::runtime
