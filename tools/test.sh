#!/usr/bin/env bash
# tools/test.sh — set up (tools/bootstrap.sh) and run the `cpu` test suite, then the `mpi` suite when MPI
# was found (it runs `mpirun -np 2`), then the `ui` suite (the what-if page in headless Chromium; skipped
# without chromium or cpp-httplib). Extra arguments go to `meson test` (e.g. a test name).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$here/tools/bootstrap.sh" build
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
meson test -C "$here/build" --print-errorlogs --suite cpu "$@"
if meson test -C "$here/build" --list --suite mpi 2>/dev/null | grep -qv -e '^ninja' -e 'No suitable tests'; then
  meson test -C "$here/build" --print-errorlogs --suite mpi "$@"
fi
if [ $# -eq 0 ]; then
  meson test -C "$here/build" --print-errorlogs --suite ui
fi
