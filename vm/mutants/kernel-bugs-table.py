#!/usr/bin/env python3
"""The table of docs/kernel-bugs.md from the outputs of vm/mutants/kernel-bugs.sh.

kernel-bugs-table.py OUT  ->  markdown on stdout: one row per mutant directory of OUT (in the
order of vm/mutants/), columns (a) (b) (c) (d) as the script's header describes them.
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def text(path):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return None


def events(rep, name):
    for c in (rep.get("patched") or {}).get("cases", []):
        if c.get("name") == name:
            return c.get("events")
    return None


def check_cell(rep, secs, suites=None):
    """Detected by a monitor (new violation), only as a behaviour difference, or not."""
    if rep is None:
        return "not run", None
    if rep.get("not_run"):
        note = f" ({rep['not_run']} scenario(s) not run)"
    else:
        note = ""
    news = []
    for p in rep.get("properties", []):
        if p.get("change") == "new-violation":
            for v in p.get("new_violations", []):
                if suites and not any(v["scenario"].startswith(s) for s in suites):
                    continue
                news.append((p["id"], v["scenario"], v["line"]))
    diffs = [s for s in rep.get("scenarios", [])
             if s.get("difference") is not None and s.get("reproduced") is not False
             and (not suites or any(s["name"].startswith(x) for x in suites))]
    wall = f"{secs} s" if secs else "?"
    if news:
        ids = sorted({n[0] for n in news})
        short = min(news, key=lambda n: (events(rep, n[1]) or 10**6, n[1]))
        ev = events(rep, short[1])
        return (f"**monitor {', '.join(ids)}** (shortest: `{short[1]}`"
                f"{f', {ev} events' if ev else ''}, line {short[2]}; {wall}){note}", ids)
    if diffs:
        short = min(diffs, key=lambda s: (events(rep, s["name"]) or 10**6, s["name"]))
        ev = events(rep, short["name"])
        return (f"behaviour only ({len(diffs)} scenario(s); shortest `{short['name']}`"
                f"{f', {ev} events' if ev else ''}, line {short['difference']['line']}; {wall}){note}", [])
    return f"not detected ({wall}){note}", None


def pd_cell(d):
    conf = text(os.path.join(d, "c-confirmed.txt"))
    rep = load(os.path.join(d, "c.json"))
    if rep is None:
        return "not run"
    secs = text(os.path.join(d, "c.seconds"))
    ran = len(rep.get("scripts", []))
    if conf:
        names = conf.splitlines()
        return f"**{len(names)} of {ran} script(s)**: " + ", ".join(f"`{n}`" for n in names[:4]) + (" ..." if len(names) > 4 else "") + f" ({secs} s)"
    return f"none of {ran} ({secs} s)"


def diff_cell(d):
    rep = load(os.path.join(d, "d.json"))
    if rep is None:
        return "not run"
    steps = rep.get("steps_compared", 0)
    f = rep.get("fields", {})
    agree = sum(a for a, _ in f.values())
    total = sum(n for _, n in f.values())
    pct = f"{100.0 * agree / total:.2f} %" if total else "-"
    return (f"{pct} of {total} field comparisons ({steps} steps); {rep.get('agree', 0)} agree, "
            f"{rep.get('disagree', 0)} disagree, {rep.get('flaky', 0)} flaky, {rep.get('errors', 0)} error")


def main():
    out = sys.argv[1]
    order = sorted(f[:-6] for f in os.listdir(HERE) if f.endswith(".patch"))
    rows = []
    det_a = det_c = run_c = total = 0
    for n in order:
        d = os.path.join(out, n)
        if not os.path.isdir(d):
            continue
        total += 1
        s = lambda *cs: next((t for t in (text(os.path.join(d, f"{c}.seconds")) for c in cs) if t), None)
        ca1, i1 = check_cell(load(os.path.join(d, "a1.json")), s("a1", "a"))
        ca2, i2 = check_cell(load(os.path.join(d, "a2.json")), s("a2"))
        ca3, i3 = check_cell(load(os.path.join(d, "a3.json")), s("a3"))
        ca4, i4 = check_cell(load(os.path.join(d, "a4.json")), s("a4"))
        cb, _ = check_cell(load(os.path.join(d, "b.json")), s("b"))
        cc = pd_cell(d)
        if any(i is not None for i in (i1, i2, i3, i4)):
            det_a += 1
        if cc.startswith("**"):
            det_c += 1
        if cc != "not run":
            run_c += 1
        rows.append(f"| `{n}` | {ca1} | {ca2} | {ca3} | {ca4} | {cb} | {cc} | {diff_cell(d)} |")
    print("| mutant | (a) coverage (default bounds) + random:20,7 | (a) coverage --losses 2 --rtos 2 "
          "| (a) bulk | (a) random:400,7 | (b) regressions "
          "| (c) packetdrill gtests/net/tcp | (d) trc diff, 20 walks |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(r)
    print()
    print(f"(a) detects {det_a} of {total} mutants (a new violation or a behaviour difference); "
          f"(c) {det_c} of the {run_c} mutants it ran on ({total - run_c} not run).")


if __name__ == "__main__":
    main()
