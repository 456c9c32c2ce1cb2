#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Charts from kcnn_perf's JSON output (--benchmark_out=f.json --benchmark_out_format=json).

    python3 perf_tests/plot.py f.json [g.json ...] [-o DIR] [--metric gflops|time]

For each JSON file (one machine each), writes PNGs into DIR (default: the JSON's folder),
named after the file's stem:
  <stem>_suite_<suite>.png   per suite: one group of bars per shape and layout, one bar per
                             implementation (baselines first, hatched), GFLOP/s or time
  <stem>_roofline.png        log-log roofline: arithmetic intensity (FLOP per byte, each
                             tensor moved once) against GFLOP/s, every measured kernel a
                             point, ceilings from the measured peaks in the JSON context
  <stem>_vs_baseline.png     every kcnn algorithm's baseline_time / kcnn_time per shape

With --auto-table it writes no PNG and prints, per JSON, a Markdown table of Auto against
the fastest kcnn algorithm on every shape and layout (Auto's pick is read from its label),
and the largest Auto / best ratio.

Reads per benchmark: name (conv2d/<suite>/<shape>/<layout>/<impl>[/...]), run_type,
aggregate_name, real_time, time_unit, label, error_occurred, error_message, and the
counters GFLOP/s, GB/s, vs_baseline. From the context: peak_gflops, peak_gbs, device,
kokkos_execution_space, baselines, kcnn_algorithms, date.
Needs matplotlib (Debian: python3-matplotlib; run with /usr/bin/python3 if another python3
comes first on PATH).
"""
import argparse
import json
import math
import os
import statistics
import sys
from collections import OrderedDict, defaultdict

try:
    import matplotlib
except ImportError:
    sys.exit(f"plot.py: {sys.executable} has no matplotlib: install python3-matplotlib (Debian) and run "
             "it with the python3 that has it, e.g. /usr/bin/python3 perf_tests/plot.py ...")

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402
from matplotlib.ticker import FuncFormatter, LogLocator  # noqa: E402



def kcnn_algos(ctx):
    """kcnn's algorithms as kcnn_perf listed them (its registry, then Auto)."""
    algos = [a for a in ctx.get("kcnn_algorithms", "").split(",") if a]
    if not algos:
        sys.exit("plot.py: the JSON context has no kcnn_algorithms (not a kcnn_perf file?)")
    return algos
TO_MS = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}
MARKERS = ["o", "s", "^", "D", "v", "P", "X", "*", "<", ">"]


def parse_name(name):
    """conv2d/<suite>/<shape>/<layout>/<impl> with Google Benchmark's suffixes dropped."""
    parts = [p for p in name.split("/") if ":" not in p and p not in ("manual_time", "real_time")]
    if len(parts) != 5 or parts[0] != "conv2d":
        return None
    return dict(zip(("op", "suite", "shape", "layout", "impl"), parts))


def load(path):
    """Returns (context, rows); a row per benchmark (the median when repeated)."""
    with open(path) as f:
        data = json.load(f)
    ctx = data.get("context", {})
    groups = OrderedDict()
    for b in data.get("benchmarks", []):
        key = b.get("run_name", b["name"])
        groups.setdefault(key, []).append(b)
    rows = []
    for key, runs in groups.items():
        info = parse_name(key)
        if info is None:
            continue
        medians = [r for r in runs if r.get("run_type") == "aggregate" and r.get("aggregate_name") == "median"]
        its = [r for r in runs if r.get("run_type", "iteration") == "iteration"]
        row = dict(info, label=runs[0].get("label", ""), skipped=None)
        if any(r.get("error_occurred") for r in runs):
            row["skipped"] = next(r.get("error_message", "") for r in runs if r.get("error_occurred"))
            rows.append(row)
            continue
        src = medians[0] if medians else None

        def value(field):
            if src is not None:
                return src.get(field)
            vals = [r[field] for r in its if field in r]
            return statistics.median(vals) if vals else None

        unit = (src or its[0]).get("time_unit", "ns")
        row["ms"] = value("real_time") * TO_MS[unit]
        for field in ("GFLOP/s", "GB/s", "vs_baseline"):
            row[field] = value(field)
        rows.append(row)
    return ctx, rows


def impl_order(ctx, rows):
    """Baselines first (in the context's order), then kcnn's algorithms, Auto last."""
    base = [b for b in ctx.get("baselines", "").split(",") if b]
    algos = kcnn_algos(ctx)
    seen = [r["impl"] for r in rows]
    for impl in seen:  # anything unknown: a baseline
        if impl not in base and impl not in algos:
            base.append(impl)
    algos = [a for a in algos if a != "Auto"] + (["Auto"] if "Auto" in algos else [])
    return [i for i in base if i in seen], [a for a in algos if a in seen]


def colors_for(baselines, algos):
    cmap = plt.get_cmap("tab10")
    colors = {}
    greys = ["#4d4d4d", "#8c8c8c", "#b3b3b3", "#d0d0d0"]
    for i, b in enumerate(baselines):
        colors[b] = greys[i % len(greys)]
    for i, a in enumerate(algos):
        colors[a] = cmap(i % 10)
    return colors


def short(v):
    """3 significant digits, thousands as k: 0.0123, 4.56, 789, 12.3k."""
    return f"{v / 1000:.3g}k" if v >= 1000 else f"{v:.3g}"


def machine(ctx):
    return f"{ctx.get('device', '?')} (Kokkos {ctx.get('kokkos_execution_space', '?')})"


def suite_chart(ctx, suite, rows, baselines, algos, colors, metric, out):
    shapes = list(OrderedDict.fromkeys((r["shape"], r["layout"]) for r in rows))
    impls = baselines + algos
    by = {(r["shape"], r["layout"], r["impl"]): r for r in rows}
    width = 0.8 / max(len(impls), 1)
    fig, ax = plt.subplots(figsize=(max(7.0, 0.32 * len(shapes) * len(impls) + 2.5), 5.2))
    ymax, ymin = 0, float("inf")
    for i, impl in enumerate(impls):
        xs, ys = [], []
        for j, (shape, layout) in enumerate(shapes):
            r = by.get((shape, layout, impl))
            x = j + (i - (len(impls) - 1) / 2) * width
            if r is None:
                continue
            if r["skipped"] is not None or r.get("ms") is None:
                ax.text(x, 0.02, "skipped" if r["skipped"] and r["skipped"].startswith("skipped") else "n/a",
                        transform=ax.get_xaxis_transform(), rotation=90, ha="center", va="bottom",
                        fontsize=7, color=colors[impl])
                continue
            y = r["GFLOP/s"] if metric == "gflops" else r["ms"]
            xs.append(x)
            ys.append(y)
        ymax = max([ymax] + ys)
        ymin = min([ymin] + ys)
        ax.bar(xs, ys, width * 0.95, color=colors[impl], label=impl,
               hatch="//" if impl in baselines else None, edgecolor="white", linewidth=0.5)
        for x, y in zip(xs, ys):
            ax.text(x, y, short(y), ha="center", va="bottom", fontsize=6.5, rotation=90)
    ax.set_xticks(range(len(shapes)))
    ax.set_xticklabels([f"{s}\n{l}" for s, l in shapes], fontsize=8.5)
    ax.set_yscale("log")
    if ymax > 0:
        ax.set_ylim(ymin / 4, ymax * 6)
    # Plain labels at 1, 2, 5 x 10^k: readable when the bars span a decade or two.
    ax.yaxis.set_minor_locator(LogLocator(subs=(2.0, 5.0)))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: short(v)))
    ax.yaxis.set_minor_formatter(FuncFormatter(lambda v, _: short(v)))
    ax.tick_params(axis="y", which="minor", labelsize=7)
    what = "GFLOP/s (higher is better)" if metric == "gflops" else "median time, ms (lower is better)"
    ax.set_ylabel(what)
    ax.set_title(f"conv2d {suite}: {what}\n{machine(ctx)}, {ctx.get('date', '')[:10]}", fontsize=10)
    ax.grid(axis="y", which="major", alpha=0.3)
    ax.set_xlim(-0.6, len(shapes) - 0.4)
    handles = [Patch(facecolor=colors[i], hatch="//" if i in baselines else None, edgecolor="white", label=i)
               for i in impls]
    ax.legend(handles=handles, fontsize=8, ncol=min(len(impls), 6), loc="upper left", framealpha=0.9)
    # The shapes' geometry, from the labels, under the chart.
    geometry = OrderedDict()
    for r in rows:
        geometry.setdefault(r["shape"], " ".join(w for w in r["label"].split()[:6] if w != "d1"))
    fig.text(0.01, 0.005, "   ".join(f"{k}: {v}" for k, v in geometry.items()), fontsize=7, va="bottom",
             wrap=True)
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    fig.savefig(out, dpi=130, bbox_inches="tight")
    plt.close(fig)


