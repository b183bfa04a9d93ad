// tests/cuda_emu/nccl_emulated_fault.cpp — PTSIM_EMU_NCCL_FAULT's parsing (see the header).
#include "nccl_emulated_fault.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace cuda_emu::nccl {
namespace {

// A decimal integer in [low, high] spanning all of [begin, end).
bool parse_int(const char* begin, const char* end, int64_t low, int64_t high, int64_t& out) {
  if (begin == end) return false;
  std::string digits(begin, end);
  char* stop = nullptr;
  errno = 0;
  const long long v = std::strtoll(digits.c_str(), &stop, 10);
  if (errno != 0 || *stop != '\0' || v < low || v > high) return false;
  out = v;
  return true;
}

}  // namespace

bool parse_fault(const char* value, std::optional<Fault>& fault, std::string& why) {
  fault.reset();
  if (value == nullptr || *value == '\0') return true;
  const char* first = std::strchr(value, ':');
  const char* second = first != nullptr ? std::strchr(first + 1, ':') : nullptr;
  Fault f;
  f.text = value;
  const std::string kind = first != nullptr ? std::string(value, first) : std::string(value);
  int64_t rank = 0, call = 0;
  const bool kind_ok = kind == "async-error" || kind == "hang";
  const bool every_rank = second != nullptr && std::string(first + 1, second) == "all";
  if (every_rank) rank = Fault::kEveryRank;
  if (!kind_ok || second == nullptr || (!every_rank && !parse_int(first + 1, second, 0, 1 << 20, rank)) ||
      !parse_int(second + 1, second + std::strlen(second), 1, INT64_MAX, call)) {
    why = fmt::format("PTSIM_EMU_NCCL_FAULT='{}': expected KIND:RANK:N with KIND async-error or hang, RANK an NCCL "
                      "rank >= 0 or all, and N >= 1 (rank RANK's Nth ncclAllReduce fails)", value);
    return false;
  }
  f.kind = kind == "hang" ? Fault::Kind::hang : Fault::Kind::async_error;
  f.rank = static_cast<int>(rank);
  f.call = call;
  fault = f;
  return true;
}

bool fault_from_env(std::optional<Fault>& fault, std::string& why) {
  return parse_fault(std::getenv("PTSIM_EMU_NCCL_FAULT"), fault, why);
}

}  // namespace cuda_emu::nccl
