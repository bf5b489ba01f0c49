"""Regenerates the figures table and bench/chart.png in bench/README.md from one bench/results/*.json.

  .venv/bin/python bench/report.py bench/results/<date>.json
"""
import json
import os
import re
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def fmt(stat, digits=0, unit=""):
    """median (min–max)"""
    f = lambda v: f"{v:,.{digits}f}"
    return f"{f(stat['median'])}{unit} ({f(stat['min'])}–{f(stat['max'])})"


def per_round(a, b):
    """median/min/max of the per-round ratios a/b"""
    values = sorted(x / y for x, y in zip(a["runs"], b["runs"]) if y)
    n = len(values)
    median = values[n // 2] if n % 2 else (values[n // 2 - 1] + values[n // 2]) / 2
    return {"median": median, "min": values[0], "max": values[-1]}


def rows(r):
    """(figure, subject, reference, ratio stat, goal text, met?, ratio digits)"""
    out = []
    t = r.get("transport_peers")
    if t:
        out.append(("health Check req/s vs nghttpd (same request, the answer as a static file)", fmt(t["gateway"]), fmt(t["nghttpd"]),
                    t["vs_nghttpd"], "≥ 0.80", t["vs_nghttpd"]["median"] >= 0.8))
        out.append(("health Check req/s vs grpc-swift-2", fmt(t["gateway"]), fmt(t["grpc_swift"]),
                    t["vs_grpc_swift"], "≥ 5×", t["vs_grpc_swift"]["median"] >= 5))
        out.append(("health Check req/s vs grpcio (aio)", fmt(t["gateway"]), fmt(t["grpcio"]),
                    t["vs_grpcio"], "—", None))
    for shape in ("64x32", "256x8"):
        f = r.get(f"transport_{shape}")
        if f:
            c, m = shape.split("x")
            out.append((f"health Check req/s vs nghttpd, {c} connections × {m} streams", fmt(f["gateway"]),
                        fmt(f["nghttpd"]), f["vs_nghttpd"], "≥ 0.80", f["vs_nghttpd"]["median"] >= 0.8))
    v = r.get("verify_peers")
    if v:
        out.append(("VerifyJWS/s per core vs Apple Python SignedDataVerifier", fmt(v["gateway_grpc"]),
                    fmt(v["apple_python"]), v["grpc_vs_apple_python"], "≥ 30×",
                    v["grpc_vs_apple_python"]["median"] >= 30))
        out.append(("VerifyJWS/s per core (gRPC) vs OpenSSL P-256 verify", fmt(v["gateway_grpc"]),
                    fmt(v["openssl_verify"]), v["grpc_vs_openssl"], "≥ 0.75", v["grpc_vs_openssl"]["median"] >= 0.75))
        out.append(("VerifyJWS/s in-process vs OpenSSL P-256 verify", fmt(v["in_process"]),
                    fmt(v["openssl_verify"]), v["in_process_vs_openssl"], "—", None))
    v2 = r.get("verify_loops2")
    if v2:
        out.append(("VerifyJWS/s with 2 loops vs `openssl speed -multi 2`", fmt(v2["gateway_grpc"]),
                    fmt(v2["openssl_verify"]), v2["grpc_vs_openssl"], "≥ 0.75", v2["grpc_vs_openssl"]["median"] >= 0.75))
    a = r.get("access_log")
    if a:
        g, ref = a["gateway_us_per_line"], a["swift_log_us_per_line"]
        out.append(("µs per access-log line (in-process) vs swift-log + JSON handler written inline",
                    fmt(g, 2), fmt(ref, 2), per_round(g, ref), f"≤ 2 µs: {g['median']:,.2f} µs", g["median"] <= 2))
        if "other_line_us" in a:
            o = a["other_line_us"]
            out.append(("µs per other log line on a loop (swift-log, JSON handler, queued) vs written inline",
                        fmt(o, 2), fmt(ref, 2), per_round(o, ref), f"≤ 2 µs: {o['median']:,.2f} µs",
                        o["median"] <= 2))
    h = r.get("history")
    if h:
        out.append(("GetHistory p50 µs vs straight to the simulator", fmt(h["gateway_p50_us"]),
                    fmt(h["direct_p50_us"]), h["p50_ratio"],
                    f"added ≤ 150 µs: {fmt(h['added_p50_us'])} µs", h["added_p50_us"]["median"] <= 150))
        if "added_verify_us" in h:
            beyond = h["added_p50_us"]["median"] - h["added_verify_us"]["median"]
            out.append(("GetHistory added p50 µs: transport / upstream work / verification",
                        f"{fmt(h['added_transport_us'])} / {fmt(h['added_handoffs_us'])} / "
                        f"{fmt(h['added_verify_us'])}", "—", None,
                        f"added − verification ≤ 150 µs: {beyond:,.0f} µs", beyond <= 150))
        out.append(("GetHistory p99 µs", fmt(h["gateway_p99_us"]), fmt(h["direct_p99_us"]),
                    per_round(h["gateway_p99_us"], h["direct_p99_us"]), "—", None))
        out.append(("GetHistory successful answers/s, -c 4 -m 8 identical calls", fmt(h["gateway_ok_per_s"], 1),
                    fmt(h["direct_ok_per_s"], 1), h["throughput_ratio"], "— (coalescing vs Apple's 50/s budget)",
                    None))
        out.append((f"upstream calls for {h['coalesce_calls']} identical concurrent GetHistory",
                    fmt(h["upstream_calls"]), str(h["coalesce_calls"]),
                    {k: h["upstream_calls"][k] / h["coalesce_calls"] for k in ("median", "min", "max")}, "—", None))
        out.append((f"upstream TCP connections, {h['fanout']} concurrent distinct calls ({h['fanout_status']})",
                    str(h["upstream_connections_max"]), "1 host", {"median": h["upstream_connections_max"],
                    "min": h["upstream_connections_max"], "max": h["upstream_connections_max"]}, "1–2",
                    1 <= h["upstream_connections_max"] <= 2))
    p = r.get("history_placement")
    if p:
        pinned, free = p["gateway_pinned"], p["gateway_free"]
        out.append(("GetHistory added p50 µs, gateway free on every core vs pinned to one", fmt(free), fmt(pinned),
                    per_round(free, pinned), "free ≤ pinned", free["median"] <= pinned["median"]))
        fresh = p.get("gateway_fresh")
        if fresh:
            out.append(("GetHistory added p50 µs, every JWS new to the gateway (signature cache off, free) vs the "
                        "same page seen before (free)", fmt(fresh), fmt(free), per_round(fresh, free), "—", None))
    c = r.get("python_caller")
    if c:
        out.append((f"a Python caller's verified page ({min(c['transactions'], 20)} JWS), p50 ms, through the gateway "
                    "vs Apple's Python library (ratio: how many times faster)", fmt(c["gateway_p50_ms"], 2),
                    fmt(c["apple_p50_ms"], 2),
                    c["apple_vs_gateway"], "≥ 20×", c["apple_vs_gateway"]["median"] >= 20))
    s = r.get("scale")
    if s:
        g, n = s["gateway"], s["nghttpd"]
        out.append((f"KiB RSS per idle connection ({s['idle']:,} open)", fmt(g["kib_per_idle_connection"], 1),
                    fmt(n["kib_per_idle_connection"], 1), s["kib_per_conn_vs_nghttpd"], "—", None))
        out.append(("CPU % while they sit idle", fmt(g["idle_cpu_percent"], 2), fmt(n["idle_cpu_percent"], 2),
                    None, "—", None))
        out.append(("CPU µs per call, 1,000 concurrent streams", fmt(g["streams_cpu_us_per_call"], 1),
                    fmt(n["streams_cpu_us_per_call"], 1), s["cpu_per_call_vs_nghttpd"], "—", None))
        out.append(("peak RSS MiB, 1,000 concurrent streams", fmt(g["streams_peak_rss_mib"], 1),
                    fmt(n["streams_peak_rss_mib"], 1), None, "—", None))
        out.append(("req/s threads 2 ÷ threads 1 (h2load takes a core too)",
                    f"{fmt(g['threads1_rps'])} → {fmt(g['threads2_rps'])}",
                    f"{fmt(n['threads1_rps'])} → {fmt(n['threads2_rps'])}", g["thread_scaling"],
                    f"nghttpd ×{n['thread_scaling']['median']:.2f}", None))
    a = r.get("auth")
    if a:
        for key, name in (("jwt", "VerifyJWS req/s with a bearer JWT (verified-token cache hit) vs h2c"),
                          ("tls", "VerifyJWS req/s over TLS vs h2c"),
                          ("tls_jwt", "VerifyJWS req/s over TLS with a bearer JWT vs h2c")):
            out.append((name, fmt(a[key]), fmt(a["plain"]), a[f"{key}_vs_plain"], "—", None))
    st = r.get("subscription_state")
    if st:
        n = f"{st['count']:,}"
        out.append((f"GetSubscription req/s, one loop, {n} subscriptions stored (random ids, SQLite, warm) vs the "
                    "health Check on the same loop", fmt(st["get_subscription"]), fmt(st["health"]), st["vs_health"],
                    "≥ 0.30", st["vs_health"]["median"] >= 0.3))
        if "gs_loop_us" in st:
            gs_cpu = {k: (st["gs_loop_us"][k] + st["gs_other_us"][k]) if k != "runs" else
                      [a + b for a, b in zip(st["gs_loop_us"]["runs"], st["gs_other_us"]["runs"])]
                      for k in ("median", "min", "max", "runs")}
            h_cpu = {k: (st["health_loop_us"][k] + st["health_other_us"][k]) if k != "runs" else
                     [a + b for a, b in zip(st["health_loop_us"]["runs"], st["health_other_us"]["runs"])]
                     for k in ("median", "min", "max", "runs")}
            out.append((f"CPU µs per call, GetSubscription ({n} stored; loop + SQLite's read thread and the rest) "
                        "vs the health Check, same gateway", f"{fmt(gs_cpu, 1)} ({fmt(st['gs_loop_us'], 1)} + "
                        f"{fmt(st['gs_other_us'], 1)})", fmt(h_cpu, 1), per_round(gs_cpu, h_cpu), "—", None))
        if "sqlite_read_us" in st:
            # The ceiling SQLite alone puts on the ratio: a call cannot cost less than its reads, so GetSubscription's
            # rate ÷ the health Check's is at most (µs a health Check) ÷ (µs of the reads).
            health_us = {"runs": [1e6 / x for x in st["health"]["runs"]]}
            for key, what in (("sqlite_read_us", "the record row and its current ledger row, what one GetSubscription "
                               "reads"), ("sqlite_stamp_us", "three small columns of the record row, the least any "
                                          "read of a record reads")):
                out.append((f"SQLite alone ({n} stored, random ids, bench/peers/sqlite_reads.c on the gateway's core), "
                            f"µs a read: {what}; ratio: the most GetSubscription ÷ health Check such reads allow",
                            fmt(st[key], 1), "—", per_round(health_us, st[key]), "—", None))
        out.append((f"GetSubscription req/s with {n} vs {st['small']:,} subscriptions stored",
                    fmt(st["get_subscription"]), fmt(st["get_subscription_small"]),
                    per_round(st["get_subscription"], st["get_subscription_small"]), "—", None))
        within = st["server_within_1ms"]
        out.append(("GetSubscription p99 server time µs, one call at a time (the gateway's grpc_server_handling_seconds, "
                    "interpolated in its 0.5 ms / 1 ms buckets; goal cell: the share of calls within 1 ms)",
                    fmt(st["server_p99_us"]), "—", None,
                    f"≤ 1 ms: {100 * within['median']:.1f}% ({100 * within['min']:.1f}–{100 * within['max']:.1f}%) "
                    "within 1 ms", within["median"] >= 0.99))
        out.append(("GetSubscription p50 / p99 µs at the client, one call at a time (server time, loopback, client)",
                    f"{fmt(st['p50_us'])} / {fmt(st['p99_us'])}", "—", None, "—", None))
        out.append((f"GetSubscription p99 µs in the gateway's histogram under the saturating load above "
                    "(calls in flight waiting their turn)", fmt(st["server_p99_loaded_us"]), "—", None, "—", None))
        mib = lambda stat: {k: (v / 1024 if k != "runs" else [x / 1024 for x in v]) for k, v in stat.items()}
        big, small = mib(st["rss_big_kib"]), mib(st["rss_small_kib"])
        out.append((f"RSS MiB serving GetSubscription, {n} vs {st['small']:,} subscriptions stored", fmt(big, 1),
                    fmt(small, 1), per_round(big, small),
                    f"within 64 MiB: {fmt(st['rss_diff_mib'], 1)} MiB apart", st["rss_diff_mib"]["median"] <= 64))
    si = r.get("state_ingest")
    if si:
        out.append((f"notifications/s from the webhook into the subscription state, 2 cores, every 200 durable "
                    f"({si['count']:,} new purchases, {si['posters']} posters) vs sqlite3 committing the log's rows "
                    "alone (one fsync each)", fmt(si["rate"]), fmt(si["reference"]), si["vs_reference"],
                    f"≥ 2,000/s: {si['rate']['median']:,.0f}/s", si["rate"]["median"] >= 2000))
        out.append(("a new purchase readable in the state after the webhook's 200, p95 ms, under that load "
                    "(p50 in the goal cell)", fmt(si["p95_ms"], 1), "—", None,
                    f"≤ 100 ms; p50 {fmt(si['p50_ms'], 1)} ms", si["p95_ms"]["median"] <= 100))
        out.append(("the same, one purchase at a time, p95 ms", fmt(si["alone_p95_ms"], 1), "—", None, "≤ 100 ms",
                    si["alone_p95_ms"]["median"] <= 100))
        if "cpu_us" in si:
            out.append(("gateway CPU µs per notification ingested (every thread: HTTP, 3 ES256 verifications, the "
                        "log's commit, the projection)", fmt(si["cpu_us"]), "—", None, "—", None))
    pg = r.get("postgres")
    if pg:
        out.append((f"notifications/s from the webhook into the state on PostgreSQL over loopback, every 200 committed "
                    f"(fsync on; {pg['count']:,} new purchases, {pg['posters']} posters) vs pgbench -N with as many "
                    "clients", fmt(pg["ingest"]), fmt(pg["pgbench_writes"]), None,
                    f"≥ 1,000/s: {pg['ingest']['median']:,.0f}/s", pg["ingest"]["median"] >= 1000))
        held = (f", the {pg['record_cache']:,} records read held (`subscriptions.recordCacheSize`)"
                if "record_cache" in pg else "")
        out.append((f"GetSubscription req/s on PostgreSQL over loopback, one loop, pool {pg['pool']}{held} vs "
                    f"pgbench -S at {pg['pool']} connections (select-only)", fmt(pg["get_subscription"]),
                    fmt(pg["pgbench_select"]), pg["reads_vs_pgbench"], "≥ 0.70 (the records read held)",
                    pg["reads_vs_pgbench"]["median"] >= 0.7))
        if "get_subscription_default_cache" in pg:
            out.append(("the same with the default record cache (2,048 of them)",
                        fmt(pg["get_subscription_default_cache"]), fmt(pg["pgbench_select"]),
                        pg["reads_default_cache_vs_pgbench"], "—", None))
    ev = r.get("events")
    if ev:
        out.append(("subscription events/s delivered to a healthy team webhook, a backlog drained (receiver: Python "
                    "asyncio on the same 2 cores)", fmt(ev["drain_events_per_s"]), "—", None,
                    f"≥ 2,000/s: {ev['drain_events_per_s']['median']:,.0f}/s",
                    ev["drain_events_per_s"]["median"] >= 2000))
        out.append(("the same, ingestion and delivery together (new purchases posted as fast as the webhook takes "
                    "them; 2 team webhooks and a stream consumer)", fmt(ev["events_per_s"]), "—", None, "—", None))
        for key, what in (("webhook", "a healthy team's webhook"), ("stream", "a WatchSubscriptionEvents consumer")):
            out.append((f"delivery lag p95 ms, Apple's 200 → {what}, under that load (p50 in the goal cell)",
                        fmt(ev[f"{key}_p95_ms"], 1), "—", None,
                        f"≤ 100 ms; p50 {fmt(ev[f'{key}_p50_ms'], 1)} ms", ev[f"{key}_p95_ms"]["median"] <= 100))
            out.append((f"the same, one purchase at a time", fmt(ev[f"alone_{key}_p95_ms"], 1), "—", None,
                        "≤ 100 ms", ev[f"alone_{key}_p95_ms"]["median"] <= 100))
        out.append(("webhook 200 p99 ms with 3 team webhooks of which one stalls vs none (one POST at a time)",
                    fmt(ev["answer_fanout_p99_ms"], 2), fmt(ev["answer_plain_p99_ms"], 2),
                    per_round(ev["answer_fanout_p99_ms"], ev["answer_plain_p99_ms"]), "unchanged", None))
    return out


def table(data):
    lines = [f"Run `{data['date']}` at commit `{data['commit']}`{' (QUICK)' if data['quick'] else ''}; "
             f"{data['machine']['cores']} cores ({data['machine']['cpu']}), load average after "
             f"{' '.join(data['machine']['load_after'])}. Each cell: median of the rounds (min–max).", "",
             "| figure | gateway | reference | ratio | goal | met |", "| --- | --- | --- | --- | --- | --- |"]
    for name, subject, ref, ratio, goal, met in rows(data["results"]):
        ratio_text = "—" if ratio is None else f"{ratio['median']:.2f} ({ratio['min']:.2f}–{ratio['max']:.2f})"
        lines.append(f"| {name} | {subject} | {ref} | {ratio_text} | {goal} | "
                     f"{'—' if met is None else ('✅' if met else '❌')} |")
    return "\n".join(lines)


def chart(data, path):
    items = [(name, ratio, goal) for name, _, _, ratio, goal, met in rows(data["results"])
             if ratio is not None and met is not None]
    fig, ax = plt.subplots(figsize=(9, 0.6 * len(items) + 1.2))
    for i, (name, ratio, goal) in enumerate(items):
        ax.barh(i, ratio["median"], color="#4a7bb7",
                xerr=[[ratio["median"] - ratio["min"]], [ratio["max"] - ratio["median"]]], capsize=3)
        ax.text(ratio["max"] * 1.05 + 0.01, i, f"{ratio['median']:.2f} (goal {goal})", va="center", fontsize=8)
    ax.set_yticks(range(len(items)), [n if len(n) < 48 else n[:46] + "…" for n, _, _ in items], fontsize=8)
    ax.set_xscale("log")
    ax.axvline(1, color="grey", lw=0.8)
    ax.invert_yaxis()
    ax.set_xlabel("gateway ÷ reference, same run (median, min–max bars; log scale)")
    ax.set_title(f"appstore-gateway benchmarks, {data['date']}", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(result_path):
    data = json.load(open(result_path))
    readme = os.path.join(HERE, "README.md")
    text = open(readme).read()
    block = "<!-- figures:begin -->\n" + table(data) + "\n\n![ratios](chart.png)\n<!-- figures:end -->"
    text, n = re.subn(r"<!-- figures:begin -->.*?<!-- figures:end -->", lambda _: block, text, flags=re.S)
    if not n:
        text += "\n" + block + "\n"
    open(readme, "w").write(text)
    chart(data, os.path.join(HERE, "chart.png"))


if __name__ == "__main__":
    main(sys.argv[1])
