"""The notification webhook end to end: the simulator delivers signed App Store Server Notifications V2 to
the gateway's webhook the way Apple does; the gateway verifies, stores durably (SQLite or Redis) and streams
them to StreamNotifications followers (`follow`), with resume tokens that cover the live part."""
import base64
import glob
import json
import os
import pwd
import re
import shutil
import signal
import socket
import sqlite3
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.request

import grpc
import pytest
import requests
import yaml
from google.protobuf import timestamp_pb2

from appstore.gateway.v1 import common_pb2, gateway_pb2_grpc, notification_pb2
from conftest import GATEWAY_BIN, Gateway

HAVE_REDIS = shutil.which("redis-server") is not None


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Simulator:
    """A standalone simulator with two apps (the gateway is configured with the first only)."""

    def __init__(self, *extra_args):
        self.directory = tempfile.mkdtemp(prefix="gw-webhook-sim-")
        self.proc = subprocess.Popen(
            [GATEWAY_BIN, "simulator", "--listen", "127.0.0.1:0", "--state-dir", self.directory, "--seed", "5",
             "--customers", "3", "--apps", "2", *extra_args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            text=True)
        match = re.search(r"listening on (https://\S+)", self.proc.stdout.readline())
        if not match:
            self.proc.kill()
            raise RuntimeError("simulator did not start")
        self.url = match.group(1)
        self.ca = os.path.join(self.directory, "tls", "ca.pem")
        self.config = yaml.safe_load(open(os.path.join(self.directory, "gateway.yaml")))

    def deliver(self, url=None, headers=None, **body):
        """POST /simulator/notifications: new notifications recorded in history and delivered to `url`."""
        if url is not None:
            body["url"] = url
        answer = requests.post(self.url + "/simulator/notifications", json=body, verify=self.ca, timeout=30,
                               headers=headers or {})
        assert answer.status_code == 200, answer.text
        return answer.json()["notifications"]

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=10)


class Redis:
    """A throw-away redis-server on a loopback port."""

    def __init__(self):
        self.port = free_port()
        self.proc = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("redis-server did not start")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def postgres_binaries():
    """The directory of initdb, pg_ctl and postgres: Debian's newest version, else the one on PATH; None when absent."""
    versions = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"),
                      key=lambda path: int(path.split("/")[4]) if path.split("/")[4].isdigit() else 0, reverse=True)
    if versions:
        return os.path.dirname(versions[0])
    initdb = shutil.which("initdb")
    return os.path.dirname(initdb) if initdb else None


HAVE_POSTGRES = postgres_binaries() is not None


