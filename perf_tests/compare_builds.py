#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Summarizes compare_builds.sh: per benchmark the median time over the rounds of the
`before` and `after` runs and their ratio (after / before: below 1 is faster), as a
Markdown table, then the largest ratio."""
import glob
import json
import os
import statistics
import sys


def times(paths):
    """name -> list of real times (ms) over the JSON files; skipped runs left out."""
    out = {}
    for path in paths:
        with open(path) as f:
            data = json.load(f)
        for b in data["benchmarks"]:
            if b.get("error_occurred"):
                continue
            name = b["name"].split("/iterations")[0]
            scale = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}[b.get("time_unit", "ms")]
            out.setdefault(name, []).append(b["real_time"] * scale)
    return out


def main():
    d = sys.argv[1]
    before = times(sorted(glob.glob(os.path.join(d, "before-*.json"))))
    after = times(sorted(glob.glob(os.path.join(d, "after-*.json"))))
    print("| benchmark | before (ms) | after (ms) | after / before |")
    print("| --- | --- | --- | --- |")
    worst, worst_name = 0.0, ""
    for name in before:
        if name not in after:
            continue
        b, a = statistics.median(before[name]), statistics.median(after[name])
        ratio = a / b
        if ratio > worst:
            worst, worst_name = ratio, name
        print(f"| {name} | {b:.4g} | {a:.4g} | {ratio:.3f} |")
    print(f"\nLargest after / before: {worst:.3f} ({worst_name})")


if __name__ == "__main__":
    main()
