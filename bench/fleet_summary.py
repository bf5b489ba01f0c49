#!/usr/bin/env python3
"""Medians and spreads of bench/fleet.sh's lines: per shape the gateway's (and BEFORE's) req/s ÷ nghttpd's; per loop
count the same and each side's scaling from the fewest loops; VerifyJWS/s ÷ `openssl speed -multi n` verify/s per
loop count; GetHistory's added p50 per placement."""
import re
import statistics
import sys
from collections import defaultdict

runs = defaultdict(list)
for line in open(sys.argv[1]) if len(sys.argv) > 1 else sys.stdin:
    match = re.match(r"(shape|loops|verify|history)=(\S+) round=(\d+) (\w+) (-?[\d.]+)", line)
    if match:
        runs[(match[1], match[2], match[4])].append(float(match[5]))


def span(values, digits=0):
    return f"{statistics.median(values):,.{digits}f} ({min(values):,.{digits}f}–{max(values):,.{digits}f})"


def ratio(a, b):
    pairs = [x / y for x, y in zip(a, b) if y]
    return f"{statistics.median(pairs):.2f} ({min(pairs):.2f}–{max(pairs):.2f})" if pairs else "-"


def keys(kind):
    found = {key for (k, key, _) in runs if k == kind}
    return sorted(found, key=lambda key: [int(part) for part in key.split("x")] if key[0].isdigit() else [0])


if keys("shape"):
    print("| shape (conns×streams), one loop | gateway req/s | nghttpd req/s | gateway ÷ nghttpd | before ÷ nghttpd |")
    print("| --- | --- | --- | --- | --- |")
    for key in keys("shape"):
        gateway, ng = runs[("shape", key, "gateway")], runs[("shape", key, "nghttpd")]
        before = runs.get(("shape", key, "before"))
        print(f"| {key} | {span(gateway)} | {span(ng)} | {ratio(gateway, ng)} | {ratio(before, ng) if before else '-'} |")

if keys("loops"):
    first = keys("loops")[0]
    print("\n| loops | gateway req/s | nghttpd req/s | gateway ÷ nghttpd | before ÷ nghttpd | gateway scaling |"
          " nghttpd scaling | before scaling | gateway's scaling ÷ nghttpd's |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    base = {who: statistics.median(runs[("loops", first, who)]) for who in ("gateway", "nghttpd", "before")
            if runs.get(("loops", first, who))}
    for key in keys("loops"):
        g, r = runs[("loops", key, "gateway")], runs[("loops", key, "nghttpd")]
        b = runs.get(("loops", key, "before"))
        scale = {who: statistics.median(runs[("loops", key, who)]) / base[who] for who in base}
        before_scale = f"{scale['before']:.2f}×" if "before" in scale else "-"
        print(f"| {key} | {span(g)} | {span(r)} | {ratio(g, r)} | {ratio(b, r) if b else '-'} | "
              f"{scale['gateway']:.2f}× | {scale['nghttpd']:.2f}× | {before_scale} | "
              f"{scale['gateway'] / scale['nghttpd']:.2f} |")

if keys("verify"):
    print("\n| loops | VerifyJWS/s (cache off) | openssl speed -multi n verify/s | gateway ÷ OpenSSL |")
    print("| --- | --- | --- | --- |")
    for key in keys("verify"):
        g, o = runs[("verify", key, "gateway")], runs[("verify", key, "openssl")]
        print(f"| {key} | {span(g)} | {span(o)} | {ratio(g, o)} |")

if keys("history"):
    print("\n| GetHistory placement | added p50 µs | through the gateway p50 µs | straight to the simulator p50 µs |")
    print("| --- | --- | --- | --- |")
    for key in ("pinned", "two", "free"):
        if runs.get(("history", key, "added")):
            print(f"| {key} | {span(runs[('history', key, 'added')])} | {span(runs[('history', key, 'gateway')])} | "
                  f"{span(runs[('history', key, 'direct')])} |")