class Postgres:
    """A throw-away PostgreSQL on a loopback port: initdb into a directory of its own (trust authentication, or
    SCRAM with `password`), fsync off, the Unix socket in that directory too; `stop(immediate=True)` crashes it,
    `start()` brings it back on the same port and data. The server refuses to run as root, so as root its programs
    run as the `postgres` user (or `nobody`) in a directory under /tmp that user can reach."""

    def __init__(self, password=None):
        self.bin = postgres_binaries()
        if self.bin is None:
            raise RuntimeError("PostgreSQL's server programs are not installed")
        self.port = free_port()
        self.password = password
        self.user = "postgres"
        self.owner = None
        if os.geteuid() == 0:
            for name in ("postgres", "nobody"):
                try:
                    entry = pwd.getpwnam(name)
                    self.owner = (entry.pw_uid, entry.pw_gid)
                    break
                except KeyError:
                    continue
        self.directory = tempfile.mkdtemp(prefix="gw-pg-", dir="/tmp" if self.owner else None)
        self.data = os.path.join(self.directory, "data")
        if self.owner:
            os.chown(self.directory, *self.owner)
        arguments = ["-D", self.data, "-U", self.user, "--no-sync", "-E", "UTF8", "--locale=C"]
        if password is None:
            arguments.append("--auth=trust")
        else:
            path = os.path.join(self.directory, "password")
            with open(path, "w") as f:
                f.write(password)
            if self.owner:
                os.chown(path, *self.owner)
            arguments += ["--auth-local=trust", "--auth-host=scram-sha-256", "--pwfile=" + path]
        try:
            self._run("initdb", *arguments)
            self.start()
        except Exception:
            shutil.rmtree(self.directory, ignore_errors=True)
            raise

    @property
    def url(self):
        """A URI for the `postgres` database (with the password, when there is one)."""
        credentials = f"{self.user}:{self.password}" if self.password else self.user
        return f"postgresql://{credentials}@127.0.0.1:{self.port}/postgres"

    def _run(self, program, *arguments):
        extra = {}
        if self.owner:
            extra = {"user": self.owner[0], "group": self.owner[1], "extra_groups": []}
        done = subprocess.run([os.path.join(self.bin, program), *arguments], cwd=self.directory,
                              stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120, **extra)
        if done.returncode != 0:
            raise RuntimeError(f"{program} failed: {done.stdout}{done.stderr}")
        return done.stdout

    def start(self):
        options = (f"-p {self.port} -k {self.directory} -c listen_addresses=127.0.0.1 -c fsync=off "
                   "-c full_page_writes=off -c max_connections=200")
        self._run("pg_ctl", "-D", self.data, "-l", os.path.join(self.directory, "log"), "-w", "-t", "60",
                  "-o", options, "start")

    def stop(self, immediate=False):
        """Stops the server (`immediate`: as a crash does); the data stays for `start()`."""
        if os.path.exists(os.path.join(self.data, "postmaster.pid")):
            self._run("pg_ctl", "-D", self.data, "-m", "immediate" if immediate else "fast", "-w", "stop")

    def psql(self, sql):
        """Runs `sql` with psql over TCP and returns its unaligned output."""
        env = dict(os.environ, PGPASSWORD=self.password or "")
        done = subprocess.run([os.path.join(self.bin, "psql"), "-h", "127.0.0.1", "-p", str(self.port), "-U",
                               self.user, "-d", "postgres", "-At", "-v", "ON_ERROR_STOP=1", "-c", sql],
                              stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60, env=env)
        if done.returncode != 0:
            raise RuntimeError(f"psql failed: {done.stderr}")
        return done.stdout.strip()

    def close(self):
        try:
            self.stop(immediate=True)
        finally:
            shutil.rmtree(self.directory, ignore_errors=True)


@pytest.fixture(scope="module")
def sim():
    simulator = Simulator()
    yield simulator
    simulator.stop()


class WebhookGateway(Gateway):
    """A gateway with the webhook on a free port; `webhook` is its URL."""

    def __init__(self, sim, database=None, redis=None, reconcile="0", extra=None, postgres=None, store_extra=None,
                 notifications_extra=None):
        config = json.loads(json.dumps(sim.config))
        config["apps"] = config["apps"][:1]
        store = {"reconcileInterval": reconcile, **(store_extra or {})}
        if postgres is not None:
            store["postgres"] = postgres
        elif redis is not None:
            config["redis"] = {"url": f"redis://127.0.0.1:{redis.port}/0", "timeout": "200ms"}
            store["redis"] = True
        else:
            store["sqlite"] = database
        config.setdefault("notifications", {}).update(
            {"webhook": {"listen": "127.0.0.1:0", "path": "/apple/notifications"}, "store": store,
             **(notifications_extra or {})})
        for key, value in (extra or {}).items():
            config[key] = value
        path = os.path.join(tempfile.mkdtemp(prefix="gw-webhook-cfg-"), "gateway.yaml")
        yaml.safe_dump(config, open(path, "w"))
        self.config_path = path
        super().__init__(["--config", path])
        line = self.proc.stdout.readline()
        match = re.search(r"webhook on (http://\S+)", line or "")
        if not match:
            self.stop()
            raise RuntimeError(f"no webhook line: {line!r}\n{self.read_log()}")
        self.webhook = match.group(1)

    def post(self, body, content_type="application/json"):
        request = urllib.request.Request(self.webhook, data=body, method="POST", headers={"content-type": content_type})
        try:
            with urllib.request.urlopen(request, timeout=10) as answer:
                return answer.status, answer.read().decode()
        except urllib.error.HTTPError as error:
            return error.code, error.read().decode()

    def metrics(self):
        return urllib.request.urlopen(self.admin_url + "/metrics", timeout=5).read().decode()


def database_path():
    return os.path.join(tempfile.mkdtemp(prefix="gw-webhook-db-"), "notifications.db")


