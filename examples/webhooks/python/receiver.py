#!/usr/bin/env python3
"""A receiver for appstore-gateway's signed webhooks, standard library only.

    python3 examples/webhooks/python/receiver.py --port 8080 --secret-file team.secret
    python3 examples/webhooks/python/receiver.py --port 8080 --secret-file new.secret --secret-file old.secret

It verifies `appstore-gateway-signature` (400 when malformed, 401 when no signature matches or `t` is outside
the replay window), handles each event once (dedupe on the signed `eventId`, in memory), ignores an event whose
`sequence` is not greater than the last one handled for its subscription, and only then answers 204. Each
handled event prints one line: `<eventId> <originalTransactionId> #<sequence> <type>`.

`verify()` is pure and importable: `from receiver import verify`.
"""
import argparse
import collections
import hashlib
import hmac
import http.server
import json
import re
import sys
import threading
import time

SIGNATURE_HEADER = "appstore-gateway-signature"
EVENT_ID_HEADER = "appstore-gateway-event-id"
DEFAULT_TOLERANCE = 300  # seconds between the signature's `t` and this receiver's clock
MAX_BODY = 1 << 20
HEX64 = re.compile(r"[0-9a-f]{64}")
DIGITS = re.compile(r"[0-9]{1,18}")  # t and sequence: plain decimal, small enough for an int64 everywhere


class MalformedSignature(ValueError):
    """The header cannot be read (answer 400)."""


class InvalidSignature(ValueError):
    """The header is well formed but no `v1` matches, or `t` is outside the window (answer 401)."""


def sign(secret, timestamp, body):
    """Lowercase hex HMAC-SHA256 of `<t>.<body>`, as the gateway computes it."""
    return hmac.new(secret, str(timestamp).encode() + b"." + body, hashlib.sha256).hexdigest()


def verify(header, body, secrets, now, tolerance=DEFAULT_TOLERANCE):
    """Checks `header` (`t=<unix seconds>,v1=<hex>[,v1=<hex>...]`) against the raw `body` bytes.

    `secrets` are bytes; the signature is good when any `v1` matches any secret. Returns `t`; raises
    MalformedSignature or InvalidSignature. Unknown keys (a future `v2=`) are ignored.
    """
    timestamps, candidates = [], []
    for part in (header or "").split(","):
        key, sep, value = part.strip().partition("=")
        if not sep:
            raise MalformedSignature(f"not key=value: {part.strip()!r}")
        if key == "t":
            timestamps.append(value)
        elif key == "v1":
            candidates.append(value)
    if len(timestamps) != 1 or not DIGITS.fullmatch(timestamps[0]):
        raise MalformedSignature("expected exactly one t of decimal digits")
    if not candidates or not all(HEX64.fullmatch(v) for v in candidates):
        raise MalformedSignature("expected v1 values of 64 lowercase hex digits")
    timestamp = int(timestamps[0])
    if abs(now - timestamp) > tolerance:
        raise InvalidSignature(f"t is {int(now - timestamp)} s away from this clock (window {tolerance} s)")
    matched = False
    for secret in secrets:
        expected = sign(secret, timestamp, body)
        for candidate in candidates:
            # Constant time, and no early exit: timing tells nothing about which prefix matched.
            matched |= hmac.compare_digest(expected, candidate)
    if not matched:
        raise InvalidSignature("no v1 matches a configured secret")
    return timestamp


def read_secret(path):
    """The file's bytes with surrounding whitespace (a trailing newline) trimmed, as the gateway reads it."""
    with open(path, "rb") as f:
        secret = f.read().strip()
    if not secret:
        sys.exit(f"{path}: empty secret")
    return secret


class Events:
    """What this receiver has handled. In memory, so it is forgotten on restart: a real receiver keeps it next to
    the data the events change (same database transaction), so that a retry after a crash is still recognised."""

    def __init__(self, remembered_ids=10_000):
        self.lock = threading.Lock()
        self.ids = collections.OrderedDict()  # recent event ids, oldest first
        self.remembered_ids = remembered_ids
        self.last_sequence = {}  # originalTransactionId -> last sequence handled

    def receive(self, event):
        """Handles `event` unless it was seen or is older than what was handled; returns what happened."""
        event_id = event["eventId"]
        subscription = event["originalTransactionId"]
        sequence = event["sequence"]
        # One lock around check, handling and recording: two deliveries of one event racing each other
        # (a retry after a timeout) cannot both be handled.
        with self.lock:
            if event_id in self.ids:
                return "duplicate"
            if sequence <= self.last_sequence.get(subscription, 0):
                return "stale"
            handle(event)  # an exception here answers 500: nothing is recorded, and the gateway retries
            self.ids[event_id] = None
            if len(self.ids) > self.remembered_ids:
                self.ids.popitem(last=False)
            self.last_sequence[subscription] = sequence
            return "handled"


