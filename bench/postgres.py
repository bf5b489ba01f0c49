#!/usr/bin/env python3
"""The PostgreSQL fleet store (notifications.store.postgres), two figures against references measured in the same
rounds on the same server:

1. Ingest: new purchases posted to the webhook by `--posters` keep-alive connections as fast as it answers
   (bench/peers/webhook_post.c, a few µs of CPU a notification; the
   gateway with its default loops on every core, as bench/webhook.py --state runs it); the
   rate is notifications per second from the first POST until the analysts' `subscription_state` view holds every
   one. The server runs with `fsync=on` and `synchronous_commit=on`, so each 200 is a durable commit. Reference:
   pgbench's TPC-B-like write transaction (`pgbench -N`, one commit each) with as many clients as posters.
2. Reads: GetSubscription on one gateway loop (pinned to core 0) for random stored ids, driven by
   bench/peers/grpc_bodies.c (pinned to core 1, CLIENTS × STREAMS calls in flight), against `pgbench -S`
   (select-only, pinned to core 1) with as many connections as the gateway's loop has
   (`notifications.store.postgresPoolSize`). The PostgreSQL server is not pinned, in both. Each round measures
   two reading gateways one after the other: one whose record cache (`subscriptions.recordCacheSize`) holds
   every id read, so each call asks PostgreSQL for the record's stamp only (batched with the other calls of the
   loop's pass) and sends the answer it kept; and one with the default cache, a third of the ids or less, so most
   calls read the record and its current transaction and encode a new answer.

    .venv/bin/python bench/postgres.py [--rounds 3] [--count 4000] [--posters 32] [--seconds 6] [--json OUT]
    .venv/bin/python bench/postgres.py --rounds 1 --profile reads|ingest    # where the time goes (perf)
    .venv/bin/python bench/postgres.py --record-cache 0   # the first reading gateway's recordCacheSize

`--profile` records the gateway with `perf` during round 1 of that phase and prints the heaviest shared objects
and symbols; with PERF_ALL=1 it records every process (PostgreSQL too) and splits by command first; PERF_DATA=FILE
keeps the recording for `perf report -i FILE`.

Prints a Markdown table (median of the rounds, min–max); under `make bench` (BENCH_OUT set) also the `postgres`
fragment for bench/README.md's table."""
import argparse
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(ROOT, "Tests", "interop"))
sys.path.insert(0, os.path.join(ROOT, "bench"))
os.environ.setdefault("GATEWAY_BIN", os.path.join(ROOT, ".build", "release", "appstore-gateway"))

import conftest  # noqa: E402,F401  (generates the stubs)
import yaml  # noqa: E402
from conftest import Gateway  # noqa: E402
from test_webhook import Postgres, Simulator  # noqa: E402
from webhook import FastPoster, percentile, purchases, spread, stat  # noqa: E402

POOL = 4


class DurablePostgres(Postgres):
    """The tests' throw-away server, but durable: fsync and full-page writes on (the tests turn them off)."""

    def start(self):
        options = (f"-p {self.port} -k {self.directory} -c listen_addresses=127.0.0.1 -c fsync=on "
                   "-c synchronous_commit=on -c full_page_writes=on -c max_connections=100 -c shared_buffers=128MB")
        self._run("pg_ctl", "-D", self.data, "-l", os.path.join(self.directory, "log"), "-w", "-t", "60",
                  "-o", options, "start")

    def program(self, name):
        return os.path.join(self.bin, name)


def start_gateway(sim, server, database_url, pinned, record_cache=None):
    config = json.loads(json.dumps(sim.config))
    config["apps"] = config["apps"][:1]
    if record_cache is not None:
        config["subscriptions"] = {"recordCacheSize": record_cache}
    config.setdefault("notifications", {}).update({
        "webhook": {"listen": "127.0.0.1:0", "path": "/apple/notifications"},
        "store": {"postgres": database_url, "postgresPoolSize": POOL, "reconcileInterval": "0"}})
    path = os.path.join(tempfile.mkdtemp(prefix="bench-pg-cfg-"), "gateway.yaml")
    yaml.safe_dump(config, open(path, "w"))
    # Reads: one loop pinned to core 0, like with like against pgbench on core 1. Ingestion: the gateway on both
    # cores with its default loops, as bench/webhook.py --state runs it (the posters and PostgreSQL beside it).
    launcher = ("taskset", "-c", "0") if pinned and os.cpu_count() >= 2 else ()
    gateway = Gateway(["--config", path] + (["--threads", "1"] if pinned else []), launcher=launcher)
    line = gateway.proc.stdout.readline()
    match = re.search(r"webhook on (http://\S+)", line or "")
    if not match:
        gateway.stop()
        raise RuntimeError(f"no webhook line: {line!r}\n{gateway.read_log()}")
    gateway.webhook = match.group(1)
    return gateway


