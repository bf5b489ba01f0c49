"""Redis over TLS with an ACL user, against the real binary: a redis-server with TLS only (`--port 0
--tls-port …`, certificates made here with the openssl CLI) whose default user is off, and a gateway with
`redis.url: rediss://user:password@localhost:port/0` and `redis.caFile`. The shared rate budget and the Redis
notification store both work through it; a server whose certificate another CA issued is refused (the budget
falls back to its local share, the webhook answers 503); the password is never logged; check-config names a
missing `redis.caFile`."""
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
import urllib.parse
import urllib.request

import grpc
import pytest
import yaml

from appstore.gateway.v1 import gateway_pb2_grpc, history_pb2
from conftest import GATEWAY_BIN
from test_shared_budget import Redis, free_port
from test_webhook import Follower, WebhookGateway, follow_request

pytestmark = pytest.mark.skipif(
    shutil.which("redis-server") is None or shutil.which("openssl") is None,
    reason="redis-server or openssl not installed")

USER = "gateway-1"
PASSWORD = "p@ss:w/rd%"  # every character a URL must encode
INSPECTOR, INSPECTOR_PASSWORD = "inspector", "look"


def documented_acl():
    """The key pattern and commands docs/deploying.md gives the gateway's ACL user (the docs cannot drift)."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    with open(os.path.join(root, "docs", "deploying.md")) as f:
        match = re.search(r"`ACL SETUSER appstore-gateway on >PASSWORD ([^`]+)`", f.read())
    assert match, "docs/deploying.md lost its ACL SETUSER line"
    return match.group(1).split()


# The gateway's user has only the keys and commands the docs list; the test reads as INSPECTOR.
ACL = documented_acl()
URL_CREDENTIALS = f"{urllib.parse.quote(USER, safe='')}:{urllib.parse.quote(PASSWORD, safe='')}"


def openssl(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def make_ca(directory, name):
    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "1",
            "-keyout", f"{name}.key", "-out", f"{name}.pem", "-subj", f"/CN={name}",
            "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign",
            cwd=directory)
    return os.path.join(directory, f"{name}.pem")


class TLSRedis(Redis):
    """A TLS-only redis-server on a loopback port, with certificates from a CA made
    here (`ca`), and a second CA (`other_ca`) that issued nothing. The default user is off: the gateway's user has
the ACL docs/deploying.md gives, the test's own (INSPECTOR) everything."""

    def __init__(self):
        self.directory = tempfile.mkdtemp(prefix="gw-redis-tls-")
        self.ca = make_ca(self.directory, "ca")
        self.other_ca = make_ca(self.directory, "other-ca")
        with open(os.path.join(self.directory, "server.ext"), "w") as f:
            f.write("subjectAltName=DNS:localhost,IP:127.0.0.1\n")
        openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", "server.key",
                "-out", "server.csr", "-subj", "/CN=localhost", cwd=self.directory)
        openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
                "-days", "1", "-out", "server.pem", "-extfile", "server.ext", cwd=self.directory)
        port = free_port()
        super().__init__(port, [
            "--port", "0", "--tls-port", str(port),
            "--tls-cert-file", os.path.join(self.directory, "server.pem"),
            "--tls-key-file", os.path.join(self.directory, "server.key"),
            "--tls-ca-cert-file", self.ca, "--tls-auth-clients", "no",
            "--user", "default", "off", "--user", USER, "on", f">{PASSWORD}", *ACL,
            "--user", INSPECTOR, "on", f">{INSPECTOR_PASSWORD}", "~*", "+@all"])

    def url(self):
        return f"rediss://{URL_CREDENTIALS}@localhost:{self.port}/0"

    def cli(self, *command):
        """A command through redis-cli over TLS as INSPECTOR; its output lines."""
        answer = subprocess.run(
            ["redis-cli", "--tls", "--cacert", self.ca, "-h", "localhost", "-p", str(self.port), "--user", INSPECTOR,
             "--pass", INSPECTOR_PASSWORD, "--no-auth-warning", *command], capture_output=True, text=True,
            timeout=10)
        assert answer.returncode == 0, answer.stderr
        return answer.stdout.splitlines()


@pytest.fixture(scope="module")
def redis():
    server = TLSRedis()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def sim():
    from test_webhook import Simulator

    simulator = Simulator()
    yield simulator
    simulator.stop()


def tls_gateway(sim, redis, ca_file, reconcile="0"):
    settings = {"url": redis.url(), "caFile": ca_file, "timeout": "500ms", "fallbackShare": "1/3"}
    return WebhookGateway(sim, redis=redis, reconcile=reconcile, extra={"redis": settings})


