"""The user's view of GetHistory: one verified page of a customer's history, as a Python service gets it.

  gateway   a grpcio stub calls the gateway's GetHistory; the answer holds the page's 20 transactions already
            verified (chain, signature, app, environment) and decoded
  apple     the same service using Apple's Python library alone: AppStoreServerAPIClient.get_transaction_history
            (HTTPS, HTTP/1.1, a token signed per client) for the same page, then SignedDataVerifier
            .verify_and_decode_signed_transaction on each of its JWS

Both reach the same simulator (`serve --simulator`, release build), for the customer with the longest history
(a full first page), in sequential calls; rounds interleave the two paths. The simulator enforces Apple's budget
(getTransactionHistory 50/s per app), so gateway calls go in bursts with a pause between them.

  .venv/bin/python bench/python_caller.py [--rounds 3] [--calls 40] [--json OUT]   (BENCH_OUT set: make bench's)
Prints per round and path the p50 and p99 in ms, and the ratio apple p50 / gateway p50 (median and spread).
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "Tests", "interop"))
import conftest  # noqa: E402  (generates the gateway's Python stubs, as the interop tests use them)
import grpc  # noqa: E402
from appstore.gateway.v1 import gateway_pb2_grpc, history_pb2  # noqa: E402
from appstoreserverlibrary.api_client import AppStoreServerAPIClient, GetTransactionHistoryVersion  # noqa: E402
from appstoreserverlibrary.models.Environment import Environment  # noqa: E402
from appstoreserverlibrary.models.TransactionHistoryRequest import TransactionHistoryRequest  # noqa: E402
from appstoreserverlibrary.signed_data_verifier import SignedDataVerifier  # noqa: E402


def start_gateway(binary, state, port):
    process = subprocess.Popen(
        [binary, "serve", "--simulator", "--state-dir", state, "--listen", f"127.0.0.1:{port}"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while not os.path.exists(os.path.join(state, "gateway.yaml")) or not port_open(port):
        if time.monotonic() > deadline or process.poll() is not None:
            process.kill()
            raise RuntimeError("the gateway did not start")
        time.sleep(0.1)
    return process


def port_open(port):
    import socket
    try:
        socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
        return True
    except OSError:
        return False


def percentile(values, fraction):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--calls", type=int, default=40, help="sequential calls per path and round")
    parser.add_argument("--port", type=int, default=30171)
    parser.add_argument("--binary", default=os.path.join(ROOT, ".build", "release", "appstore-gateway"))
    parser.add_argument("--json", help="write the figures here")
    args = parser.parse_args()

    state = tempfile.mkdtemp(prefix="python-caller-")
    gateway = start_gateway(args.binary, state, args.port)
    try:
        import yaml
        config = yaml.safe_load(open(os.path.join(state, "gateway.yaml")))
        app = config["apps"][0]
        simulator_url = config["apple"]["productionURL"] if "apple" in config else None
        if simulator_url is None:
            simulator_url = re.search(r'productionURL:\s*"?([^"\s]+)', open(os.path.join(state, "gateway.yaml")).read()).group(1)
        os.environ["REQUESTS_CA_BUNDLE"] = os.path.join(state, "tls", "ca.pem")
        index = json.load(open(os.path.join(state, "transactions.json")))
        customers = [c for c in index[app["bundleId"]]["Production"] if c["transactionId"]]
        customer = max(customers, key=lambda c: c["transactions"])
        txid = customer["transactionId"]
        key_path = app["privateKeyFile"]
        if not os.path.isabs(key_path):
            key_path = os.path.join(state, key_path)
        key = open(key_path, "rb").read()
        roots = [open(os.path.join(state, "pki", "root.cer"), "rb").read()]

        channel = grpc.insecure_channel(f"127.0.0.1:{args.port}", options=[("grpc.max_receive_message_length", 64 << 20)])
        stub = gateway_pb2_grpc.AppStoreGatewayStub(channel)
        client = AppStoreServerAPIClient(key, app["keyId"], app["issuerId"], app["bundleId"], Environment.PRODUCTION)
        client._base_url = simulator_url  # the library has no base-URL option
        verifier = SignedDataVerifier(roots, False, Environment.PRODUCTION, app["bundleId"], app.get("appAppleId"))

        def through_gateway():
            answer = stub.GetHistory(history_pb2.GetHistoryRequest(app=app["name"], transaction_id=txid), timeout=30)
            return len(answer.transactions)

        def with_apple_library():
            page = client.get_transaction_history(txid, None, TransactionHistoryRequest(), GetTransactionHistoryVersion.V2)
            return len([verifier.verify_and_decode_signed_transaction(jws) for jws in page.signedTransactions])

        # Both paths answer the same page before anything is timed (and warm their connections and caches).
        assert through_gateway() == with_apple_library() > 0

        def timed(call, pause_every):
            durations = []
            for index in range(args.calls):
                if pause_every and index and index % pause_every == 0:
                    time.sleep(1.0)  # stay under the simulator's 50 calls/s
                start = time.perf_counter()
                call()
                durations.append((time.perf_counter() - start) * 1000)
            time.sleep(1.0)
            return durations

        rounds = []
        for number in range(args.rounds):
            order = [("gateway", through_gateway, 20), ("apple", with_apple_library, 20)]
            if number % 2:
                order.reverse()
            figures = {}
            for name, call, pause in order:
                durations = timed(call, pause)
                figures[name] = {"p50_ms": percentile(durations, 0.5), "p99_ms": percentile(durations, 0.99)}
            figures["ratio"] = figures["apple"]["p50_ms"] / figures["gateway"]["p50_ms"]
            rounds.append(figures)
            print(f"round {number + 1}: gateway p50 {figures['gateway']['p50_ms']:.2f} ms "
                  f"(p99 {figures['gateway']['p99_ms']:.2f}), Apple's library p50 {figures['apple']['p50_ms']:.2f} ms "
                  f"(p99 {figures['apple']['p99_ms']:.2f}), ratio {figures['ratio']:.1f}x", flush=True)
        ratios = [r["ratio"] for r in rounds]
        print(f"verified page p50: Apple's library / gateway = {statistics.median(ratios):.1f}x "
              f"({min(ratios):.1f}-{max(ratios):.1f}) over {args.rounds} rounds of {args.calls} calls")
        def stat(values):
            return {"median": statistics.median(values), "min": min(values), "max": max(values), "runs": values}

        figures = {"gateway_p50_ms": stat([r["gateway"]["p50_ms"] for r in rounds]),
                   "apple_p50_ms": stat([r["apple"]["p50_ms"] for r in rounds]),
                   "apple_vs_gateway": stat(ratios), "transactions": customer["transactions"]}
        out = args.json or (os.path.join(os.environ["BENCH_OUT"], "python_caller.json") if os.environ.get("BENCH_OUT") else None)
        if out:
            json.dump(figures, open(out, "w"), indent=1)
        channel.close()
    finally:
        gateway.terminate()
        gateway.wait(timeout=10)


if __name__ == "__main__":
    main()
