#!/usr/bin/env bash
# tools/python.sh [PYTHON ARGS…] — Debian's python3 with `import ptsim` from this checkout (docs/python.md):
# sets up and builds the module first (tools/bootstrap.sh, only its target), then runs python3 with it on
# PYTHONPATH. After `meson install` plain python3 finds the installed module instead.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
python=/usr/bin/python3
suffix="$("$python" -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')"
"$here/tools/bootstrap.sh" build "python/ptsim$suffix" >&2
PYTHONPATH="$here/build/python${PYTHONPATH:+:$PYTHONPATH}" exec "$python" "$@"
