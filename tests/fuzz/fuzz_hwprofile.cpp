// tests/fuzz/fuzz_hwprofile.cpp — libFuzzer target: hardware profile files (hwprofiles/profiles.hpp). The
// first byte picks the loader (GPU, node, network, price file); the rest is the file, written to a scratch
// path because the loaders take one.
#include "hwprofiles/profiles.hpp"
#include "tests/fuzz/fuzz_support.hpp"

PTSIM_FUZZ_TARGET(hwprofile) {
  if (size < 1) return 0;
  const auto& scratch = ptsim::fuzz::FuzzScratch::get();
  const std::string path = scratch.write("fuzz-profile.json", ptsim::fuzz::as_text(data + 1, size - 1));
  ptsim::fuzz::guarded([&] {
    switch (data[0] % 4) {
      case 0: (void)ptsim::hwprofiles::load_gpu_profile(path); break;
      case 1: (void)ptsim::hwprofiles::load_node_profile(path); break;
      case 2: (void)ptsim::hwprofiles::load_network_profile(path); break;
      default: (void)ptsim::hwprofiles::read_price_file(path); break;
    }
  });
  return 0;
}
