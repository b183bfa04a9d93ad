// tests/support/shipped_profiles.hpp — the repository's hardware, network, price and stack profiles
// (hwprofiles/), loaded once per test process: the set every prediction test runs against.
#pragma once
#include "hwprofiles/profiles.hpp"

namespace ptsim::test {

inline const hwprofiles::ProfileSet& shipped_profiles() {
  static const hwprofiles::ProfileSet set = hwprofiles::load_profiles();
  return set;
}

}  // namespace ptsim::test
