"""Helpers of bench/history.sh (Python 3; `grpcio` for fanout, `cryptography` or the `openssl` command for jwt).

  history_tool.py jwt STATE_DIR                 "Bearer …": an App Store Server API token for the simulator's
                                                first app, signed with its .p8 (ES256), valid 50 minutes
  history_tool.py body TXID OUT                 a gRPC frame holding GetHistoryRequest{transaction_id: TXID}
  history_tool.py ids STATE_DIR                 one Production transaction id per line (biggest history first)
  history_tool.py percentiles LOG…              "p50 p99 count" in µs of h2load --log-file rows with status 200
  history_tool.py fanout ADDR STATE_DIR N       N concurrent GetHistory calls with distinct requests (grpcio);
                                                prints "status:count …"
  history_tool.py split LOG FROM TO DIRECT_P50  the gateway's added latency split, from the access-log lines
                                                FROM..TO of LOG (successful GetHistory calls that called Apple):
                                                "transport handoffs verify count", medians in µs (bench/README.md)
  history_tool.py stages LOG [PREFIX]           median (p25-p75) of every numeric `PREFIX*` field (default "t_")
                                                of those lines within the latency bursts (LOG.ranges, written by
                                                GW_LOG=LOG bench/history.sh): temporary stage timestamps a build
                                                notes while its stages are being timed (bench/README.md)
"""
import base64
import json
import os
import struct
import sys
import time


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def first_app(state_dir):
    """issuerId, keyId, bundleId, privateKeyFile of the first app in the state dir's gateway.yaml."""
    app, apps = {}, []
    for line in open(os.path.join(state_dir, "gateway.yaml")):
        stripped = line.strip()
        if stripped.startswith("- name:"):
            app = {}
            apps.append(app)
        for key in ("issuerId", "keyId", "bundleId", "privateKeyFile"):
            if stripped.startswith(key + ":") and apps:
                app[key] = stripped.split(":", 1)[1].strip().strip('"')
    return apps[0]


def jwt(state_dir):
    app = first_app(state_dir)
    path = app["privateKeyFile"]
    if not os.path.isabs(path):
        path = os.path.join(state_dir, path)
    now = int(time.time())
    header = {"alg": "ES256", "kid": app["keyId"], "typ": "JWT"}
    claims = {"iss": app["issuerId"], "iat": now, "exp": now + 3000, "aud": "appstoreconnect-v1",
              "bid": app["bundleId"]}
    signing_input = b64url(json.dumps(header).encode()) + "." + b64url(json.dumps(claims).encode())
    r, s = es256(path, signing_input.encode())
    print("Bearer " + signing_input + "." + b64url(r.to_bytes(32, "big") + s.to_bytes(32, "big")))


def es256(key_path, data):
    """(r, s) of an ECDSA P-256 SHA-256 signature of DATA with the PEM key at KEY_PATH: with `cryptography` where
    it is installed, else with the `openssl` command (a machine with only the fleet bundle, bench/fleet.sh)."""
    try:
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import ec
        from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature
    except ImportError:
        import subprocess

        der = subprocess.run(["openssl", "dgst", "-sha256", "-sign", key_path], input=data, capture_output=True,
                             check=True).stdout
        return der_signature(der)
    key = serialization.load_pem_private_key(open(key_path, "rb").read(), password=None)
    return decode_dss_signature(key.sign(data, ec.ECDSA(hashes.SHA256())))


def der_signature(der):
    """(r, s) of a DER ECDSA-Sig-Value: SEQUENCE { INTEGER r, INTEGER s } (a P-256 one is under 128 bytes)."""
    if len(der) < 8 or der[0] != 0x30 or der[1] != len(der) - 2:
        raise ValueError("not a DER ECDSA signature")
    values, at = [], 2
    for _ in range(2):
        if der[at] != 0x02:
            raise ValueError("not a DER INTEGER")
        length = der[at + 1]
        values.append(int.from_bytes(der[at + 2:at + 2 + length], "big"))
        at += 2 + length
    return values[0], values[1]


def varint(n):
    out = b""
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out += bytes([byte | 0x80])
        else:
            return out + bytes([byte])


def get_history_request(txid, sort=0, product_types=()):
    """GetHistoryRequest: transaction_id = 2 (string), product_types = 7 (packed enum), sort = 8 (enum)."""
    msg = b"\x12" + varint(len(txid)) + txid.encode()
    if product_types:
        packed = b"".join(varint(t) for t in product_types)
        msg += b"\x3a" + varint(len(packed)) + packed
    if sort:
        msg += b"\x40" + varint(sort)
    return msg


