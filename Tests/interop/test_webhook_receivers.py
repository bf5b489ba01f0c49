"""The webhook receivers of examples/webhooks (Python, Go, Java) against signatures made here with hmac, as the
gateway makes them (`t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>`). All three must answer alike:
a signed event is handled once (a redelivery is answered 2xx and not handled again) and in order per subscription;
a tampered body, a signature by a secret they do not hold and a `t` outside the 300 s window are 401; a header
they cannot read is 400; during a rotation any one matching `v1` is enough. The README's commands run as written.

"Handled" is what a receiver prints on stdout, one line per event, before it answers. That nothing more was
handled is checked with a sentinel: a fresh event posted afterwards must be the very next line."""
import hashlib
import hmac
import http.client
import importlib.util
import itertools
import json
import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid

import pytest

from conftest import ROOT
from test_examples import documented_commands

WEBHOOKS = os.path.join(ROOT, "examples", "webhooks")
SECRET = b"whsec-team-one-7c1f"  # the receivers' first --secret-file
NEXT_SECRET = b"whsec-team-two-93ab"  # their second one (a rotation on their side)
UNKNOWN_SECRET = b"whsec-someone-else"
TOLERANCE = 300
# Subscriptions of the events made here; the README's hand-made event uses 2000000000000001.
SUBSCRIPTIONS = itertools.count(3000000000000001)


def sign(body, *secrets, t=None):
    """The signature header for `body`: one v1 per secret, in order."""
    t = int(time.time()) if t is None else t
    macs = [hmac.new(secret, f"{t}.".encode() + body, hashlib.sha256).hexdigest() for secret in secrets]
    return ",".join([f"t={t}"] + [f"v1={mac}" for mac in macs])


def make_event(subscription=None, sequence=1, kind="SUBSCRIPTION_EVENT_TYPE_RENEWAL"):
    """A SubscriptionEvent in proto3 JSON, shaped as the gateway sends it, with a fresh id."""
    subscription = subscription or str(next(SUBSCRIPTIONS))
    return {
        "eventId": str(uuid.uuid4()), "app": "example", "environment": "ENVIRONMENT_SANDBOX",
        "originalTransactionId": subscription, "sequence": str(sequence), "type": kind,
        "subscription": {"app": "example", "environment": "ENVIRONMENT_SANDBOX",
                         "originalTransactionId": subscription, "productId": "com.example.pro.monthly",
                         "status": "SUBSCRIPTION_STATUS_ACTIVE", "entitled": True, "entitlements": ["pro"],
                         "expiresDate": "2026-12-29T05:00:00Z", "autoRenew": True, "version": "7"},
        "previousStatus": "SUBSCRIPTION_STATUS_ACTIVE", "occurredAt": "2026-11-29T05:00:00Z",
        # Non-ASCII on purpose: the signature covers the raw UTF-8 bytes.
        "cause": "DID_RENEW — renouvelé",
    }


def encode(event):
    return json.dumps(event, ensure_ascii=False, separators=(",", ":")).encode()


def handled_line(event):
    return f'{event["eventId"]} {event["originalTransactionId"]} #{event["sequence"]} {event["type"]}'


class Receiver:
    """A receiver process (its own process group) that printed `listening on 127.0.0.1:PORT`; what it prints
    next on stdout is read line by line into a queue."""

    def __init__(self, command, cwd=None):
        self.log = tempfile.NamedTemporaryFile(prefix="webhook-receiver-", suffix=".log", delete=False)
        self.proc = subprocess.Popen(command, cwd=cwd, stdout=subprocess.PIPE, stderr=self.log, text=True,
                                     start_new_session=True)
        self.lines = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        first = self.next_line(timeout=90)  # Java compiles the source file first
        match = re.fullmatch(r"listening on 127\.0\.0\.1:(\d+)", first or "")
        if not match:
            self.stop()
            raise RuntimeError(f"{command} did not start: {first!r}\n{self.read_log()}")
        self.port = int(match.group(1))

    def _read(self):
        for line in self.proc.stdout:
            self.lines.put(line.rstrip("\n"))
        self.lines.put(None)  # end of output

    def next_line(self, timeout=10):
        try:
            return self.lines.get(timeout=timeout)
        except queue.Empty:
            return None

    def post(self, body, signature=None, event_id=None, headers=()):
        """POSTs `body` with these headers and returns the status."""
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        try:
            connection.putrequest("POST", "/")
            all_headers = [("Content-Type", "application/json"), ("Content-Length", str(len(body)))]
            if signature is not None:
                all_headers.append(("appstore-gateway-signature", signature))
            if event_id is not None:
                all_headers.append(("appstore-gateway-event-id", event_id))
            for name, value in all_headers + list(headers):
                connection.putheader(name, value)
            connection.endheaders(body)
            response = connection.getresponse()
            response.read()
            return response.status
        finally:
            connection.close()

    def deliver(self, event, *secrets, t=None):
        """Posts `event` signed with `secrets` (SECRET by default), as the gateway does; returns the status."""
        body = encode(event)
        return self.post(body, sign(body, *(secrets or (SECRET,)), t=t), event["eventId"])

    def assert_handled(self, event):
        line = self.next_line()
        assert line == handled_line(event), f"{line!r}\n{self.read_log()}"

    def handled_since_last_read(self):
        """Posts a fresh event and returns the lines printed before its own: what was handled since the last line
        read (the receivers print before they answer)."""
        sentinel = make_event()
        assert_2xx(self.deliver(sentinel), self)
        lines = []
        while (line := self.next_line()) != handled_line(sentinel):
            assert line is not None, f"no line for the sentinel event after {lines}\n{self.read_log()}"
            lines.append(line)
        return lines

    def assert_nothing_else_handled(self):
        stray = self.handled_since_last_read()
        assert not stray, f"handled too: {stray}\n{self.read_log()}"

    def read_log(self):
        with open(self.log.name) as f:
            return f.read()

    def stop(self):
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()


