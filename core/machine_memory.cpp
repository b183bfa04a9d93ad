// core/machine_memory.cpp — MemAvailable from /proc/meminfo, and the up-front memory check.
#include "core/machine_memory.hpp"

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "core/error.hpp"

namespace ptsim::core {

std::optional<uint64_t> available_memory_bytes() {
  if (const char* forced = std::getenv("PTSIM_MEM_AVAILABLE_BYTES"); forced && *forced) {
    char* end = nullptr;
    const unsigned long long v = std::strtoull(forced, &end, 10);
    if (end && *end == '\0') return v;
  }
  std::ifstream in("/proc/meminfo");
  std::string line;
  while (std::getline(in, line)) {
    // "MemAvailable:   12345678 kB"
    if (line.rfind("MemAvailable:", 0) != 0) continue;
    std::istringstream fields(line.substr(13));
    uint64_t kib = 0;
    std::string unit;
    if (fields >> kib >> unit && unit == "kB") return kib * 1024;
    return std::nullopt;
  }
  return std::nullopt;
}

std::string format_bytes(double bytes) {
  if (bytes >= 1024.0 * 1024 * 1024 * 1024) return fmt::format("{:.2f} TiB", bytes / (1024.0 * 1024 * 1024 * 1024));
  if (bytes >= 1024.0 * 1024 * 1024) return fmt::format("{:.2f} GiB", bytes / (1024.0 * 1024 * 1024));
  if (bytes >= 1024.0 * 1024) return fmt::format("{:.2f} MiB", bytes / (1024.0 * 1024));
  return fmt::format("{:.0f} bytes", bytes);
}

void require_memory(double needed_bytes, uint64_t available, const std::string& where, const std::string& source,
                    const std::string& what, const std::string& advice) {
  if (!(needed_bytes > static_cast<double>(available)) && std::isfinite(needed_bytes)) return;
  throw InputError(fmt::format("{} needs {:.0f} bytes ({}) of memory, {} has {} bytes ({}) available ({}); {}", what,
                               needed_bytes, format_bytes(needed_bytes), where, available,
                               format_bytes(static_cast<double>(available)), source, advice));
}

void require_available_memory(double needed_bytes, const std::string& what, const std::string& advice) {
  const std::optional<uint64_t> available = available_memory_bytes();
  if (!available) return;
  const char* forced = std::getenv("PTSIM_MEM_AVAILABLE_BYTES");
  require_memory(needed_bytes, *available, "this machine",
                 forced && *forced ? "PTSIM_MEM_AVAILABLE_BYTES" : "MemAvailable in /proc/meminfo", what, advice);
}

}  // namespace ptsim::core
