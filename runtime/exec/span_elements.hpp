// runtime/exec/span_elements.hpp — how many elements of a dtype a backend span holds, refusing a span that
// holds no whole number of them: the one check the communicators' all-reduces and every Backend::scale_16bit
// make on what they are handed. Defined in backend_defaults.cpp.
#pragma once
#include <cstddef>

#include "models/task_graph.hpp"  // defines: DType
#include "runtime/exec/device_types.hpp"

namespace ptsim::runtime {

// The number of `dtype` elements in `data`; std::invalid_argument naming `who` when its bytes are not a whole
// number of them.
size_t whole_element_count(const DeviceSpan& data, models::DType dtype, const char* who);

}  // namespace ptsim::runtime