def psql(server, database, sql):
    done = subprocess.run([server.program("psql"), "-h", "127.0.0.1", "-p", str(server.port), "-U", server.user,
                           "-d", database, "-At", "-v", "ON_ERROR_STOP=1", "-c", sql],
                          capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise RuntimeError(done.stderr)
    return done.stdout.strip()


def ingest(gateway, server, database, items, posters, before, poster):
    """Posts `items` by `posters` connections (`poster`: a FastPoster); seconds until every 200, and until the state
    holds them all."""
    started, finished = poster.post(gateway.webhook, [body for _, body in items], posters)
    want = before + len(items)
    deadline = time.time() + 300
    while int(psql(server, database, "SELECT count(*) FROM subscription_state")) < want:
        assert time.time() < deadline, "the state never held every purchase"
        time.sleep(0.05)
    return finished - started, time.perf_counter() - started


class Profile:
    """`perf record` of one gateway while a phase runs (--profile): the heaviest symbols by self time, printed."""

    def __init__(self, gateway, wanted):
        self.proc = None
        if wanted and shutil.which("perf"):
            self.data = os.environ.get("PERF_DATA") or tempfile.mktemp(prefix="bench-pg-perf-")
            scope = ["-a"] if os.environ.get("PERF_ALL") else ["-p", str(gateway.proc.pid)]
            self.proc = subprocess.Popen(["perf", "record", "-q", "-F", "1999", "-g"] + scope + ["-o", self.data],
                                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(0.5)

    def report(self, top=45):
        if not self.proc:
            return
        self.proc.send_signal(2)
        self.proc.wait()
        for sort in ("comm", "dso", "symbol"):
            done = subprocess.run(["perf", "report", "-i", self.data, "--no-children", "--sort", sort, "--stdio"],
                                  capture_output=True, text=True)
            lines = [line[:160] for line in done.stdout.splitlines() if re.match(r"^ +[0-9]", line)]
            print(f"--- self time by {sort}", file=sys.stderr)
            print("\n".join(lines[:top]), file=sys.stderr)
        if not os.environ.get("PERF_DATA"):
            os.unlink(self.data)
        self.proc = None


def pgbench(server, database, *arguments):
    pin = ["taskset", "-c", "1"] if os.cpu_count() >= 2 else []
    done = subprocess.run(pin + [server.program("pgbench"), "-h", "127.0.0.1", "-p", str(server.port), "-U",
                                 server.user, *arguments, database], capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise RuntimeError(done.stdout + done.stderr)
    match = re.search(r"tps = ([\d.]+)", done.stdout)
    return float(match.group(1)) if match else None


def bodies(ids, path):
    with open(path, "wb") as f:
        for ident in ids:
            raw = ident.encode()
            message = b"\x12" + bytes([len(raw)]) + raw + b"\x18\x02"
            f.write(b"\0" + struct.pack(">I", len(message)) + message)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--count", type=int, default=4000)
    parser.add_argument("--posters", type=int, default=32,
                        help="deliveries in flight at once, as bench/webhook.py --state posts them (32)")
    parser.add_argument("--seconds", type=int, default=6)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--streams", type=int, default=32)
    parser.add_argument("--json")
    parser.add_argument("--record-cache", type=int,
                        help="subscriptions.recordCacheSize of the reading gateway (default: every id the rounds read "
                             "held); a second gateway with the default size is measured in the same rounds")
    parser.add_argument("--profile", choices=("ingest", "reads"),
                        help="perf-record the gateway during round 1 of that phase and print its heaviest symbols")
    args = parser.parse_args()
    for program in ("h2load", "taskset", "cc"):
        if shutil.which(program) is None:
            sys.exit(f"{program} is missing: scripts/install-deps.sh")
    work = tempfile.mkdtemp(prefix="bench-pg-")
    driver = os.path.join(work, "grpc_bodies")
    subprocess.run(["cc", "-O2", "-o", driver, os.path.join(ROOT, "bench", "peers", "grpc_bodies.c"), "-lnghttp2"],
                   check=True)
    sim = Simulator()
    poster = FastPoster()
    server = DurablePostgres()
    figures = {key: [] for key in ("ingest", "webhook_rate", "pgbench_writes", "get_subscription",
                                   "get_subscription_default_cache", "pgbench_select")}
    try:
        psql(server, "postgres", "CREATE DATABASE gateway")
        psql(server, "postgres", "CREATE DATABASE reference")
        pgbench(server, "reference", "-i", "-q", "-s", "10")
        url = f"postgresql://{server.user}@127.0.0.1:{server.port}/gateway"
        pool = purchases(sim, args.count * args.rounds + 50)
        writer = start_gateway(sim, server, url, pinned=False)
        try:
            ingest(writer, server, "gateway", pool[:50], args.posters, 0, poster)   # chains verified, caches warm
            stored = 50
            for round_number in range(args.rounds):
                items = pool[50 + round_number * args.count:50 + (round_number + 1) * args.count]
                profile = Profile(writer, args.profile == "ingest" and round_number == 0)
                acked, in_state = ingest(writer, server, "gateway", items, args.posters, stored, poster)
                profile.report()
                stored += len(items)
                figures["ingest"].append(len(items) / in_state)
                figures["webhook_rate"].append(len(items) / acked)
                figures["pgbench_writes"].append(pgbench(
                    server, "reference", "-N", "-c", str(args.posters), "-j", "1", "-T", str(args.seconds)))
                print(f"round {round_number + 1}: ingest {figures['ingest'][-1]:,.0f}/s (200s at "
                      f"{figures['webhook_rate'][-1]:,.0f}/s; pgbench -N {figures['pgbench_writes'][-1]:,.0f} tps)",
                      file=sys.stderr)
        finally:
            writer.stop()
        ids = [original for original, _ in pool]
        held = args.record_cache if args.record_cache is not None else len(ids)
        import random

        frames = os.path.join(work, "bodies.bin")

        def read(reader):
            """GetSubscription calls/s of `reader` over every stored id (`frames`: shuffled for the round)."""
            pin = ["taskset", "-c", "1"] if os.cpu_count() >= 2 else []
            done = subprocess.run(pin + [driver, "127.0.0.1", str(reader.port),
                                         "/appstore.gateway.v1.SubscriptionState/GetSubscription", frames,
                                         str(args.clients), str(args.streams), "2", str(args.seconds)],
                                  capture_output=True, text=True, timeout=120)
            if done.returncode != 0:
                raise RuntimeError(done.stdout + done.stderr)
            return float(re.search(r"rate ([\d.]+)", done.stdout).group(1))

        # Two reading gateways, one at a time, in every round: one holding every id it reads
        # (`subscriptions.recordCacheSize` = the ids), one with the default size (a third of them or less).
        readers = {"get_subscription": held, "get_subscription_default_cache": None}
        for round_number in range(args.rounds):
            shuffled = list(ids)
            random.Random(round_number).shuffle(shuffled)
            bodies(shuffled, frames)
            for figure, cache in readers.items():
                reader = start_gateway(sim, server, url, pinned=True, record_cache=cache)
                profile = None
                try:
                    profile = Profile(reader, args.profile == "reads" and round_number == 0
                                      and figure == "get_subscription")
                    figures[figure].append(read(reader))
                finally:
                    if profile:
                        profile.report()
                    reader.stop()
            figures["pgbench_select"].append(pgbench(
                server, "reference", "-S", "-c", str(POOL), "-j", "1", "-T", str(args.seconds)))
            print(f"round {round_number + 1}: GetSubscription {figures['get_subscription'][-1]:,.0f}/s with "
                  f"{held:,} records held, {figures['get_subscription_default_cache'][-1]:,.0f}/s with the default "
                  f"cache, vs pgbench -S {figures['pgbench_select'][-1]:,.0f} tps ({stored:,} stored)", file=sys.stderr)
    finally:
        server.close()
        sim.stop()
        shutil.rmtree(work, ignore_errors=True)
    reads = [g / p for g, p in zip(figures["get_subscription"], figures["pgbench_select"])]
    reads_default = [g / p for g, p in zip(figures["get_subscription_default_cache"], figures["pgbench_select"])]
    result = {key: stat(values) for key, values in figures.items()}
    result.update({"reads_vs_pgbench": stat(reads), "reads_default_cache_vs_pgbench": stat(reads_default),
                   "count": args.count, "posters": args.posters, "pool": POOL, "record_cache": held,
                   "stored": stored})
    print(f"binary: {os.environ['GATEWAY_BIN']}; {args.rounds} rounds; fsync on, synchronous_commit on; ingestion: "
          f"gateway, posters and PostgreSQL on every core; reads: gateway threads 1 on core 0, drivers on core 1, "
          f"PostgreSQL unpinned; {os.cpu_count()} cores")
    print()
    print("| figure | gateway | reference | ratio |")
    print("| --- | --- | --- | --- |")
    print(f"| notifications/s from the webhook into the state on PostgreSQL (every 200 committed) | "
          f"{spread(figures['ingest'])} | {spread(figures['pgbench_writes'])} (pgbench -N tps, {args.posters} "
          f"clients) | — |")
    print(f"| GetSubscription req/s, one loop, pool {POOL}, {held:,} records held ({stored:,} stored) | "
          f"{spread(figures['get_subscription'])} | {spread(figures['pgbench_select'])} (pgbench -S tps, {POOL} "
          f"connections) | {spread(reads, '{:.2f}')} |")
    print(f"| the same with the default record cache (2,048) | {spread(figures['get_subscription_default_cache'])} "
          f"| the same | {spread(reads_default, '{:.2f}')} |")
    out = args.json or (os.path.join(os.environ["BENCH_OUT"], "postgres.json") if os.environ.get("BENCH_OUT") else None)
    if out:
        json.dump(result, open(out, "w"), indent=1)


if __name__ == "__main__":
    main()