def roofline(ctx, rows, baselines, algos, colors, out):
    peak_f = float(ctx.get("peak_gflops", 0) or 0)
    peak_b = float(ctx.get("peak_gbs", 0) or 0)
    pts = [r for r in rows if r["skipped"] is None and r.get("GFLOP/s") and r.get("GB/s")]
    if not pts:
        return False
    suites = list(OrderedDict.fromkeys(r["suite"] for r in pts))
    marker = {s: MARKERS[i % len(MARKERS)] for i, s in enumerate(suites)}
    fig, ax = plt.subplots(figsize=(10, 6))
    ai = [r["GFLOP/s"] / r["GB/s"] for r in pts]
    gf = [r["GFLOP/s"] for r in pts]
    lo, hi = min(ai) / 3, max(ai) * 3
    ylo, yhi = min(gf) / 3, max(gf) * 3
    ax.set_xscale("log")
    ax.set_yscale("log")
    if peak_f > 0 and peak_b > 0:
        ridge = peak_f / peak_b
        lo, hi = min(lo, ridge / 3), max(hi, ridge * 3)
        yhi = max(yhi, peak_f * 3)
        xs = [lo, ridge, hi]
        ax.plot(xs, [min(peak_f, peak_b * x) for x in xs], color="black", lw=1.5)
    ax.set_xlim(lo, hi)
    ax.set_ylim(ylo, yhi)
    if peak_f > 0 and peak_b > 0:
        # The bandwidth label follows the slope of its ceiling on screen.
        x0 = lo * 1.3
        p0, p1 = ax.transData.transform([(x0, peak_b * x0), (x0 * 2, peak_b * x0 * 2)])
        angle = math.degrees(math.atan2(p1[1] - p0[1], p1[0] - p0[0]))
        ax.text(x0, peak_b * x0 * 1.25, f"copy {short(peak_b)} GB/s", fontsize=8, rotation=angle,
                rotation_mode="anchor", ha="left", va="bottom")
        ax.text(hi / 1.1, peak_f * 1.08, f"sgemm {short(peak_f)} GFLOP/s", fontsize=8, ha="right")
    for impl in baselines + algos:
        for s in suites:
            sel = [(r["GFLOP/s"] / r["GB/s"], r["GFLOP/s"]) for r in pts if r["impl"] == impl and r["suite"] == s]
            if not sel:
                continue
            if impl == "Auto":  # a ring around the algorithm Auto ran
                ax.scatter(*zip(*sel), marker=marker[s], s=110, facecolors="none", edgecolors=colors[impl],
                           linewidths=1.5)
            else:
                ax.scatter(*zip(*sel), color=colors[impl], marker=marker[s], s=38,
                           edgecolors="black" if impl in baselines else "none", linewidths=0.6, alpha=0.85)
    ax.set_xlabel("arithmetic intensity, FLOP / byte (x, w, bias, y each moved once)")
    ax.set_ylabel("GFLOP/s")
    ax.set_title(f"conv2d roofline: {machine(ctx)}", fontsize=10)
    ax.grid(which="both", alpha=0.25)
    impl_handles = [Line2D([], [], color=colors[i], marker="o", ls="", label=i,
                           markerfacecolor="none" if i == "Auto" else colors[i])
                    for i in baselines + algos if any(r["impl"] == i for r in pts)]
    suite_handles = [Line2D([], [], color="grey", marker=marker[s], ls="", label=s) for s in suites]
    first = ax.legend(handles=impl_handles, title="implementation", fontsize=8, title_fontsize=8,
                      loc="upper left", bbox_to_anchor=(1.01, 1.0))
    ax.add_artist(first)
    ax.legend(handles=suite_handles, title="suite", fontsize=8, title_fontsize=8, loc="lower left",
              bbox_to_anchor=(1.01, 0.0))
    fig.tight_layout()
    fig.savefig(out, dpi=130, bbox_inches="tight")
    plt.close(fig)
    return True


