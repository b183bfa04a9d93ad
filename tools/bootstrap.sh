#!/usr/bin/env bash
# tools/bootstrap.sh — install what ptsim needs on Debian 12 / Ubuntu, then configure the build.
# Idempotent: packages already present are not reinstalled; an existing build dir is reused.
# Usage: tools/bootstrap.sh [BUILD_DIR [TARGET...]]   (default: build, every target)
#   TARGETs are ninja targets: tools/ptsim.sh passes tools/ptsim, so the first prediction on a fresh
#   machine does not wait for the test executables (those build on the first `meson test`).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="${1:-build}"
shift $(($# > 0 ? 1 : 0))
targets=("$@")

# To build and test: missing ones are installed, and bootstrap fails if they cannot be.
# libopenblas-pthread-dev: OpenBLAS (threaded with pthreads, CPU kernels picked at run time) for the CPU
# backend's GEMMs (docs/cpu-performance.md); without it the build falls back to Eigen's slower product. clang-14 and
# libclang-rt-14-dev (libFuzzer, ASan/UBSan/LSan runtimes): tools/test_sanitizers.sh, which CI runs.
packages=(meson ninja-build g++ pkg-config libeigen3-dev libboost-graph-dev libfmt-dev
          libboost-context-dev  # the CUDA emulator's fibers (docs/cuda-emulation.md)
          nlohmann-json3-dev doctest-dev libcli11-dev libopenmpi-dev openmpi-bin
          libopenblas-dev libopenblas-pthread-dev
          libutf8proc-dev  # Unicode tables for the BERT tokenizer (runtime/data/unicode_text.*)
          unicode-data     # NormalizationTest.txt, which the tokenizer's NFD test reads
          libjs-chart.js   # Chart.js, inlined by `ptsim report` into its pages (docs/report.md)
          libcpp-httplib-dev chromium  # `ptsim serve` (docs/serve.md) and its browser test (the `ui` suite)
          pybind11-dev python3-dev  # `import ptsim` (python/, docs/python.md)
          clang-14 libclang-rt-14-dev)  # the sanitizer and fuzz build (docs/fuzzing-and-sanitizers.md)
# The README tour's demo corpus (tools/make_corpus.sh): the text, and the `bible` program that reads it
# (bible-kjv; --no-install-recommends does not bring it with bible-kjv-text). Installed when missing; a
# machine that cannot install them (offline) still builds and tests, with a warning.
demo_packages=(bible-kjv-text bible-kjv)

missing_of() {
  local p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || echo "$p"
  done
}
sudo_cmd=""
if [ "$(id -u)" -ne 0 ]; then sudo_cmd="sudo"; fi
apt_install() {
  $sudo_cmd apt-get update -qq &&
    DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "$@"
}

mapfile -t missing < <(missing_of "${packages[@]}")
if ((${#missing[@]})); then
  echo "bootstrap: installing ${missing[*]}"
  apt_install "${missing[@]}"
fi
mapfile -t missing_demo < <(missing_of "${demo_packages[@]}")
if ((${#missing_demo[@]})); then
  echo "bootstrap: installing ${missing_demo[*]} (the tour's demo corpus)"
  apt_install "${missing_demo[@]}" ||
    echo "bootstrap: warning: could not install ${missing_demo[*]}; tools/make_corpus.sh needs them" >&2
fi

cd "$here"
if [ ! -f "$build_dir/build.ninja" ]; then
  meson setup "$build_dir" --buildtype=release
fi
ninja -C "$build_dir" ${targets[@]+"${targets[@]}"}