def production_ids(state_dir):
    index = json.load(open(os.path.join(state_dir, "transactions.json")))
    customers = [c for c in next(iter(index.values()))["Production"] if c["transactionId"]]
    return [c["transactionId"] for c in sorted(customers, key=lambda c: -c["transactions"])]


def percentiles(paths):
    durations = []
    for path in paths:
        for row in open(path):
            cols = row.split("\t")
            if len(cols) >= 3 and cols[1] == "200":
                durations.append(int(cols[2]))
    durations.sort()
    if not durations:
        print("0 0 0")
        return
    pick = lambda q: durations[min(len(durations) - 1, int(q * len(durations)))]
    print(pick(0.50), pick(0.99), len(durations))


def fanout(address, state_dir, n):
    """N calls at once over one channel, each request distinct (id × sort × product-type subset), so no two
    coalesce and the gateway has as many upstream calls to make as its budget allows."""
    import grpc

    ids = production_ids(state_dir)
    variants = [(sort, tuple(t for t in range(1, 5) if mask & (1 << (t - 1)))) for sort in (0, 1, 2)
                for mask in range(16)]
    channel = grpc.insecure_channel(address, options=[("grpc.max_receive_message_length", 64 << 20)])
    call = channel.unary_unary("/appstore.gateway.v1.AppStoreGateway/GetHistory")
    futures = []
    for i in range(n):
        sort, types = variants[(i // len(ids)) % len(variants)]
        futures.append(call.future(get_history_request(ids[i % len(ids)], sort, types), timeout=60))
    counts = {}
    for f in futures:
        try:
            f.result()
            code = "OK"
        except grpc.RpcError as error:
            code = error.code().name
        counts[code] = counts.get(code, 0) + 1
    channel.close()
    print(" ".join(f"{k}:{v}" for k, v in sorted(counts.items())))


def history_entries(log, in_range):
    """The access-log entries of successful GetHistory calls that called Apple (they carry `verify_us`), from the
    lines whose numbers `in_range` accepts."""
    with open(log) as lines:
        for number, line in enumerate(lines, 1):
            if not in_range(number) or not line.startswith("{"):
                continue
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            if entry.get("grpc_method") == "GetHistory" and entry.get("grpc_code") == 0 and "verify_us" in entry:
                yield entry


def split(log, first, last, direct_p50):
    """Per call: transport = the call's duration (request head to trailers) - handler_us; hand-offs = handler_us -
    verify_us - the same request's p50 straight to the simulator; verify = verify_us. Medians of each."""
    transport, handoffs, verify = [], [], []
    for entry in history_entries(log, lambda number: first <= number <= last):
        handler, checked = int(entry["handler_us"]), int(entry["verify_us"])
        transport.append(round(float(entry["duration_ms"]) * 1000) - handler)
        handoffs.append(handler - checked - direct_p50)
        verify.append(checked)
    if not verify:
        print("0 0 0 0")
        return
    median = lambda values: sorted(values)[len(values) // 2]
    print(median(transport), median(handoffs), median(verify), len(verify))


def stages(log, prefix):
    ranges = [tuple(map(int, row.split())) for row in open(log + ".ranges") if row.strip()]
    values = {}
    for entry in history_entries(log, lambda number: any(first <= number <= last for first, last in ranges)):
        for key, value in entry.items():
            if key.startswith(prefix) or key in ("handler_us", "upstream_us", "verify_us"):
                try:
                    values.setdefault(key, []).append(float(value))
                except (TypeError, ValueError):
                    pass
    for key in sorted(values):
        v = sorted(values[key])
        pick = lambda q: v[min(len(v) - 1, int(q * len(v)))]
        print(f"{key}: {pick(0.5):.0f} ({pick(0.25):.0f}-{pick(0.75):.0f}) n={len(v)}")


def main(argv):
    command = argv[1]
    if command == "jwt":
        jwt(argv[2])
    elif command == "body":
        msg = get_history_request(argv[2])
        open(argv[3], "wb").write(b"\0" + struct.pack(">I", len(msg)) + msg)
    elif command == "ids":
        print("\n".join(production_ids(argv[2])))
    elif command == "percentiles":
        percentiles(argv[2:])
    elif command == "split":
        split(argv[2], int(argv[3]), int(argv[4]), int(argv[5]))
    elif command == "stages":
        stages(argv[2], argv[3] if len(argv) > 3 else "t_")
    elif command == "fanout":
        fanout(argv[2], argv[3], int(argv[4]))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
