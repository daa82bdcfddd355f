#!/usr/bin/python3
"""Plots of `trc-lab impact --json` files (docs/findings/F1-impact.md).

Usage: F1-impact-plot.py OUTDIR FILE.json...

Each FILE is one kernel on one path; its name is PATH-LABEL.json (as F1-impact.sh writes
them); further files PATH-LABEL.N.json of the same kernel and path are pooled with it. Writes
into OUTDIR:
  F1-impact-summary.png      per path: goodput, retransmission rate, mean cwnd and undo events
                             per run (dots) and their median (bar), one bar per kernel;
  F1-impact-undos.png        per path and kernel: undo events by counter per run (mean), and
                             (where the kernel could be captured) how many followed a real loss;
  F1-impact-cwnd-PATH.png    cwnd over time of each kernel's median-goodput run, with its undo
                             events marked (red: after a real loss, grey: spurious only,
                             black: not attributed).
Needs Debian's python3-matplotlib.
"""
import json
import os
import statistics
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

PATH_TITLE = {
    "reorder": "netem reorder 1 %",
    "jitter": "jitter 10 ms pareto",
}


def load(files):
    """Groups the files by (path, label); files of the same kernel and path (PATH-LABEL.json,
    PATH-LABEL.2.json, ...) with the same parameters are pooled into one set of runs."""
    data = {}
    for f in sorted(files):
        base = os.path.basename(f)[: -len(".json")]
        path, _, _ = base.partition("-")
        with open(f) as fh:
            d = json.load(fh)
        same = [x for x in data.get(path, []) if x["label"] == d["label"]]
        if same:
            if same[0]["params"] != d["params"]:
                raise SystemExit(f"{f}: other parameters than the earlier {path}-{d['label']} runs")
            same[0]["runs"].extend(d["runs"])
        else:
            data.setdefault(path, []).append(d)
    for path in data:
        order = {"debian-7.2": 0, "base": 1, "f1fix": 2}
        data[path].sort(key=lambda d: (order.get(d["label"], 9), d["label"]))
    return data


def path_title(path, d):
    p = d["params"]
    s = f"RTT {p['rtt_ms']:g} ms, loss {p['loss_pct']:g} %"
    if p.get("reorder_pct"):
        s += f", reorder {p['reorder_pct']:g} %"
    if p.get("jitter_ms"):
        s += f", jitter {p['jitter_ms']:g} ms {p.get('jitter_dist') or 'uniform'}"
    return f"{path}: {s}; {p['duration_s']:g} s per run"


def summary(data, out):
    metrics = [
        ("goodput (Mbit/s)", lambda s: s["goodput_mbit"]),
        ("retransmitted / sent (%)", lambda s: 100 * s["retrans_rate"]),
        ("mean cwnd (segments)", lambda s: s["mean_cwnd"]),
        ("undo events per run", lambda s: s["undo_events"]),
    ]
    paths = sorted(data)
    fig, axes = plt.subplots(len(paths), len(metrics), figsize=(4 * len(metrics), 3.3 * len(paths)), squeeze=False)
    for i, path in enumerate(paths):
        kernels = data[path]
        for j, (name, f) in enumerate(metrics):
            ax = axes[i][j]
            for x, d in enumerate(kernels):
                vals = [f(r["summary"]) for r in d["runs"]]
                if not vals:
                    continue
                ax.bar(x, statistics.median(vals), color="#90caf9", edgecolor="#1565c0")
                ax.scatter([x] * len(vals), vals, color="#0d47a1", s=12, zorder=3)
            ax.set_xticks(range(len(kernels)))
            ax.set_xticklabels([f"{d['label']}\n{len(d['runs'])} runs" for d in kernels], fontsize=8)
            ax.set_title(name, fontsize=10)
            if j == 0:
                ax.set_ylabel(path_title(path, kernels[0]).split(";")[0], fontsize=8)
    fig.suptitle("F1 impact: bars are medians, dots single runs (qemu TCG icount, virtual time)", fontsize=11)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "F1-impact-summary.png"), dpi=90)
    plt.close(fig)


