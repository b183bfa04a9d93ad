#!/usr/bin/env bash
# tools/test.sh — set up (tools/bootstrap.sh) and run the `cpu` and `mpi` test suites.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$here/tools/bootstrap.sh" build
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
suites=(--suite cpu)
if meson test -C "$here/build" --list 2>/dev/null | grep -q '^ptsim:mpi'; then suites+=(--suite mpi); fi
meson test -C "$here/build" --print-errorlogs "${suites[@]}" "$@"
