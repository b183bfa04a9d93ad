// tests/fuzz/fuzz_support.hpp — what every libFuzzer target in tests/fuzz shares (docs/fuzzing-and-sanitizers.md).
//   guarded([&] { parse(...); })   runs one parse: core::InputError is the expected answer to bad input and is
//                                  swallowed; any other exception aborts, so libFuzzer reports it as a crash.
//   FuzzScratch                    a per-process scratch directory, for loaders that take a path.
//   PTSIM_FUZZ_TARGET(name)        the entry point: LLVMFuzzerTestOneInput in a fuzz build, or
//                                  ptsim_fuzz_<name> when compiled into the cpu suite's corpus replay
//                                  (test_fuzz_corpus.cpp, -DPTSIM_FUZZ_REPLAY), so both run the same code.
#pragma once
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <system_error>

#include "core/error.hpp"

#ifdef PTSIM_FUZZ_REPLAY
#define PTSIM_FUZZ_TARGET(name) int ptsim_fuzz_##name(const uint8_t* data, size_t size)
#else
#define PTSIM_FUZZ_TARGET(name) extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
#endif

namespace ptsim::fuzz {

template <typename F>
void guarded(F&& parse) {
  try {
    parse();
  } catch (const core::InputError&) {
    // bad input, reported the way ptsim reports it (exit 2): fine
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuzz: a parser threw something other than core::InputError: %s\n", e.what());
    std::abort();
  } catch (...) {
    std::fprintf(stderr, "fuzz: a parser threw a non-std exception\n");
    std::abort();
  }
}

inline std::string_view as_text(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// <tmp>/ptsim_fuzz_<pid>/, created on first use and removed at exit.
class FuzzScratch {
 public:
  static FuzzScratch& get() {
    static FuzzScratch scratch;
    return scratch;
  }
  const std::filesystem::path& dir() const { return dir_; }
  // Writes `bytes` to dir()/name (replacing it) and returns the path.
  std::string write(const std::string& name, std::string_view bytes) const {
    const auto path = dir_ / name;
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.close();
    if (!out) {
      std::fprintf(stderr, "fuzz: cannot write scratch file %s\n", path.c_str());
      std::abort();
    }
    return path.string();
  }
  FuzzScratch(const FuzzScratch&) = delete;
  FuzzScratch& operator=(const FuzzScratch&) = delete;

 private:
  FuzzScratch() : dir_(std::filesystem::temp_directory_path() / ("ptsim_fuzz_" + std::to_string(::getpid()))) {
    std::filesystem::create_directories(dir_);
  }
  ~FuzzScratch() {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  std::filesystem::path dir_;
};

}  // namespace ptsim::fuzz
