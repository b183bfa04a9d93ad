// tests/fuzz/test_fuzz_corpus.cpp — the cpu suite's replay of every fuzz corpus (tests/fuzz/corpus/<target>/):
// each committed input, seeds and the inputs that once crashed ptsim, goes through the same code as its
// libFuzzer target (the fuzz_*.cpp files, compiled here with -DPTSIM_FUZZ_REPLAY). Anything but success or
// core::InputError aborts. Runs with any compiler, so a fixed crash stays fixed without clang.
#include <doctest/doctest.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

int ptsim_fuzz_scenario(const uint8_t* data, size_t size);
int ptsim_fuzz_model(const uint8_t* data, size_t size);
int ptsim_fuzz_hwprofile(const uint8_t* data, size_t size);
int ptsim_fuzz_safetensors(const uint8_t* data, size_t size);
int ptsim_fuzz_shards(const uint8_t* data, size_t size);
int ptsim_fuzz_vocab(const uint8_t* data, size_t size);
int ptsim_fuzz_op_times(const uint8_t* data, size_t size);
int ptsim_fuzz_sweep(const uint8_t* data, size_t size);

namespace {

namespace fs = std::filesystem;

// Feeds every file of corpus/<target> to `entry`; returns how many there were.
size_t replay(const std::string& target, int (*entry)(const uint8_t*, size_t)) {
  const fs::path dir = fs::path(PTSIM_SOURCE_DIR) / "tests" / "fuzz" / "corpus" / target;
  REQUIRE(fs::is_directory(dir));
  size_t files = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (!e.is_regular_file()) continue;
    std::ifstream in(e.path(), std::ios::binary);
    const std::string bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    INFO("corpus input ", e.path().string());
    entry(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
    ++files;
  }
  return files;
}

}  // namespace

TEST_CASE("every fuzz corpus input is accepted or refused with an InputError") {
  CHECK(replay("scenario", ptsim_fuzz_scenario) >= 3);
  CHECK(replay("model", ptsim_fuzz_model) >= 4);
  CHECK(replay("hwprofile", ptsim_fuzz_hwprofile) >= 4);
  CHECK(replay("safetensors", ptsim_fuzz_safetensors) >= 3);
  CHECK(replay("shards", ptsim_fuzz_shards) >= 2);
  CHECK(replay("vocab", ptsim_fuzz_vocab) >= 2);
  CHECK(replay("op_times", ptsim_fuzz_op_times) >= 1);
  CHECK(replay("sweep", ptsim_fuzz_sweep) >= 3);
}
