#!/usr/bin/env bash
# tools/make_corpus.sh — build the demo pretraining corpus from the King James Bible (public domain).
# Source: Debian package `bible-kjv-text` (data) read through the `bible` program of `bible-kjv`
# (tools/bootstrap.sh installs both; `apt-get install --no-install-recommends bible-kjv-text` alone lacks
# the program). Output format, as `ptsim data vocab|prepare` expect:
# one sentence per line (here: one verse per line), a blank line between documents (here: chapters).
# 1,189 chapters, 31,102 verses, about 4.1 MB.
# Usage: tools/make_corpus.sh [OUT]   (default: data/kjv_corpus.txt)
set -euo pipefail
out="${1:-data/kjv_corpus.txt}"
if ! command -v bible >/dev/null 2>&1; then
  echo "make_corpus: the 'bible' program is missing: apt-get install bible-kjv bible-kjv-text (or run tools/bootstrap.sh)" >&2
  exit 2
fi
mkdir -p "$(dirname "$out")"
tmp="$(mktemp)"
trap 'rm -f "$tmp"' EXIT
# -l100000: no line wrapping, so each verse is one line. Output looks like:
#   <blank>
#   Genesis 1
#   <blank>
#     1 In the beginning God created the heaven and the earth.
bible -l100000 "Genesis1:1-Revelation22:21" >"$tmp"
awk '
  /^  *[0-9]+ / { sub(/^  *[0-9]+ +/, ""); sub(/[ \t\r]+$/, ""); if ($0 != "") { print; in_doc = 1 }; next }
  /^[^ ]/       { if (in_doc) { print ""; in_doc = 0 }; next }   # a "Book N" heading starts a new document
' "$tmp" >"$out"
verses=$(grep -c . "$out" || true)
chapters=$(($(grep -c '^$' "$out" || true) + 1))
if [ "$verses" -lt 1000 ]; then
  echo "make_corpus: only $verses verses extracted from 'bible' output; expected about 31102" >&2
  exit 1
fi
echo "make_corpus: wrote $out ($chapters documents, $verses sentences, $(wc -c <"$out") bytes)"
