"""Merges the result fragments of one bench/run-all.sh run (FRAGMENT_DIR/<script>.json, written by `emit` in
bench/lib.sh) with the machine's description into OUT (bench/results/<date>.json).

  python3 bench/collect.py FRAGMENT_DIR OUT QUICK(0|1)
"""
import glob
import json
import os
import platform
import subprocess
import sys

fragments, out, quick = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
parts = {os.path.basename(p)[:-5]: json.load(open(p)) for p in sorted(glob.glob(os.path.join(fragments, "*.json")))}
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
machine = {"cores": os.cpu_count(), "cpu": cpu, "kernel": platform.release(),
           "memory_gib": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30),
           "load_after": open("/proc/loadavg").read().split()[:3]}
json.dump({"date": os.path.basename(out)[:-5], "commit": commit, "quick": quick, "machine": machine,
           "results": parts}, open(out, "w"), indent=1)