def timestamp(seconds):
    value = timestamp_pb2.Timestamp()
    value.FromMilliseconds(int(seconds * 1000))
    return value


def follow_request(notification_type, start=None, **fields):
    return notification_pb2.StreamNotificationsRequest(
        start_date=timestamp(start if start is not None else time.time() - 120), follow=True,
        environment=common_pb2.ENVIRONMENT_SANDBOX, notification_type=notification_type, **fields)


class Follower:
    """A grpcio StreamNotifications follower collecting events on a thread."""

    def __init__(self, gateway, request, timeout=60):
        self.channel = grpc.insecure_channel(gateway.address)
        stub = gateway_pb2_grpc.AppStoreGatewayStub(self.channel)
        self.call = stub.StreamNotifications(request, timeout=timeout)
        self.events = []
        self.error = None
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        try:
            for event in self.call:
                self.events.append(event)
        except grpc.RpcError as error:
            self.error = error

    def uuids(self):
        return [e.notification.notification_uuid for e in self.events]

    def wait_for(self, count, timeout=20):
        deadline = time.time() + timeout
        while len(self.events) < count and time.time() < deadline and self.thread.is_alive():
            time.sleep(0.05)
        assert len(self.events) >= count, (self.uuids(), self.error)
        return self.uuids()

    def cancel(self):
        self.call.cancel()
        self.thread.join(timeout=10)
        self.channel.close()


def stored_uuids(database):
    with sqlite3.connect(database) as db:
        return [row[0] for row in db.execute("SELECT uuid FROM notifications ORDER BY position")]


def test_delivered_notifications_reach_two_followers_in_order_once(sim):
    gw = WebhookGateway(sim, database_path())
    try:
        followers = [Follower(gw, follow_request("REFUND_DECLINED")) for _ in range(2)]
        time.sleep(0.5)
        delivered = sim.deliver(gw.webhook, notificationType="REFUND_DECLINED", count=5)
        assert [d["status"] for d in delivered] == [200] * 5
        expected = [d["notificationUUID"] for d in delivered]
        for follower in followers:
            assert follower.wait_for(5) == expected
        time.sleep(0.5)  # nothing more arrives: no duplicate from Apple's history or the store
        for follower in followers:
            assert follower.uuids() == expected
            assert all(e.resume_token for e in follower.events)
            assert all(e.notification.notification_type_raw == "REFUND_DECLINED" for e in follower.events)
            follower.cancel()
        text = gw.metrics()
        assert re.search(r'appstore_gateway_notifications_stored_total\{app="example",source="webhook"\} 5', text)
        assert "appstore_gateway_webhook_verified_total 5" in text
    finally:
        gw.stop()


def test_with_online_checks_a_delivery_fetches_its_ocsp_status_and_is_stored_and_streamed(sim):
    """verification.onlineChecks on a fresh gateway: no revocation status is cached when the first notification
    arrives, so the webhook fetches it from the simulator's responder rather than refusing the body."""
    verification = dict(sim.config.get("verification") or {}, onlineChecks=True, ocspTimeout="2s")
    gw = WebhookGateway(sim, database_path(), extra={"verification": verification})
    try:
        follower = Follower(gw, follow_request("REFUND_REVERSED"))
        time.sleep(0.5)
        delivered = sim.deliver(gw.webhook, notificationType="REFUND_REVERSED", count=2)
        assert [d["status"] for d in delivered] == [200] * 2
        assert follower.wait_for(2) == [d["notificationUUID"] for d in delivered]
        follower.cancel()
    finally:
        gw.stop()


def test_catch_up_merges_apples_history_with_the_store_each_notification_once(sim):
    database = database_path()
    gw = WebhookGateway(sim, database)
    try:
        start = time.time() - 1
        delivered = sim.deliver(gw.webhook, notificationType="RENEWAL_EXTENDED", count=3)
        # Recorded in Apple's history only (never reached the webhook): the catch-up finds it there.
        apple_only = sim.deliver(notificationType="RENEWAL_EXTENDED", url=gw.webhook, deliver=False)
        follower = Follower(gw, follow_request("RENEWAL_EXTENDED", start=start))
        uuids = follower.wait_for(4)
        time.sleep(0.5)
        assert sorted(follower.uuids()) == sorted([d["notificationUUID"] for d in delivered + apple_only])
        assert len(set(follower.uuids())) == len(follower.uuids())
        dates = [e.notification.signed_date.ToMilliseconds() for e in follower.events]
        assert dates == sorted(dates)
        follower.cancel()
    finally:
        gw.stop()


