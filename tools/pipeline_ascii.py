#!/usr/bin/env python3
"""tools/pipeline_ascii.py — draws one iteration's pipeline schedule from a `ptsim predict --trace` file as
text, one row per stage (the pictures in docs/parallelism.md, "Schedules").

Each column is 1/WIDTH of the flush (first pass start to last backward end on the compute streams); a
forward pass of micro-batch m prints the digit m % 10, a backward the letter 'a' + m % 26, idle time a space.
The bubble printed is 1 − Σ busy ÷ (stages × flush span), the figure `ptsim predict` reports.
Usage: tools/pipeline_ascii.py TRACE.json [--width 100] [--label NAME]
"""
import argparse
import json
import sys


def passes(trace):
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    rows = {}
    for e in events:
        if e.get("ph") != "X" or e.get("tid") != 0:
            continue
        args = e.get("args", {})
        if args.get("phase") not in ("forward", "backward", "recompute"):
            continue
        rows.setdefault(e["pid"], []).append((e["ts"], e["ts"] + e["dur"], bool(args.get("backward")),
                                              int(args.get("micro_step", 0))))
    return rows


def draw(rows, width):
    start = min(p[0] for r in rows.values() for p in r)
    end = max(p[1] for r in rows.values() for p in r)
    span = end - start
    lines, busy = [], 0.0
    for stage in sorted(rows):
        cells = [" "] * width
        for s, e, backward, micro in rows[stage]:
            busy += e - s
            mark = chr(ord("a") + micro % 26) if backward else str(micro % 10)
            first = int((s - start) / span * width)
            last = max(first, int((e - start) / span * width - 1e-9))
            for c in range(first, min(last, width - 1) + 1):
                cells[c] = mark
        lines.append(f"stage {stage} |{''.join(cells)}|")
    return 1.0 - busy / (len(rows) * span), lines


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace")
    ap.add_argument("--width", type=int, default=100)
    ap.add_argument("--label", default="")
    a = ap.parse_args()
    if a.width < 10 or a.width > 1000:
        print(f"pipeline_ascii: --width must be 10..1000 (got {a.width})", file=sys.stderr)
        return 2
    try:
        with open(a.trace, encoding="utf-8") as f:
            rows = passes(json.load(f))
    except (OSError, ValueError, KeyError, TypeError) as e:
        print(f"pipeline_ascii: {a.trace}: not a readable ptsim trace ({e})", file=sys.stderr)
        return 2
    if not rows:
        print(f"pipeline_ascii: {a.trace} has no forward/backward passes on a compute stream", file=sys.stderr)
        return 2
    bubble, lines = draw(rows, a.width)
    print(f"{a.label + ': ' if a.label else ''}bubble {100 * bubble:.1f}%")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