def handle(event):
    """The team's own logic goes here (grant or revoke access...). This example prints the event."""
    # proto3 JSON omits fields that hold their default value, enums included.
    kind = event.get("type", "SUBSCRIPTION_EVENT_TYPE_UNSPECIFIED")
    print(f'{event["eventId"]} {event["originalTransactionId"]} #{event["sequence"]} {kind}', flush=True)


def parse_event(body):
    """The event's JSON object with `sequence` as an int, or None when it lacks what dedupe and ordering need."""
    try:
        event = json.loads(body)
    except ValueError:
        return None
    if not isinstance(event, dict) or not isinstance(event.get("eventId"), str) or not event["eventId"]:
        return None
    if not isinstance(event.get("originalTransactionId"), str) or not event["originalTransactionId"]:
        return None
    # uint64 is a JSON string in proto3 JSON ("3"); a plain number is accepted too, as proto3 JSON parsers do.
    sequence = str(event.get("sequence")) if type(event.get("sequence")) in (str, int) else ""
    if not DIGITS.fullmatch(sequence) or int(sequence) < 1:
        return None
    return {**event, "sequence": int(sequence)}


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: the gateway may reuse its connection
    secrets = []
    tolerance = DEFAULT_TOLERANCE
    events = None

    def do_POST(self):
        length = self.headers.get("Content-Length")
        if length is None or not DIGITS.fullmatch(length):
            self.close_connection = True  # the unread body would be taken for the next request
            return self.reply(411, "Content-Length required")
        if int(length) > MAX_BODY:
            self.close_connection = True
            return self.reply(413, "body too large")
        body = self.rfile.read(int(length))  # the exact bytes that were signed: never re-serialise before verifying
        headers = self.headers.get_all(SIGNATURE_HEADER) or []
        try:
            if len(headers) != 1:
                raise MalformedSignature(f"expected one {SIGNATURE_HEADER} header, got {len(headers)}")
            verify(headers[0], body, self.secrets, time.time(), self.tolerance)
        except MalformedSignature as e:
            return self.reply(400, f"malformed signature: {e}")
        except InvalidSignature as e:
            return self.reply(401, f"bad signature: {e}")
        # Only now is the body trusted. Dedupe uses the signed eventId, not the (unsigned) event-id header.
        event = parse_event(body)
        if event is None:
            return self.reply(400, "not a subscription event")
        try:
            outcome = self.events.receive(event)
        except Exception as e:  # noqa: BLE001 (any failure of the team's logic: let the gateway retry)
            return self.reply(500, f"handling failed: {e}")
        if outcome != "handled":
            self.log_message("%s: %s %s #%d", outcome, event["eventId"], event["originalTransactionId"],
                             event["sequence"])
        self.reply(204)

    def reply(self, status, message=None):
        if message:
            self.log_message("%d %s (event %s)", status, message, self.headers.get(EVENT_ID_HEADER, "-"))
        self.send_response(status)
        if message:
            data = (message + "\n").encode()
            self.send_header("Content-Type", "text/plain; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        else:
            self.end_headers()  # 204: no body, and no Content-Length either

    def log_request(self, code="-", size="-"):
        pass  # one line per handled event on stdout; rejections go to stderr through log_message


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8080, help="0 picks a free port")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (0.0.0.0 for all)")
    parser.add_argument("--secret-file", action="append", required=True,
                        help="the team's secret; repeat during a rotation (old and new)")
    parser.add_argument("--tolerance", type=int, default=DEFAULT_TOLERANCE,
                        help="replay window in seconds (default %(default)s)")
    args = parser.parse_args()
    Handler.secrets = [read_secret(path) for path in args.secret_file]
    Handler.tolerance = args.tolerance
    Handler.events = Events()
    server = http.server.ThreadingHTTPServer((args.host, args.port), Handler)
    print(f"listening on {args.host}:{server.server_address[1]}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