def test_a_duplicate_delivery_is_answered_200_stored_once_and_streamed_once(sim):
    database = database_path()
    gw = WebhookGateway(sim, database)
    try:
        (recorded,) = sim.deliver(gw.webhook, notificationType="PRICE_CHANGE", deliver=False)
        follower = Follower(gw, follow_request("PRICE_CHANGE", start=time.time() - 1))
        time.sleep(1.0)
        body = json.dumps({"signedPayload": recorded["signedPayload"]}).encode()
        first, text1 = gw.post(body)
        second, text2 = gw.post(body)
        assert (first, second) == (200, 200), (text1, text2)
        assert "already" in text2
        assert stored_uuids(database).count(recorded["notificationUUID"]) == 1
        follower.wait_for(1)
        time.sleep(0.5)
        assert follower.uuids() == [recorded["notificationUUID"]]
        follower.cancel()
        assert 'appstore_gateway_notifications_duplicates_total{app="example"} 1' in gw.metrics()
    finally:
        gw.stop()


def test_garbage_forged_and_foreign_notifications_are_refused_and_never_streamed(sim):
    database = database_path()
    gw = WebhookGateway(sim, database)
    try:
        follower = Follower(gw, follow_request("METADATA_UPDATE", start=time.time() - 1))
        time.sleep(1.0)
        for body in [b"", b"not json", b"{}", b'{"signedPayload": 5}', b'{"signedPayload": "a.b.c"}',
                     b'[{"signedPayload": "x"}]', b'{"signedPayload": "x", "signedPayload": "y"}', b"{" * 5000]:
            status, text = gw.post(body)
            assert status == 400, (body[:40], status, text)
        (recorded,) = sim.deliver(gw.webhook, notificationType="METADATA_UPDATE", deliver=False)
        header, payload, signature = recorded["signedPayload"].split(".")
        claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
        claims["notificationUUID"] = "00000000-0000-4000-8000-000000000000"
        forged_payload = base64.urlsafe_b64encode(json.dumps(claims).encode()).rstrip(b"=").decode()
        forged = ".".join([header, forged_payload, signature])
        status, _ = gw.post(json.dumps({"signedPayload": forged}).encode())
        assert status == 400
        # A genuine notification of the simulator's second app, which this gateway is not configured for.
        foreign = sim.deliver(gw.webhook, notificationType="METADATA_UPDATE", bundleId=sim.config["apps"][1]["bundleId"],
                              retries=False)
        assert [d["status"] for d in foreign] == [403]
        # Too large a body is refused before it is read whole.
        status, _ = gw.post(b'{"signedPayload": "' + b"a" * 70_000 + b'"}')
        assert status == 413
        status, _ = gw.post(b"{}", content_type="text/plain")
        assert status == 400
        time.sleep(0.5)
        assert follower.uuids() == []
        assert stored_uuids(database) == []
        follower.cancel()
        text = gw.metrics()
        assert re.search(r'appstore_gateway_webhook_rejected_total\{reason="unknown_app"\} 1', text)
        assert re.search(r'appstore_gateway_webhook_rejected_total\{reason="verification"\} [1-9]', text)
    finally:
        gw.stop()


def test_a_notification_answered_200_survives_sigkill(sim):
    database = database_path()
    gw = WebhookGateway(sim, database)
    try:
        (delivered,) = sim.deliver(gw.webhook, notificationType="MIGRATION")
        assert delivered["status"] == 200
        gw.proc.send_signal(signal.SIGKILL)
        gw.proc.wait()
    finally:
        gw.stop()
    assert delivered["notificationUUID"] in stored_uuids(database)
    again = WebhookGateway(sim, database)
    try:
        follower = Follower(again, follow_request("MIGRATION", start=time.time() - 60))
        assert follower.wait_for(1) == [delivered["notificationUUID"]]
        follower.cancel()
    finally:
        again.stop()