def undos(data, out):
    counters = ["FullUndo", "PartialUndo", "LossUndo", "DSACKUndo", "SpuriousRTOs"]
    paths = sorted(data)
    fig, axes = plt.subplots(1, len(paths), figsize=(6.5 * len(paths), 4), squeeze=False)
    for i, path in enumerate(paths):
        ax = axes[0][i]
        kernels = data[path]
        w = 0.8 / (len(counters) + 2)
        for x, d in enumerate(kernels):
            runs = d["runs"]
            for c, name in enumerate(counters):
                tot = sum(r["summary"]["counters"].get("TcpExtTCP" + name, 0) for r in runs) / max(1, len(runs))
                ax.bar(x + c * w, tot, w, label=name if x == 0 else None, color=plt.cm.tab10([0, 1, 2, 4, 5][c]))
            if all(r["summary"].get("captured", True) for r in runs):
                real = sum(r["summary"]["undos_after_real_loss"] for r in runs)
                ts = sum(r["summary"].get("undos_after_real_loss_ts", 0) for r in runs)
                ax.bar(x + len(counters) * w, real / len(runs), w, color="#d32f2f", label="after a real loss" if x == 0 else None)
                ax.bar(x + (len(counters) + 1) * w, ts / len(runs), w, color="#7f0000", label="... with an old TS echo (F1)" if x == 0 else None)
                ax.text(x + (len(counters) + 0.5) * w, real / len(runs), f"{real} / {ts}\nin all", ha="center", va="bottom", fontsize=7)
            else:
                ax.text(x + len(counters) * w, 0, "no capture", rotation=90, ha="center", va="bottom", fontsize=7)
        ax.set_xticks([x + 0.4 - w / 2 for x in range(len(kernels))])
        ax.set_xticklabels([f"{d['label']} ({len(d['runs'])} runs)" for d in kernels])
        ax.set_title(path_title(path, kernels[0]), fontsize=9)
        ax.set_ylabel("events per run (mean)")
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "F1-impact-undos.png"), dpi=90)
    plt.close(fig)


def cwnd(data, out):
    colour = {"after-real-loss": "#d32f2f", "spurious": "#9e9e9e", "no-retransmission": "#ff9800", "not-captured": "black"}
    for path, kernels in data.items():
        fig, axes = plt.subplots(len(kernels), 1, figsize=(11, 2.4 * len(kernels)), squeeze=False, sharex=True)
        for i, d in enumerate(kernels):
            ax = axes[i][0]
            runs = sorted(d["runs"], key=lambda r: r["summary"]["goodput_mbit"])
            if not runs:
                continue
            r = runs[len(runs) // 2]
            t = [s["t_ms"] / 1000 for s in r["samples"]]
            ax.plot(t, [s["cwnd"] for s in r["samples"]], lw=0.7, color="#1565c0", label="cwnd")
            ax.plot(t, [min(s["ssthresh"], 200) for s in r["samples"]], lw=0.5, color="#66bb6a", label="ssthresh (capped at 200)")
            for e in r["events"]:
                ax.scatter([e["t_ms"] / 1000], [e["cwnd_after"]], color=colour.get(e["verdict"], "black"), s=18, zorder=3)
            s = r["summary"]
            ax.set_title(f"{d['label']}: run {r['index']} (median goodput {s['goodput_mbit']:.2f} Mbit/s), {s['undo_events']} undo events, {s['undos_after_real_loss'] if s.get('captured', True) else 'n/a'} after a real loss", fontsize=9)
            ax.set_ylabel("segments")
            ax.set_ylim(0, max(40, max(x["cwnd"] for x in r["samples"]) + 5))
            if i == 0:
                ax.legend(fontsize=7, loc="upper right")
        axes[-1][0].set_xlabel("guest seconds")
        fig.suptitle(path_title(path, kernels[0]) + "  (dots: undo events; red after a real loss, grey spurious, black not attributed)", fontsize=9)
        fig.tight_layout()
        fig.savefig(os.path.join(out, f"F1-impact-cwnd-{path}.png"), dpi=90)
        plt.close(fig)


def main():
    if len(sys.argv) < 3:
        sys.stderr.write(__doc__)
        return 2
    out = sys.argv[1]
    data = load(sys.argv[2:])
    os.makedirs(out, exist_ok=True)
    summary(data, out)
    undos(data, out)
    cwnd(data, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
