#!/usr/bin/env bash
# tools/ptsim.sh — set up on first use (tools/bootstrap.sh: packages, configure, build), then run ptsim.
# Build progress goes to stderr so `tools/ptsim.sh predict --format json` stays clean JSON on stdout.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$here/tools/bootstrap.sh" build tools/ptsim >&2  # the binary only: tests build on `meson test`
exec "$here/build/tools/ptsim" "$@"