def test_notifications_sent_while_the_receiver_was_down_are_backfilled(sim):
    database = database_path()
    closed = f"http://127.0.0.1:{free_port()}/apple/notifications"
    missed = sim.deliver(closed, notificationType="REVOKE", count=2, retries=False)
    assert [d["status"] for d in missed] == [0, 0]
    gw = WebhookGateway(sim, database, reconcile="1s")
    try:
        deadline = time.time() + 20
        while time.time() < deadline and not set(d["notificationUUID"] for d in missed) <= set(stored_uuids(database)):
            time.sleep(0.2)
        assert set(d["notificationUUID"] for d in missed) <= set(stored_uuids(database))
        assert re.search(r'appstore_gateway_notifications_backfilled_total\{app="example"\} [1-9]', gw.metrics())
    finally:
        gw.stop()


def old_notification(gw, older_than_days=31):
    """A genuine notification signed long ago: the oldest of the simulator's production history, through `gw`."""
    stub = gateway_pb2_grpc.AppStoreGatewayStub(grpc.insecure_channel(gw.address))
    request = notification_pb2.StreamNotificationsRequest(
        start_date=timestamp(time.time() - 179 * 86_400), end_date=timestamp(time.time()),
        environment=common_pb2.ENVIRONMENT_PRODUCTION)
    cutoff = (time.time() - older_than_days * 86_400) * 1000
    for event in stub.StreamNotifications(request, timeout=60):
        if event.notification.signed_date.ToMilliseconds() < cutoff:
            return event
    raise AssertionError("the simulator's history holds no notification that old")


def test_a_genuine_notification_replayed_after_the_retention_is_answered_200_and_neither_stored_nor_streamed(sim):
    database = database_path()
    gw = WebhookGateway(sim, database)  # retention: the default 30d
    try:
        old = old_notification(gw)
        kind = old.notification.notification_type_raw
        follower = Follower(gw, notification_pb2.StreamNotificationsRequest(
            start_date=timestamp(time.time() - 1), follow=True, environment=common_pb2.ENVIRONMENT_PRODUCTION,
            notification_type=kind))
        time.sleep(1.0)
        status, text = gw.post(json.dumps({"signedPayload": old.signed_payload}).encode())
        assert status == 200, text
        assert "not stored" in text
        assert old.notification.notification_uuid not in stored_uuids(database)
        # A fresh one delivered after it is the first (and only) thing the follower sees.
        (fresh,) = sim.deliver(gw.webhook, notificationType=kind, environment="Production")
        assert fresh["status"] == 200
        assert follower.wait_for(1) == [fresh["notificationUUID"]]
        follower.cancel()
        assert stored_uuids(database) == [fresh["notificationUUID"]]
        assert 'appstore_gateway_notifications_stale_total{app="example",source="webhook"} 1' in gw.metrics()
    finally:
        gw.stop()


def test_with_reconcile_interval_0_entries_past_the_retention_are_still_pruned(sim):
    database = database_path()
    gw = WebhookGateway(sim, database, reconcile="0")
    try:
        (kept,) = sim.deliver(gw.webhook, notificationType="RENEWAL_EXTENDED")
        (expired,) = sim.deliver(gw.webhook, notificationType="RENEWAL_EXTENDED")
        assert [kept["status"], expired["status"]] == [200, 200]
    finally:
        gw.stop()
    # As if it had arrived 31 days ago (the retention is the default 30d).
    with sqlite3.connect(database) as db:
        db.execute("UPDATE notifications SET received_at = received_at - ? WHERE uuid = ?",
                   (31 * 86_400_000, expired["notificationUUID"]))
    again = WebhookGateway(sim, database, reconcile="0")
    try:
        deadline = time.time() + 20
        while time.time() < deadline and expired["notificationUUID"] in stored_uuids(database):
            time.sleep(0.1)
        assert stored_uuids(database) == [kept["notificationUUID"]]
    finally:
        again.stop()


