#!/usr/bin/env python3
"""Medians and spreads of bench/fleet.sh's lines: per shape the gateway's (and BEFORE's) req/s ÷ nghttpd's, per
loop count the same and each side's scaling from one loop."""
import re
import statistics
import sys
from collections import defaultdict

runs = defaultdict(list)
for line in open(sys.argv[1]) if len(sys.argv) > 1 else sys.stdin:
    match = re.match(r"(shape|loops)=(\S+) round=(\d+) (\w+) ([\d.]+)", line)
    if match:
        runs[(match[1], match[2], match[4])].append(float(match[5]))


def span(values):
    return f"{statistics.median(values):,.0f} ({min(values):,.0f}–{max(values):,.0f})"


def ratio(a, b):
    pairs = [x / y for x, y in zip(a, b) if y]
    return f"{statistics.median(pairs):.2f} ({min(pairs):.2f}–{max(pairs):.2f})" if pairs else "-"


print("| shape (conns×streams), one loop | gateway req/s | nghttpd req/s | gateway ÷ nghttpd | before ÷ nghttpd |")
print("| --- | --- | --- | --- | --- |")
for (kind, key, who), values in sorted(runs.items()):
    if kind != "shape" or who != "gateway":
        continue
    ng = runs[(kind, key, "nghttpd")]
    before = runs.get((kind, key, "before"))
    print(f"| {key} | {span(values)} | {span(ng)} | {ratio(values, ng)} | {ratio(before, ng) if before else '-'} |")
loops = sorted({int(k) for (kind, k, _) in runs if kind == "loops"})
if loops:
    print("\n| loops | gateway req/s | nghttpd req/s | gateway ÷ nghttpd | gateway scaling | nghttpd scaling |")
    print("| --- | --- | --- | --- | --- | --- |")
    g1 = statistics.median(runs[("loops", str(loops[0]), "gateway")])
    n1 = statistics.median(runs[("loops", str(loops[0]), "nghttpd")])
    for n in loops:
        g = runs[("loops", str(n), "gateway")]
        r = runs[("loops", str(n), "nghttpd")]
        print(f"| {n} | {span(g)} | {span(r)} | {ratio(g, r)} | {statistics.median(g) / g1:.2f}× | "
              f"{statistics.median(r) / n1:.2f}× |")