def vs_baseline_chart(ctx, rows, algos, colors, out):
    pts = [r for r in rows if r["impl"] in algos and r["skipped"] is None and r.get("vs_baseline")]
    if not pts:
        return False
    cases = list(OrderedDict.fromkeys((r["suite"], r["shape"], r["layout"]) for r in pts))
    present = [a for a in algos if any(r["impl"] == a for r in pts)]
    by = {(r["suite"], r["shape"], r["layout"], r["impl"]): r["vs_baseline"] for r in pts}
    h = 0.8 / len(present)
    fig, ax = plt.subplots(figsize=(8, max(3.0, 0.22 * len(cases) * len(present) + 1.5)))
    for i, a in enumerate(present):
        ys, xs = [], []
        for j, c in enumerate(cases):
            v = by.get(c + (a,))
            if v:
                ys.append(j + (i - (len(present) - 1) / 2) * h)
                xs.append(v)
        # Bars grow from 1 (as fast as the baseline) towards the ratio, either way.
        ax.barh(ys, [x - 1 for x in xs], h * 0.95, left=1, color=colors[a], label=a)
        for y, x in zip(ys, xs):
            ax.text(x, y, f" {x:.2g}x ", va="center",
                    ha="left" if x >= 1 else "right", fontsize=6.5)
    ax.axvline(1.0, color="black", lw=1)
    ax.set_xscale("log")
    ratios = [r["vs_baseline"] for r in pts]
    ax.set_xlim(min(min(ratios), 0.5) / 2.5, max(max(ratios), 2) * 2.5)
    ax.set_yticks(range(len(cases)))
    ax.set_yticklabels([f"{s}/{n} {l}" for s, n, l in cases], fontsize=7.5)
    ax.invert_yaxis()
    ax.set_xlabel(f"baseline time / kcnn time (> 1: faster than {ctx.get('vs_baseline_reference', 'the baseline')})")
    ax.set_title(f"kcnn vs baseline: {machine(ctx)}", fontsize=10)
    ax.grid(axis="x", which="both", alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    fig.savefig(out, dpi=130, bbox_inches="tight")
    plt.close(fig)
    return True


def auto_table(ctx, rows):
    """Markdown lines: Auto against the fastest other kcnn algorithm per shape and layout."""
    shapes = OrderedDict()
    algos = kcnn_algos(ctx)
    for r in rows:
        if r.get("skipped") is None and r["impl"] in algos and r["impl"] != "Reference":
            shapes.setdefault((r["suite"], r["shape"], r["layout"]), {})[r["impl"]] = r
    lines = ["| shape | best kcnn algorithm | Auto (its pick) | Auto / best |", "| --- | --- | --- | --- |"]
    worst = 0.0
    for (suite, shape, layout), impls in shapes.items():
        auto = impls.get("Auto")
        others = [r for a, r in impls.items() if a != "Auto"]
        if auto is None or not others:
            continue
        best = min(others, key=lambda r: r["ms"])
        label = auto.get("label", "")
        pick = label.split("auto=", 1)[1].split()[0] if "auto=" in label else "?"
        ratio = auto["ms"] / best["ms"]
        worst = max(worst, ratio)
        lines.append(f"| {suite}/{shape}/{layout} | {best['impl']} {short(best['ms'])} ms | "
                     f"{pick} {short(auto['ms'])} ms | {ratio:.2f} |")
    lines.append(f"\nLargest Auto / best: {worst:.2f}")
    return lines


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("json", nargs="+", help="kcnn_perf JSON output files")
    ap.add_argument("-o", "--out-dir", help="where to write the PNGs (default: next to each JSON)")
    ap.add_argument("--metric", choices=("gflops", "time"), default="gflops", help="bar height in the suite charts")
    ap.add_argument("--auto-table", action="store_true", help="print the Auto-against-best table instead")
    args = ap.parse_args()
    for path in args.json:
        ctx, rows = load(path)
        if args.auto_table:
            print(f"{path}:")
            print("\n".join(auto_table(ctx, rows)))
            continue
        if not rows:
            print(f"{path}: no conv2d benchmarks", file=sys.stderr)
            continue
        out_dir = args.out_dir or os.path.dirname(os.path.abspath(path))
        os.makedirs(out_dir, exist_ok=True)
        stem = os.path.splitext(os.path.basename(path))[0]
        baselines, algos = impl_order(ctx, rows)
        colors = colors_for(baselines, algos)
        written = []
        by_suite = defaultdict(list)
        for r in rows:
            by_suite[r["suite"]].append(r)
        for suite, srows in by_suite.items():
            out = os.path.join(out_dir, f"{stem}_suite_{suite}.png")
            suite_chart(ctx, suite, srows, baselines, algos, colors, args.metric, out)
            written.append(out)
        out = os.path.join(out_dir, f"{stem}_roofline.png")
        if roofline(ctx, rows, baselines, algos, colors, out):
            written.append(out)
        out = os.path.join(out_dir, f"{stem}_vs_baseline.png")
        if vs_baseline_chart(ctx, rows, algos, colors, out):
            written.append(out)
        for w in written:
            print(w)


if __name__ == "__main__":
    main()