def test_a_follower_resuming_from_its_last_token_misses_nothing_and_repeats_nothing(sim):
    gw = WebhookGateway(sim, database_path())
    try:
        request = follow_request("CONSUMPTION_REQUEST", start=time.time() - 1)
        follower = Follower(gw, request)
        time.sleep(1.0)
        first = sim.deliver(gw.webhook, notificationType="CONSUMPTION_REQUEST", count=3)
        follower.wait_for(3)
        token = follower.events[1].resume_token  # the caller processed two, then went away
        follower.cancel()
        later = sim.deliver(gw.webhook, notificationType="CONSUMPTION_REQUEST", count=2)
        resumed_request = notification_pb2.StreamNotificationsRequest()
        resumed_request.CopyFrom(request)
        resumed_request.resume_token = token
        resumed = Follower(gw, resumed_request)
        expected = [d["notificationUUID"] for d in first[2:] + later]
        assert resumed.wait_for(3) == expected
        time.sleep(0.5)
        assert resumed.uuids() == expected
        resumed.cancel()
        # Another filter's token is refused.
        other = follow_request("REVOKE", resume_token=token)
        with pytest.raises(grpc.RpcError) as refused:
            gateway_pb2_grpc.AppStoreGatewayStub(grpc.insecure_channel(gw.address)).StreamNotifications(other, timeout=5).next()
        assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    finally:
        gw.stop()


def test_a_failed_delivery_is_retried_on_apples_schedule_compressed(sim):
    database = database_path()
    gw = WebhookGateway(sim, database)
    try:
        # The first try is reset (x-simulator-fault applies to deliveries); Apple's retry after "1 hour"
        # comes 3.6 ms later with a time factor of 10^6 and is stored.
        (retried,) = sim.deliver(gw.webhook, headers={"x-simulator-fault": "reset"}, notificationType="ONE_TIME_CHARGE",
                                 timeFactor=1_000_000)
        assert retried["status"] == 0
        deadline = time.time() + 10
        while time.time() < deadline and retried["notificationUUID"] not in stored_uuids(database):
            time.sleep(0.05)
        assert retried["notificationUUID"] in stored_uuids(database)
        # Without retries, a reset delivery never arrives.
        (lost,) = sim.deliver(gw.webhook, headers={"x-simulator-fault": "reset"}, notificationType="ONE_TIME_CHARGE",
                              retries=False)
        time.sleep(0.5)
        assert lost["status"] == 0 and lost["notificationUUID"] not in stored_uuids(database)
    finally:
        gw.stop()


def test_follow_without_a_webhook_is_invalid_argument(gateway):
    stub = gateway_pb2_grpc.AppStoreGatewayStub(grpc.insecure_channel(gateway.address))
    with pytest.raises(grpc.RpcError) as refused:
        stub.StreamNotifications(follow_request("TEST"), timeout=5).next()
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "webhook" in refused.value.details()


@pytest.mark.skipif(not HAVE_REDIS, reason="redis-server not installed")
def test_two_gateways_share_the_redis_store_and_an_unavailable_store_is_503(sim):
    redis = Redis()
    a = WebhookGateway(sim, redis=redis)
    b = WebhookGateway(sim, redis=redis)
    try:
        follower = Follower(b, follow_request("DID_CHANGE_RENEWAL_PREF", start=time.time() - 1))
        time.sleep(1.0)
        delivered = sim.deliver(a.webhook, notificationType="DID_CHANGE_RENEWAL_PREF", count=3)
        assert [d["status"] for d in delivered] == [200] * 3
        assert follower.wait_for(3) == [d["notificationUUID"] for d in delivered]
        # The same notification at the other replica: already stored there too.
        status, text = b.post(json.dumps({"signedPayload": delivered[0]["signedPayload"]}).encode())
        assert status == 200 and "already" in text
        time.sleep(0.5)
        assert len(follower.uuids()) == 3
        follower.cancel()
        redis.stop()
        (refused,) = sim.deliver(a.webhook, notificationType="DID_CHANGE_RENEWAL_PREF", retries=False)
        assert refused["status"] == 503
        assert re.search(r'appstore_gateway_webhook_rejected_total\{reason="store_unavailable"\} 1', a.metrics())
    finally:
        a.stop()
        b.stop()
        redis.stop()


