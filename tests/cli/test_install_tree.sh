#!/usr/bin/env bash
# tests/cli/test_install_tree.sh BUILD_DIR — `meson install` ships every file the shipped scenarios read:
# installs into a temporary DESTDIR, then predicts each shipped scenario with the installed binary reading
# only the installed data (PTSIM_ROOT = <destdir><prefix>/share/ptsim). Four scenarios could not find their
# models when only seven model files were listed for install.
set -euo pipefail
build="$1"
dest="$(mktemp -d)"
trap 'rm -rf "$dest"' EXIT
meson install -C "$build" --destdir "$dest" --no-rebuild --quiet > /dev/null
data="$(find "$dest" -type d -path '*/share/ptsim' | head -n 1)"
bin="$(find "$dest" -type f -path '*/bin/ptsim' | head -n 1)"
[ -n "$data" ] && [ -n "$bin" ] || { echo "FAIL: no share/ptsim or bin/ptsim under the install tree" >&2; exit 1; }
count=0
for scenario in "$data"/reports/scenarios/*.json; do
  name="$(basename "$scenario" .json)"
  if ! PTSIM_ROOT="$data" "$bin" validate --scenario "$name" > "$dest/out.txt" 2>&1; then
    echo "FAIL: ptsim validate --scenario $name from the install tree:" >&2
    cat "$dest/out.txt" >&2
    exit 1
  fi
  count=$((count + 1))
done
[ "$count" -ge 14 ] || { echo "FAIL: only $count scenarios installed (14 shipped)" >&2; exit 1; }
echo "ok: $count installed scenarios validate from the install tree"
