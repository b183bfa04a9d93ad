// runtime/exec/cuda/device_error.hpp — how a kernel reports bad input (a token id, gather index or label
// out of range) without stopping the stream: the first report wins a compare-and-swap on `kind` and
// records the value and position; the backend reads the record back at its next synchronising call
// (synchronize, copy_to_host) and throws core::InputError with the same message the CPU backend gives.
// Host and device (the struct); the report function is device-only.
#pragma once
#include <cstdint>

namespace ptsim::runtime::cuda {

enum class DeviceErrorKind : int32_t { none = 0, token_id = 1, gather_index = 2, label = 3 };

struct DeviceError {
  int32_t kind = 0;       // DeviceErrorKind; 0 = no error
  int32_t unused = 0;
  int64_t value = 0;      // the offending id / index / label
  int64_t position = 0;   // its row
  int64_t limit = 0;      // the bound it broke (rows of the table, classes)
};

#ifdef __CUDACC__
__device__ inline void report_device_error(DeviceError* e, DeviceErrorKind kind, int64_t value, int64_t position,
                                           int64_t limit) {
  if (atomicCAS(&e->kind, 0, static_cast<int32_t>(kind)) == 0) {
    e->value = value;
    e->position = position;
    e->limit = limit;
  }
}
#endif

}  // namespace ptsim::runtime::cuda