def call_apple(sim, gateway):
    """One GetHistory (a token of the shared budget before Apple is called); its status code."""
    index = json.load(open(os.path.join(sim.directory, "transactions.json")))
    transaction = next(c["transactionId"] for c in index["com.example.app"]["Production"] if c["transactionId"])
    with grpc.insecure_channel(gateway.address) as channel:
        try:
            gateway_pb2_grpc.AppStoreGatewayStub(channel).GetHistory(
                history_pb2.GetHistoryRequest(transaction_id=transaction), timeout=10)
            return grpc.StatusCode.OK
        except grpc.RpcError as error:
            return error.code()


def metric(gateway, name):
    text = urllib.request.urlopen(gateway.admin_url + "/metrics", timeout=5).read().decode()
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith(name))


def test_the_budget_and_the_store_work_over_rediss_with_an_acl_user(sim, redis):
    # The reconciler runs too: a pass over Apple's history, then a prune of the stream and its index.
    gateway = tls_gateway(sim, redis, redis.ca, reconcile="1s")
    try:
        assert call_apple(sim, gateway) == grpc.StatusCode.OK
        follower = Follower(gateway, follow_request("DID_CHANGE_RENEWAL_PREF", start=time.time() - 1))
        time.sleep(1.0)
        delivered = sim.deliver(gateway.webhook, notificationType="DID_CHANGE_RENEWAL_PREF", count=2)
        assert [d["status"] for d in delivered] == [200] * 2
        assert follower.wait_for(2) == [d["notificationUUID"] for d in delivered]
        follower.cancel()
        # Both are in the TLS Redis's stream (with what the reconciler backfilled from Apple's history), and
        # the budget's buckets beside them.
        for notification in delivered:
            assert redis.cli("EXISTS", f"appstore-gateway:notification:{notification['notificationUUID']}") == ["1"]
        assert int(redis.cli("XLEN", "appstore-gateway:notifications")[0]) >= 2
        # The reconciler's prune ran as the restricted user too.
        deadline = time.time() + 10
        while not any(re.match(r"cmdstat_xtrim:calls=[1-9]", line) for line in redis.cli("INFO", "commandstats")):
            assert time.time() < deadline, "no prune ran"
            time.sleep(0.2)
        assert redis.cli("KEYS", "appstore-gateway:bucket:*"), "the shared budget wrote no bucket"
        assert metric(gateway, 'appstore_gateway_shared_budget_reservations_total{app="') > 0
        assert metric(gateway, "appstore_gateway_shared_budget_fallbacks_total") == 0
        assert metric(gateway, 'appstore_gateway_shared_budget_mode{mode="shared"}') == 1
    finally:
        gateway.stop()
    log = gateway.read_log()
    assert PASSWORD not in log and urllib.parse.quote(PASSWORD, safe="") not in log
    # Every command the gateway ran was within the documented ACL.
    assert "NOPERM" not in log and "cannot prune" not in log and "cannot reconcile" not in log, log


def test_a_server_certificate_from_another_ca_is_refused(sim, redis):
    gateway = tls_gateway(sim, redis, redis.other_ca)
    try:
        (refused,) = sim.deliver(gateway.webhook, notificationType="DID_CHANGE_RENEWAL_PREF", retries=False)
        assert refused["status"] == 503
        # The local share answers (at once, or RESOURCE_EXHAUSTED while shared slots could still be spent).
        assert call_apple(sim, gateway) in (grpc.StatusCode.OK, grpc.StatusCode.RESOURCE_EXHAUSTED)
        assert metric(gateway, "appstore_gateway_shared_budget_fallbacks_total") == 1
    finally:
        gateway.stop()
    log = gateway.read_log()
    warning = next(json.loads(line) for line in log.splitlines() if "Redis unreachable" in line)
    assert "certificate" in warning["problem"], warning
    assert warning["redis"] == f"rediss://{USER}:***@localhost:{redis.port}/0"
    assert PASSWORD not in log and urllib.parse.quote(PASSWORD, safe="") not in log


def test_check_config_names_a_missing_ca_file(sim, redis):
    config = json.loads(json.dumps(sim.config))
    config["redis"] = {"url": redis.url(), "caFile": "missing-ca.pem"}
    path = os.path.join(tempfile.mkdtemp(prefix="gw-redis-tls-cfg-"), "gateway.yaml")
    yaml.safe_dump(config, open(path, "w"))
    answer = subprocess.run([GATEWAY_BIN, "check-config", "--config", path], capture_output=True, text=True, timeout=30)
    assert answer.returncode == 1
    assert re.search(r"redis\.caFile.*missing-ca\.pem", answer.stdout), answer.stdout
    assert PASSWORD not in answer.stdout