def assert_2xx(status, receiver):
    assert 200 <= status < 300, f"{status}\n{receiver.read_log()}"


@pytest.fixture(scope="module")
def secret_files(tmp_path_factory):
    """The receivers' two secret files, with the whitespace they must trim (a trailing newline, CRLF, spaces)."""
    directory = tmp_path_factory.mktemp("webhook-secrets")
    first, second = directory / "team.secret", directory / "next.secret"
    first.write_bytes(SECRET + b"\n")
    second.write_bytes(b"  " + NEXT_SECRET + b"\r\n")
    return str(first), str(second)


@pytest.fixture(scope="module")
def go_receiver(tmp_path_factory):
    """The Go receiver built once; nothing downloaded (its go.mod has no requirements)."""
    if shutil.which("go") is None:
        pytest.skip("go is not on PATH")
    binary = str(tmp_path_factory.mktemp("webhook-go") / "receiver")
    env = {**os.environ, "GOPROXY": "off", "GOTOOLCHAIN": "local", "GOFLAGS": ""}
    built = subprocess.run(["go", "build", "-o", binary, "."], cwd=os.path.join(WEBHOOKS, "go"), env=env,
                           capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stderr
    return binary


@pytest.fixture(scope="module", params=["python", "go", "java"])
def started_receiver(request, secret_files):
    """Each receiver once per module, on a free loopback port, holding both secrets."""
    if request.param == "python":
        command = [sys.executable, os.path.join(WEBHOOKS, "python", "receiver.py")]
    elif request.param == "go":
        command = [request.getfixturevalue("go_receiver")]
    else:
        if shutil.which("java") is None:
            pytest.skip("java is not on PATH")
        command = ["java", os.path.join(WEBHOOKS, "java", "Receiver.java")]
    for path in secret_files:
        command += ["--secret-file", path]
    started = Receiver(command + ["--port", "0"])
    yield started
    started.stop()


@pytest.fixture
def receiver(started_receiver):
    """The module's receiver, its output read up to now: a line a failed test left unread fails only that test."""
    started_receiver.handled_since_last_read()
    return started_receiver


# (a) and (b)
def test_a_signed_event_is_handled_and_its_redelivery_is_not_handled_again(receiver):
    event = make_event()
    body = encode(event)
    signature = sign(body, SECRET)
    assert_2xx(receiver.post(body, signature, event["eventId"]), receiver)
    receiver.assert_handled(event)
    # The same request again, then the same event signed afresh (a retry after a lost answer): 2xx, not handled.
    assert_2xx(receiver.post(body, signature, event["eventId"]), receiver)
    assert_2xx(receiver.deliver(event), receiver)
    receiver.assert_nothing_else_handled()


def test_dedupe_is_on_the_signed_event_id_not_the_header(receiver):
    event = make_event()
    assert_2xx(receiver.deliver(event), receiver)
    receiver.assert_handled(event)
    body = encode(event)
    # The unsigned header could be changed by anyone replaying the request.
    assert_2xx(receiver.post(body, sign(body, SECRET), event_id=str(uuid.uuid4())), receiver)
    receiver.assert_nothing_else_handled()


def test_concurrent_deliveries_of_one_event_are_handled_once(receiver):
    event = make_event()
    statuses = []
    threads = [threading.Thread(target=lambda: statuses.append(receiver.deliver(event))) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(statuses) == 8
    for status in statuses:
        assert_2xx(status, receiver)
    receiver.assert_handled(event)
    receiver.assert_nothing_else_handled()


# (c)
def test_c_a_tampered_body_is_401(receiver):
    event = make_event()
    body = encode(event)
    tampered = body.replace(b'"entitled":true', b'"entitled":false')
    assert tampered != body
    assert receiver.post(tampered, sign(body, SECRET), event["eventId"]) == 401
    receiver.assert_nothing_else_handled()


def test_a_signature_by_a_secret_the_receiver_does_not_hold_is_401(receiver):
    assert receiver.deliver(make_event(), UNKNOWN_SECRET) == 401
    receiver.assert_nothing_else_handled()


# (d): outside the window is 401 (the header is readable; it just does not prove a fresh delivery), both ways.
@pytest.mark.parametrize("offset", [-(TOLERANCE + 1), -86400, TOLERANCE + 100], ids=["301s-old", "a-day-old", "future"])
def test_d_a_t_outside_the_window_is_401(receiver, offset):
    assert receiver.deliver(make_event(), t=int(time.time()) + offset) == 401
    receiver.assert_nothing_else_handled()


def test_a_t_inside_the_window_is_accepted(receiver):
    event = make_event()
    assert_2xx(receiver.deliver(event, t=int(time.time()) - (TOLERANCE - 100)), receiver)
    receiver.assert_handled(event)


# (e): each header made from a good t and the good v1 of the body.
MALFORMED = {
    "missing": lambda t, v1: None,
    "empty": lambda t, v1: "",
    "no-t": lambda t, v1: f"v1={v1}",
    "empty-t": lambda t, v1: f"t=,v1={v1}",
    "non-integer-t": lambda t, v1: f"t={t}.5,v1={v1}",
    "word-t": lambda t, v1: f"t=now,v1={v1}",
    "two-t": lambda t, v1: f"t={t},t={t},v1={v1}",
    "no-v1": lambda t, v1: f"t={t}",
    "empty-v1": lambda t, v1: f"t={t},v1=",
    "non-hex-v1": lambda t, v1: f"t={t},v1={'z' * 64}",
    "short-v1": lambda t, v1: f"t={t},v1={v1[:-2]}",
    "uppercase-v1": lambda t, v1: f"t={t},v1={v1.upper()}",
    "not-key-value": lambda t, v1: f"t={t};v1={v1}",
}


@pytest.mark.parametrize("shape", list(MALFORMED))
def test_e_a_malformed_header_is_400(receiver, shape):
    event = make_event()
    body = encode(event)
    t = int(time.time())
    v1 = sign(body, SECRET, t=t).split("v1=")[1]
    assert receiver.post(body, MALFORMED[shape](t, v1), event["eventId"]) == 400
    receiver.assert_nothing_else_handled()


def test_two_signature_headers_are_400(receiver):
    event = make_event()
    body = encode(event)
    signature = sign(body, SECRET)
    assert receiver.post(body, signature, headers=[("appstore-gateway-signature", signature)]) == 400
    receiver.assert_nothing_else_handled()


# (f)
def test_f_two_v1_values_where_only_the_second_matches_are_accepted(receiver):
    event = make_event()
    signature = sign(encode(event), UNKNOWN_SECRET, SECRET)
    assert signature.count("v1=") == 2
    assert_2xx(receiver.post(encode(event), signature, event["eventId"]), receiver)
    receiver.assert_handled(event)


def test_any_of_the_receivers_secrets_is_accepted(receiver):
    # Signed with the second --secret-file only (read with its surrounding spaces and CRLF trimmed).
    event = make_event()
    assert_2xx(receiver.deliver(event, NEXT_SECRET), receiver)
    receiver.assert_handled(event)


def test_an_event_not_newer_than_the_last_one_handled_for_its_subscription_is_ignored(receiver):
    subscription = str(next(SUBSCRIPTIONS))
    second, first, third = (make_event(subscription, sequence) for sequence in (2, 1, 3))
    assert_2xx(receiver.deliver(second), receiver)
    receiver.assert_handled(second)
    # Older than what was handled: answered 2xx (nothing to retry), not handled.
    assert_2xx(receiver.deliver(first), receiver)
    assert_2xx(receiver.deliver(make_event(subscription, 2)), receiver)
    receiver.assert_nothing_else_handled()
    assert_2xx(receiver.deliver(third), receiver)
    receiver.assert_handled(third)


@pytest.mark.parametrize("body", [b"not json", b'{"hello":"world"}', b"[]",
                                  encode({**make_event(), "sequence": "0"}),
                                  encode({k: v for k, v in make_event().items() if k != "eventId"})],
                         ids=["not-json", "not-an-event", "array", "sequence-0", "no-event-id"])
def test_a_signed_body_that_is_not_a_subscription_event_is_400(receiver, body):
    assert receiver.post(body, sign(body, SECRET)) == 400
    receiver.assert_nothing_else_handled()


def test_a_missing_type_is_the_enums_default(receiver):
    # proto3 JSON leaves out an enum holding its zero value.
    event = {k: v for k, v in make_event().items() if k != "type"}
    assert_2xx(receiver.deliver(event), receiver)
    line = receiver.next_line()
    assert line == handled_line({**event, "type": "SUBSCRIPTION_EVENT_TYPE_UNSPECIFIED"}), line


def test_the_python_verify_is_pure_and_importable():
    spec = importlib.util.spec_from_file_location("webhook_receiver", os.path.join(WEBHOOKS, "python", "receiver.py"))
    receiver = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(receiver)
    body = encode(make_event())
    now = 1_700_000_000
    header = sign(body, UNKNOWN_SECRET, NEXT_SECRET, t=now - 10)
    assert receiver.verify(header, body, [SECRET, NEXT_SECRET], now) == now - 10
    with pytest.raises(receiver.InvalidSignature):
        receiver.verify(header, body, [SECRET], now)
    with pytest.raises(receiver.InvalidSignature):
        receiver.verify(header, body, [NEXT_SECRET], now + 400)
    assert receiver.verify(header, body, [NEXT_SECRET], now + 400, tolerance=600) == now - 10
    with pytest.raises(receiver.MalformedSignature):
        receiver.verify(f"t={now}", body, [SECRET], now)
    assert issubclass(receiver.MalformedSignature, ValueError) and issubclass(receiver.InvalidSignature, ValueError)


def test_the_readme_verification_snippet():
    with open(os.path.join(WEBHOOKS, "README.md")) as f:
        (snippet,) = re.findall(r"^```python\n(.*?)^```", f.read(), re.S | re.M)
    namespace = {}
    exec(snippet, namespace)
    signature_ok = namespace["signature_ok"]
    body = encode(make_event())
    assert signature_ok(sign(body, UNKNOWN_SECRET, SECRET), body, SECRET)
    assert not signature_ok(sign(body, SECRET), body + b" ", SECRET)
    assert not signature_ok(sign(body, SECRET, t=int(time.time()) - TOLERANCE - 1), body, SECRET)
    assert not signature_ok(f"t=x,v1={'0' * 64}", body, SECRET)


@pytest.mark.skipif(shutil.which("curl") is None or shutil.which("openssl") is None, reason="needs curl and openssl")
def test_the_readme_try_it_by_hand_block(receiver, secret_files):
    """The README's openssl + curl block, twice: 204 both times, handled once."""
    with open(os.path.join(WEBHOOKS, "README.md")) as f:
        (block,) = re.findall(r"^```bash\n(.*?)^```", f.read(), re.S | re.M)
    script = block.replace("team.secret", secret_files[0]).replace("localhost:8080", f"127.0.0.1:{receiver.port}")
    for _ in range(2):
        result = subprocess.run(["bash", "-euo", "pipefail", "-c", script], capture_output=True, text=True, timeout=30)
        assert result.returncode == 0 and result.stdout == "204\n", f"{result.stdout}{result.stderr}"
    assert receiver.next_line() == "evt-1 2000000000000001 #1 SUBSCRIPTION_EVENT_TYPE_RENEWAL"
    receiver.assert_nothing_else_handled()


def test_the_readme_run_commands_run_as_written(tmp_path, secret_files):
    """Every command of the README's `sh` block, with port 0 for 8080 and a temporary folder for /tmp: each
    receiver starts and handles an event. A receiver whose toolchain is not on PATH is left out."""
    os.symlink(os.path.join(ROOT, "examples"), tmp_path / "examples")
    shutil.copy(secret_files[0], tmp_path / "team.secret")
    binary = str(tmp_path / "go-receiver")
    commands = documented_commands("examples/webhooks/README.md")
    assert len([c for c in commands if "--port 8080" in c]) == 3
    started = []
    try:
        for command in commands:
            tool = "go" if "go build" in command or "webhook-receiver" in command else command.split()[0]
            if tool != "python3" and shutil.which(tool) is None:
                continue
            command = command.replace("--port 8080", "--port 0").replace(
                "/tmp/appstore-gateway-webhook-receiver", binary)
            if "--port" not in command:
                result = subprocess.run(["bash", "-c", command], cwd=tmp_path, capture_output=True, text=True,
                                        timeout=300, env={**os.environ, "GOPROXY": "off", "GOTOOLCHAIN": "local"})
                assert result.returncode == 0, f"{command}\n{result.stdout}{result.stderr}"
                continue
            started.append(Receiver(["bash", "-c", command], cwd=tmp_path))
            event = make_event()
            assert_2xx(started[-1].deliver(event), started[-1])
            started[-1].assert_handled(event)
    finally:
        for receiver in started:
            receiver.stop()