def test_entitlements_with_the_redis_store_are_refused_at_start(sim):
    """The Redis store keeps no subscription state: asking for entitlements there refuses the start, naming the key,
    instead of a gateway whose state calls all fail."""
    config = json.loads(json.dumps(sim.config))
    config["apps"] = config["apps"][:1]
    config["apps"][0]["entitlements"] = {"premium": [config["apps"][0]["bundleId"] + ".premium.monthly"]}
    config["redis"] = {"url": "redis://127.0.0.1:9/0"}
    config["notifications"] = {"webhook": {"listen": "127.0.0.1:0"}, "store": {"redis": True}}
    path = os.path.join(tempfile.mkdtemp(prefix="gw-redis-state-"), "gateway.yaml")
    yaml.safe_dump(config, open(path, "w"))
    done = subprocess.run([GATEWAY_BIN, "serve", "--config", path, "--listen", "127.0.0.1:0"], capture_output=True,
                          text=True, timeout=60, env=dict(os.environ, APPSTORE_GATEWAY_ADMIN="127.0.0.1:0"))
    assert done.returncode != 0
    assert "apps[0].entitlements" in done.stdout + done.stderr and "Redis" in done.stdout + done.stderr


def test_request_a_test_notification_delivers_it_to_the_webhook():
    """The simulator with --webhook-url delivers the TEST notification of Request a Test Notification."""
    from appstoreserverlibrary.api_client import AppStoreServerAPIClient
    from appstoreserverlibrary.models.Environment import Environment

    port = free_port()
    directory = tempfile.mkdtemp(prefix="gw-webhook-test-notification-")
    simulator = subprocess.Popen(
        [GATEWAY_BIN, "simulator", "--listen", "127.0.0.1:0", "--state-dir", directory, "--seed", "9", "--customers", "2",
         "--webhook-url", f"http://127.0.0.1:{port}/apple/notifications"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    match = re.search(r"listening on (https://\S+)", simulator.stdout.readline())
    assert match
    database = database_path()
    config = yaml.safe_load(open(os.path.join(directory, "gateway.yaml")))
    config["notifications"] = {"webhook": {"listen": f"127.0.0.1:{port}"},
                               "store": {"sqlite": database, "reconcileInterval": "0"}}
    path = os.path.join(directory, "webhook.yaml")
    yaml.safe_dump(config, open(path, "w"))
    gw = Gateway(["--config", path])
    try:
        app = config["apps"][0]
        key = open(app["privateKeyFile"], "rb").read()
        client = AppStoreServerAPIClient(key, app["keyId"], app["issuerId"], app["bundleId"], Environment.SANDBOX)
        client._base_url = match.group(1) + "/sandbox"
        os.environ["REQUESTS_CA_BUNDLE"] = os.path.join(directory, "tls", "ca.pem")
        try:
            token = client.request_test_notification().testNotificationToken
        finally:
            os.environ.pop("REQUESTS_CA_BUNDLE", None)
        assert token
        deadline = time.time() + 15
        while time.time() < deadline and not stored_uuids(database):
            time.sleep(0.1)
        with sqlite3.connect(database) as db:
            rows = db.execute("SELECT notification_type, environment FROM notifications").fetchall()
        assert rows == [("TEST", "Sandbox")]
    finally:
        gw.stop()
        simulator.terminate()
        simulator.wait(timeout=10)


@pytest.mark.skipif(not HAVE_POSTGRES, reason="PostgreSQL's server programs are not installed")
def test_a_throw_away_postgres_starts_crashes_and_returns():
    """The interop suites' PostgreSQL (for the fleet's shared state, issue 48): it answers, survives an immediate
    stop with its data, and a password server refuses a wrong password."""
    server = Postgres()
    try:
        server.psql("CREATE TABLE kept (id int PRIMARY KEY); INSERT INTO kept VALUES (7)")
        assert server.psql("SELECT 1 + 1") == "2"
        server.stop(immediate=True)
        with pytest.raises(RuntimeError):
            server.psql("SELECT 1")
        server.start()
        assert server.psql("SELECT id FROM kept") == "7"
    finally:
        server.close()
    assert not os.path.exists(server.directory)
    secured = Postgres(password="s3cret")
    try:
        assert secured.psql("SELECT current_user") == "postgres"
        assert "s3cret" in secured.url
        secured.password = "wrong"
        with pytest.raises(RuntimeError):
            secured.psql("SELECT 1")
    finally:
        secured.close()
