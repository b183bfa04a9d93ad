// core/machine_memory.hpp — how much memory this machine can give a new allocation, so that work that
// grows with a user number (`train`'s buffers, `data prepare --dup-factor`) is refused up front with the
// bytes it needs instead of dying in std::bad_alloc or the OOM killer half-way.
// Source: MemAvailable in /proc/meminfo (Linux ≥ 3.14: the kernel's estimate of memory available to
// start new work without swapping). Not here: cgroup limits (a container's memory.max is not consulted).
#pragma once
#include <cstdint>
#include <optional>
#include <string>

namespace ptsim::core {

// MemAvailable in bytes, or nullopt where /proc/meminfo is missing or unreadable (then callers skip the
// check rather than refuse). PTSIM_MEM_AVAILABLE_BYTES overrides it (tests use it to play a small machine).
std::optional<uint64_t> available_memory_bytes();

// Throws InputError "<what> needs <needed> bytes (<GiB>) of memory, this machine has <available> available
// (MemAvailable in /proc/meminfo); <advice>" when `needed_bytes` exceeds what is available.
void require_available_memory(double needed_bytes, const std::string& what, const std::string& advice);

// The same check against `available` bytes of another memory (a GPU's): throws InputError "<what> needs
// <needed> bytes (<GiB>) of memory, <where> has <available> bytes (<GiB>) available (<source>); <advice>".
void require_memory(double needed_bytes, uint64_t available, const std::string& where, const std::string& source,
                    const std::string& what, const std::string& advice);

// "1.23 GiB" (binary units), for messages.
std::string format_bytes(double bytes);

}  // namespace ptsim::core
