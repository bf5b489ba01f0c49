"""What reaches the ports before any RPC, black-box: sockets that never finish their handshake (TLS) or never
send the HTTP/2 preface are closed by `connection.handshakeTimeout` and never fill `limits.maxConnections`; TLS
sessions with client certificates resume (OpenSSL's client, TLS 1.2 and 1.3, and grpcio) and keep the
identity of the certificate verified when they were made; a change of the client CAs ends every session; no
session resumes past its client certificate's expiry or `tls.sessionMaxAge` after its first full handshake."""
import os
import re
import socket
import subprocess
import time
import urllib.error
import urllib.request
from datetime import datetime, timedelta, timezone

import grpc
import h2.events
import pytest
import yaml
from grpc_health.v1 import health_pb2, health_pb2_grpc

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from appstore.gateway.v1 import gateway_pb2_grpc
from conftest import Gateway
from test_callers import (SPIFFE, gateway_config, history, make_ca, pem, refused, tls_channel,  # noqa: F401
                          wait_until, world)

SILENT = 3


def metric(gw, name, **labels):
    """The value of one sample of the gateway's /metrics (0 when the series does not exist yet)."""
    text = urllib.request.urlopen(gw.admin_url + "/metrics", timeout=5).read().decode()
    wanted = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        match = re.match(r"([a-z_]+)(?:\{([^}]*)\})? (\S+)$", line)
        if match and match.group(1) == name:
            have = ",".join(sorted((match.group(2) or "").split(","))) if match.group(2) else ""
            if have == wanted:
                return float(match.group(3))
    return 0.0


def silent_sockets(port, count=SILENT):
    """TCP connections that send nothing at all (no ClientHello, no preface)."""
    return [socket.create_connection(("127.0.0.1", port), timeout=5) for _ in range(count)]


def closed_by_server(sock, timeout):
    """True when the server closes `sock` within `timeout` seconds (EOF or reset), False if it stays open. What
    the server sends first (its HTTP/2 SETTINGS) is read and dropped."""
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            sock.settimeout(max(0.01, deadline - time.monotonic()))
            if sock.recv(4096) == b"":
                return True
    except (ConnectionResetError, BrokenPipeError):
        return True
    except socket.timeout:
        pass
    return False


def health(channel):
    answer = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(service=""), timeout=5)
    return answer.status == health_pb2.HealthCheckResponse.SERVING


# --- handshake deadlines ----------------------------------------------------------------------------------

EDGE_ENV = {"APPSTORE_GATEWAY_LIMITS_MAX_CONNECTIONS": str(SILENT),
            "APPSTORE_GATEWAY_CONNECTION_HANDSHAKE_TIMEOUT": "1500ms"}


def test_silent_h2c_sockets_neither_lock_callers_out_nor_live_past_the_deadline(fresh_gateway):
    gw = fresh_gateway(env=EDGE_ENV)
    sockets = silent_sockets(gw.port)
    try:
        time.sleep(0.3)  # accepted and waiting for their preface
        assert metric(gw, "appstore_gateway_pending_handshakes", port="grpc") == SILENT
        channel = grpc.insecure_channel(gw.address)
        try:
            assert health(channel)  # the cap counts established connections only
        finally:
            channel.close()
        for sock in sockets:
            assert closed_by_server(sock, timeout=10)
        assert metric(gw, "appstore_gateway_handshake_deadline_closes_total", port="grpc",
                      deadline="http2_preface") == SILENT
        assert metric(gw, "appstore_gateway_pending_handshakes", port="grpc") == 0
    finally:
        for sock in sockets:
            sock.close()


def test_silent_tls_sockets_neither_lock_mtls_callers_out_nor_live_past_the_deadline(world):
    gw = Gateway(["--config", gateway_config(world, "edge-tls", client_ca=True)], env=EDGE_ENV)
    sockets = silent_sockets(gw.port)
    channel = tls_channel(world, gw, "spiffe")
    try:
        time.sleep(0.3)
        assert history(gateway_pb2_grpc.AppStoreGatewayStub(channel), world).transactions
        for sock in sockets:
            assert closed_by_server(sock, timeout=10)
        assert metric(gw, "appstore_gateway_handshake_deadline_closes_total", port="grpc",
                      deadline="tls_handshake") == SILENT
    finally:
        channel.close()
        for sock in sockets:
            sock.close()
        gw.stop()


def test_a_tls_client_that_stalls_after_its_handshake_meets_the_preface_deadline(world):
    import ssl

    gw = Gateway(["--config", gateway_config(world, "edge-preface", jwt=True)], env=EDGE_ENV)
    try:
        context = ssl.create_default_context(cafile=world["files"]["ca.pem"])
        context.set_alpn_protocols(["h2"])
        with context.wrap_socket(socket.create_connection(("127.0.0.1", gw.port), timeout=5),
                                 server_hostname="localhost") as tls:
            assert tls.selected_alpn_protocol() == "h2"
            tls.settimeout(10)
            started = time.monotonic()
            try:
                while tls.recv(4096):  # the server's SETTINGS, then EOF
                    pass
            except (ConnectionResetError, ssl.SSLError):
                pass
            assert time.monotonic() - started < 8
        assert metric(gw, "appstore_gateway_handshake_deadline_closes_total", port="grpc",
                      deadline="http2_preface") == 1
    finally:
        gw.stop()


# --- session resumption with client certificates ----------------------------------------------------------

@pytest.fixture(scope="module")
def resumption(world, tmp_path_factory):
    """An mTLS gateway whose client CA file the test may rewrite, and the SPIFFE client's key and certificate
    as files for OpenSSL's command-line client."""
    directory = tmp_path_factory.mktemp("resume")
    ca_file = directory / "clients.pem"
    ca_file.write_bytes(pem(world["ca"][1]))
    config = yaml.safe_load(open(gateway_config(world, "resume", client_ca=True)))
    config["tls"]["clientCAFile"] = str(ca_file)
    path = directory / "resume.yaml"
    yaml.safe_dump(config, open(path, "w"))
    key, cert = world["clients"]["spiffe"]
    (directory / "client.key").write_bytes(key)
    (directory / "client.pem").write_bytes(cert)
    gw = Gateway(["--config", str(path)])
    yield {"gw": gw, "dir": directory, "ca_file": ca_file}
    gw.stop()


def s_client(world, resumption, version, *session, client="client"):
    """OpenSSL's client as the SPIFFE caller (or with the certificate and key `dir/<client>.pem` and `.key`)."""
    directory = resumption["dir"]
    command = ["openssl", "s_client", "-connect", f"127.0.0.1:{resumption['gw'].port}", version,
               "-CAfile", world["files"]["ca.pem"], "-servername", "localhost", "-alpn", "h2",
               "-cert", str(directory / f"{client}.pem"), "-key", str(directory / f"{client}.key"), *session]
    # TLS 1.3 tickets arrive after the handshake: keep stdin open a moment so s_client reads them.
    result = subprocess.run(["bash", "-c", 'sleep 0.5 | "$@"', "s_client"] + command, capture_output=True,
                            text=True, timeout=20)
    return result.stdout + result.stderr


def test_a_tls12_session_resumed_by_id_is_never_written_and_its_new_ticket_only_leads_to_a_full_handshake(
        world, resumption):
    """A TLS 1.2 session resumed by id is the session cache's own object, shared by every loop: a ticket issued on
    such a resumption must not write its origin into it (concurrent resumptions would race on it; the ticket then
    carries no origin, so it only ever leads to a full handshake). Resumptions by id, one after another and many at
    once, are served from the cached session unchanged."""
    directory = resumption["dir"]
    by_id = directory / "by-id.pem"
    first = s_client(world, resumption, "-tls1_2", "-no_ticket", "-sess_out", str(by_id))
    assert re.search(r"^New,", first, re.M), first
    ticketed = directory / "ticket-after-id.pem"
    # Resumed by id (the cached session), offering an empty ticket extension: the gateway issues a ticket.
    resumed = s_client(world, resumption, "-tls1_2", "-sess_in", str(by_id), "-sess_out", str(ticketed))
    assert re.search(r"^Reused,", resumed, re.M), resumed
    assert "alert internal error" not in resumed
    # Resuming by id still works: the cached session was left as it was.
    again = s_client(world, resumption, "-tls1_2", "-no_ticket", "-sess_in", str(by_id))
    assert re.search(r"^Reused,", again, re.M), again
    # Many id resumptions at once, each offered a ticket, all on the one cached session: each is served.
    import concurrent.futures

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        outputs = list(pool.map(lambda i: s_client(world, resumption, "-tls1_2", "-sess_in", str(by_id)), range(16)))
    for output in outputs:
        assert re.search(r"^Reused,", output, re.M) and "alert internal error" not in output, output


@pytest.mark.parametrize("version", ["-tls1_2", "-tls1_3"])
def test_openssl_resumes_a_session_with_its_client_certificate(world, resumption, version):
    session = resumption["dir"] / f"session{version}.pem"
    first = s_client(world, resumption, version, "-sess_out", str(session))
    assert "Verify return code: 0" in first and re.search(r"^New,", first, re.M), first
    second = s_client(world, resumption, version, "-sess_in", str(session))
    assert "alert internal error" not in second
    assert re.search(r"^Reused,", second, re.M), second
    assert metric(resumption["gw"], "appstore_gateway_tls_handshakes_total", port="grpc", resumed="true") >= 1


def test_grpcio_resumes_and_the_resumed_session_keeps_its_caller(world, resumption):
    gw = resumption["gw"]
    from grpc.experimental import session_cache

    cache = session_cache.ssl_session_cache_lru(8)
    key, cert = world["clients"]["spiffe"]
    credentials = grpc.ssl_channel_credentials(root_certificates=open(world["files"]["ca.pem"], "rb").read(),
                                               private_key=key, certificate_chain=cert)
    before = metric(gw, "appstore_gateway_tls_handshakes_total", port="grpc", resumed="true")
    for _ in range(3):
        # A new channel each time: a new connection, which resumes the session the cache holds (grpc keys its
        # cache by the server name it sends, so the channel names one rather than an address).
        channel = grpc.secure_channel(gw.address, credentials, options=[
            ("grpc.ssl_session_cache", cache), ("grpc.ssl_target_name_override", "localhost")])
        try:
            stub = gateway_pb2_grpc.AppStoreGatewayStub(channel)
            # The SPIFFE identity may use "example" and nothing else, resumed or not.
            assert history(stub, world).transactions
            assert refused(lambda: history(stub, world, app="example2", bundle="com.example.app2")).code() \
                == grpc.StatusCode.PERMISSION_DENIED
        finally:
            channel.close()
    assert metric(gw, "appstore_gateway_tls_handshakes_total", port="grpc", resumed="true") >= before + 2


def test_a_change_of_the_client_cas_ends_every_earlier_session(world, resumption):
    session = resumption["dir"] / "before-reload.pem"
    assert re.search(r"^New,", s_client(world, resumption, "-tls1_3", "-sess_out", str(session)), re.M)
    assert re.search(r"^Reused,", s_client(world, resumption, "-tls1_3", "-sess_in", str(session)), re.M)
    # Another CA joins the file (the client's own CA stays trusted): sessions made before are not resumed.
    resumption["ca_file"].write_bytes(pem(world["ca"][1]) + pem(make_ca("another client CA")[1]))
    wait_until(lambda: "reloaded the TLS certificate" in resumption["gw"].read_log())
    again = s_client(world, resumption, "-tls1_3", "-sess_in", str(session))
    assert re.search(r"^New,", again, re.M) and "Verify return code: 0" in again, again


# --- how long a session lives: never past its certificate, never past tls.sessionMaxAge ----------------------

def short_lived_client(world, directory, name, seconds):
    """The SPIFFE caller's certificate valid for `seconds` more, as `directory/<name>.pem` and `.key`; its
    notAfter as a Unix time (whole seconds)."""
    ca_key, ca_cert = world["ca"]
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.now(timezone.utc)
    cert = (x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "billing-api")]))
            .issuer_name(ca_cert.subject).public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - timedelta(minutes=5)).not_valid_after(now + timedelta(seconds=seconds))
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
            .add_extension(x509.SubjectAlternativeName([x509.UniformResourceIdentifier(SPIFFE)]), critical=False)
            .sign(ca_key, hashes.SHA256()))
    (directory / f"{name}.key").write_bytes(key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    (directory / f"{name}.pem").write_bytes(pem(cert))
    return int(cert.not_valid_after_utc.timestamp())


def sleep_until(unix_time):
    time.sleep(max(0.0, unix_time - time.time()))


@pytest.mark.parametrize("version", ["-tls1_2", "-tls1_3"])
def test_a_session_never_resumes_past_its_client_certificates_expiry(world, resumption, version):
    name = f"eight-seconds{version}"
    not_after = short_lived_client(world, resumption["dir"], name, seconds=8)
    session = resumption["dir"] / f"{name}-session.pem"
    first = s_client(world, resumption, version, "-sess_out", str(session), client=name)
    assert "Verify return code: 0" in first and re.search(r"^New,", first, re.M), first
    # OpenSSL counts a certificate valid through its notAfter second: wait until well past it.
    sleep_until(not_after + 2)
    again = s_client(world, resumption, version, "-sess_in", str(session), client=name)
    # Not resumed: a full handshake, where the expired certificate is refused.
    assert not re.search(r"^Reused,", again, re.M), again
    assert "certificate expired" in again, again


def test_an_expired_certificates_session_makes_no_more_calls(world, resumption):
    """The reported case: a client that keeps resuming kept its caller identity after its certificate expired."""
    from grpc.experimental import session_cache

    directory = resumption["dir"]
    not_after = short_lived_client(world, directory, "grpcio-eight-seconds", seconds=8)
    cache = session_cache.ssl_session_cache_lru(8)
    credentials = grpc.ssl_channel_credentials(
        root_certificates=open(world["files"]["ca.pem"], "rb").read(),
        private_key=(directory / "grpcio-eight-seconds.key").read_bytes(),
        certificate_chain=(directory / "grpcio-eight-seconds.pem").read_bytes())

    def call():
        channel = grpc.secure_channel(resumption["gw"].address, credentials, options=[
            ("grpc.ssl_session_cache", cache), ("grpc.ssl_target_name_override", "localhost")])
        try:
            return history(gateway_pb2_grpc.AppStoreGatewayStub(channel), world, timeout=5)
        finally:
            channel.close()

    resumed = metric(resumption["gw"], "appstore_gateway_tls_handshakes_total", port="grpc", resumed="true")
    assert call().transactions  # a full handshake
    assert call().transactions  # resumed
    assert metric(resumption["gw"], "appstore_gateway_tls_handshakes_total", port="grpc",
                  resumed="true") >= resumed + 1
    sleep_until(not_after + 2)
    assert refused(call).code() == grpc.StatusCode.UNAVAILABLE


MAX_AGE = 20


@pytest.fixture
def short_sessions(world, tmp_path):
    """A fresh mTLS gateway (no ticket key made yet) whose sessions may be resumed for MAX_AGE seconds."""
    config = yaml.safe_load(open(gateway_config(world, "max-age", client_ca=True)))
    config["tls"]["sessionMaxAge"] = f"{MAX_AGE}s"
    path = tmp_path / "max-age.yaml"
    yaml.safe_dump(config, open(path, "w"))
    key, cert = world["clients"]["spiffe"]
    (tmp_path / "client.key").write_bytes(key)
    (tmp_path / "client.pem").write_bytes(cert)
    gw = Gateway(["--config", str(path)])
    yield {"gw": gw, "dir": tmp_path}
    gw.stop()


def test_session_max_age_counts_from_the_first_full_handshake_and_resumptions_never_extend_it(
        world, short_sessions):
    """TLS 1.3 gives a resumed session a fresh ticket when the key of the old one no longer seals (keys rotate
    every sessionMaxAge); OpenSSL stamps that ticket with the time it was issued. The session's age still counts
    from its first full handshake."""
    directory = short_sessions["dir"]

    def connect(*session):
        return s_client(world, short_sessions, "-tls1_3", *session)

    # The first ticket makes the first key: it seals until MAX_AGE after this handshake.
    assert re.search(r"^New,", connect(), re.M)
    key_made = time.time()
    # The session under test begins later, sealed with that key.
    sleep_until(key_made + 8)
    first = connect("-sess_out", str(directory / "first.pem"))
    assert re.search(r"^New,", first, re.M), first
    handshake = time.time()
    # Past the key's rotation, within the session's MAX_AGE: resumed, and given a fresh ticket by a fresh key.
    sleep_until(key_made + MAX_AGE + 1)
    resumed = connect("-sess_in", str(directory / "first.pem"), "-sess_out", str(directory / "renewed.pem"))
    assert re.search(r"^Reused,", resumed, re.M), resumed
    assert (directory / "renewed.pem").exists(), "no fresh ticket on resumption: " + resumed
    # MAX_AGE after the first full handshake the fresh ticket is seconds old, and resumes nothing.
    sleep_until(handshake + MAX_AGE + 1)
    late = connect("-sess_in", str(directory / "renewed.pem"))
    assert re.search(r"^New,", late, re.M) and "Verify return code: 0" in late, late


# --- a client CA file that fails to reload --------------------------------------------------------------------

def log_entries(gw, message):
    """The JSON log lines of `gw` whose message is `message`."""
    import json
    entries = []
    for line in gw.read_log().splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if entry.get("message") == message:
            entries.append(entry)
    return entries


def test_a_client_ca_file_that_fails_to_reload_keeps_the_old_trust_loudly(world, tmp_path):
    ca_file = tmp_path / "clients.pem"
    ca_file.write_bytes(pem(world["ca"][1]))
    config = yaml.safe_load(open(gateway_config(world, "ca-reload", client_ca=True)))
    config["tls"]["clientCAFile"] = str(ca_file)
    path = tmp_path / "ca-reload.yaml"
    yaml.safe_dump(config, open(path, "w"))
    gw = Gateway(["--config", str(path)])
    channel = None
    try:
        # The series exists before anything fails, so an alert on it has something to watch.
        assert "appstore_gateway_reload_failures_total{file=\"tls\"} 0" in \
            urllib.request.urlopen(gw.admin_url + "/metrics", timeout=5).read().decode()
        ca_file.write_bytes(b"-----BEGIN CERTIFICATE-----\nnot base64 at all\n-----END CERTIFICATE-----\n")
        wait_until(lambda: metric(gw, "appstore_gateway_reload_failures_total", file="tls") == 1)
        # The counter moves just before the line is written: wait for the line too.
        wait_until(lambda: log_entries(gw, "kept the previous TLS certificate"))
        kept = log_entries(gw, "kept the previous TLS certificate")
        assert kept and kept[0]["level"] == "error", gw.read_log()
        # The CAs loaded before are still in force: the SPIFFE caller still gets in.
        channel = tls_channel(world, gw, "spiffe")
        assert history(gateway_pb2_grpc.AppStoreGatewayStub(channel), world).transactions
    finally:
        if channel is not None:
            channel.close()
        gw.stop()
# --- one address's silent sockets, connections that never make an admitted call, open header blocks ---------

ATTACKER = "127.0.0.2"  # Linux answers the whole of 127.0.0.0/8 on loopback: a second client address


def raise_descriptor_limit(wanted):
    """Lets this test process hold `wanted` sockets (the soft limit is often 1024)."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < wanted:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(wanted, hard), hard))


def sockets_from(address, port, count):
    """`count` TCP connections from the local address `address` that send nothing."""
    raise_descriptor_limit(count + 256)
    return [socket.create_connection(("127.0.0.1", port), timeout=5, source_address=(address, 0))
            for _ in range(count)]


def closed_count(sockets):
    """How many of `sockets` the server has closed (readable with nothing left to read), without waiting."""
    import select

    poller = select.poll()
    by_fd = {sock.fileno(): sock for sock in sockets}
    for fd in by_fd:
        poller.register(fd, select.POLLIN | select.POLLRDHUP)
    closed = 0
    for fd, events in poller.poll(0):
        if events & (select.POLLHUP | select.POLLRDHUP | select.POLLERR):
            closed += 1
        elif events & select.POLLIN:
            try:
                closed += by_fd[fd].recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b""
            except (ConnectionResetError, BlockingIOError):
                closed += 1
    return closed


def frames(data):
    """(type, flags, stream id, payload) of each whole HTTP/2 frame in `data`."""
    found, offset = [], 0
    while offset + 9 <= len(data):
        length = int.from_bytes(data[offset:offset + 3], "big")
        if offset + 9 + length > len(data):
            break
        kind, flags = data[offset + 3], data[offset + 4]
        stream = int.from_bytes(data[offset + 5:offset + 9], "big") & 0x7FFFFFFF
        found.append((kind, flags, stream, data[offset + 9:offset + 9 + length]))
        offset += 9 + length
    return found


def read_until_closed(sock, timeout):
    """Every byte the server sends until it closes `sock`; None when it is still open after `timeout` seconds."""
    received = b""
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            sock.settimeout(max(0.01, deadline - time.monotonic()))
            chunk = sock.recv(65536)
            if not chunk:
                return received
            received += chunk
    except (ConnectionResetError, BrokenPipeError):
        return received
    except socket.timeout:
        pass
    return None


def goaway_debug(data):
    """The debug text of the GOAWAY frames in `data`."""
    return [payload[8:].decode(errors="replace") for kind, _, _, payload in frames(data) if kind == 0x7]


PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"  # and an empty SETTINGS


def test_a_thousand_silent_sockets_from_one_address_keep_no_other_address_out(fresh_gateway):
    # The default caps: 1,024 pending handshakes per port, 32 per address, a 10 s handshake deadline. Before the
    # per-address limit the 1,100 sockets paused the listener until their deadline, and this health check waited.
    gw = fresh_gateway()
    attacker = sockets_from(ATTACKER, gw.port, 1_100)
    try:
        channel = grpc.insecure_channel(gw.address)
        try:
            assert health(channel)  # well within the handshake deadline of the silent sockets
        finally:
            channel.close()
        wait_until(lambda: metric(gw, "appstore_gateway_pending_handshakes_evicted_total", port="grpc") == 1_100 - 32)
        assert metric(gw, "appstore_gateway_pending_handshakes", port="grpc") == 32
        # The server closed all but 32 of them, each pushed out by a newer one of its address.
        wait_until(lambda: closed_count(attacker) == 1_100 - 32)
    finally:
        for sock in attacker:
            sock.close()


def test_silent_tls_sockets_from_one_address_keep_no_other_address_out(world):
    env = {"APPSTORE_GATEWAY_LIMITS_MAX_PENDING_HANDSHAKES": "64",
           "APPSTORE_GATEWAY_LIMITS_MAX_PENDING_HANDSHAKES_PER_ADDRESS": "8",
           "APPSTORE_GATEWAY_CONNECTION_HANDSHAKE_TIMEOUT": "30s"}
    gw = Gateway(["--config", gateway_config(world, "edge-per-address", client_ca=True)], env=env)
    attacker = sockets_from(ATTACKER, gw.port, 100)
    channel = tls_channel(world, gw, "spiffe")
    try:
        grpc.channel_ready_future(channel).result(timeout=5)  # 100 > 64: without the limit, paused for 30 s
        assert history(gateway_pb2_grpc.AppStoreGatewayStub(channel), world).transactions
        wait_until(lambda: metric(gw, "appstore_gateway_pending_handshakes_evicted_total", port="grpc") == 100 - 8)
        assert metric(gw, "appstore_gateway_pending_handshakes", port="grpc") == 8
    finally:
        channel.close()
        for sock in attacker:
            sock.close()
        gw.stop()


UNAUTHENTICATED_ENV = {"APPSTORE_GATEWAY_CONNECTION_UNAUTHENTICATED_IDLE_TIMEOUT": "1s",
                       "APPSTORE_GATEWAY_LIMITS_MAX_CONNECTIONS": "3"}


def test_preface_only_connections_are_closed_after_the_unauthenticated_idle_timeout(fresh_gateway):
    gw = fresh_gateway(env=UNAUTHENTICATED_ENV)
    squatters = [socket.create_connection(("127.0.0.1", gw.port), timeout=5) for _ in range(3)]
    try:
        for sock in squatters:
            sock.sendall(PREFACE)  # established: they fill the cap of 3
        for sock in squatters:
            received = read_until_closed(sock, timeout=8)  # connection.maxIdle (5m) would keep them
            assert received is not None, "a preface-only connection outlived connection.unauthenticatedIdleTimeout"
            assert goaway_debug(received) == ["unauthenticated_idle"]
        channel = grpc.insecure_channel(gw.address)
        try:
            assert health(channel)  # the cap is free again
        finally:
            channel.close()
    finally:
        for sock in squatters:
            sock.close()


def test_health_calls_do_not_vouch_for_a_connection_and_an_admitted_call_does(fresh_gateway):
    from h2raw import RawClient, grpc_frame

    gw = fresh_gateway(env=UNAUTHENTICATED_ENV)
    prober, caller = RawClient(gw.port), RawClient(gw.port)
    try:
        check = prober.request("/grpc.health.v1.Health/Check", body=grpc_frame(b""))
        prober.read_until(prober.stream_ended(check))
        # Open mode: the gateway's own methods pass the guard anonymously, so the call admits its connection
        # (the request itself is refused, INVALID_ARGUMENT).
        call = caller.request("/appstore.gateway.v1.AppStoreGateway/GetHistory", body=grpc_frame(b""))
        caller.read_until(caller.stream_ended(call))
        assert "closed" not in caller.events
        prober.read_until(lambda events: "closed" in events, timeout=8)
        time.sleep(1.5)
        again = caller.request("/grpc.health.v1.Health/Check", body=grpc_frame(b""))
        caller.read_until(caller.stream_ended(again))
        assert caller.headers_of(again)[-1].get("grpc-status") == "0"
    finally:
        prober.close()
        caller.close()


def test_a_health_watch_alone_does_not_keep_a_connection(fresh_gateway):
    from h2raw import RawClient, grpc_frame

    gw = fresh_gateway(env=UNAUTHENTICATED_ENV)
    watcher = RawClient(gw.port)
    try:
        watch = watcher.request("/grpc.health.v1.Health/Watch", body=grpc_frame(b""))
        watcher.read_until(lambda events: any(isinstance(e, h2.events.DataReceived) for e in events))
        # GOAWAY at 1 s (calls in flight may end), then the Watch, which never ends, is cut off 1 s later.
        watcher.read_until(lambda events: "closed" in events, timeout=8)
        # (h2 reads nothing past the first GOAWAY, the shutdown notice: the final one's text is not seen here.)
        assert any(isinstance(e, h2.events.ConnectionTerminated) and e.error_code == 0 for e in watcher.events)
        assert not watcher.headers_of(watch)[1:], "the Watch was cut off, not ended"
    finally:
        watcher.close()


HEADER_BLOCK_ENV = {"APPSTORE_GATEWAY_CONNECTION_HEADER_BLOCK_TIMEOUT": "1s",
                    "APPSTORE_GATEWAY_CONNECTION_UNAUTHENTICATED_IDLE_TIMEOUT": "0"}


def request_header_block():
    """The HPACK block of a health Check's request head (literal fields, no indexing)."""
    import hpack

    return hpack.Encoder().encode([(":method", "POST"), (":scheme", "http"), (":authority", "localhost"),
                                   (":path", "/grpc.health.v1.Health/Check"), ("content-type", "application/grpc"),
                                   ("te", "trailers")])


def frame(kind, flags, stream, payload):
    return len(payload).to_bytes(3, "big") + bytes([kind, flags]) + stream.to_bytes(4, "big") + payload


@pytest.mark.parametrize("shape", ["headers_without_end_headers", "continuations_trickling", "one_frame_trickling"])
def test_a_header_block_left_open_closes_the_connection(fresh_gateway, shape):
    gw = fresh_gateway(env=HEADER_BLOCK_ENV)
    block = request_header_block()
    with socket.create_connection(("127.0.0.1", gw.port), timeout=5) as sock:
        sock.sendall(PREFACE)
        started = time.monotonic()
        if shape == "one_frame_trickling":
            # One HEADERS frame with END_HEADERS whose bytes come one every 300 ms, never all of them in time.
            whole = frame(0x1, 0x4 | 0x1, 1, block)
            sock.sendall(whole[:12])
            for byte in whole[12:14]:
                time.sleep(0.3)
                sock.sendall(bytes([byte]))
        else:
            sock.sendall(frame(0x1, 0x1, 1, block[:4]))  # HEADERS, END_STREAM, no END_HEADERS
            if shape == "continuations_trickling":
                for index in range(4, 7):  # CONTINUATIONs without END_HEADERS, one byte each
                    time.sleep(0.3)
                    sock.sendall(frame(0x9, 0x0, 1, block[index:index + 1]))
        received = read_until_closed(sock, timeout=8)  # max-age (30m) and its grace kept it before
        assert received is not None, "an open header block kept the connection"
        assert time.monotonic() - started < 6
        assert goaway_debug(received) == ["header_block_timeout"]


def test_a_whole_header_block_split_over_continuations_is_served(fresh_gateway):
    from h2raw import grpc_frame

    gw = fresh_gateway(env=HEADER_BLOCK_ENV)
    block = request_header_block()
    with socket.create_connection(("127.0.0.1", gw.port), timeout=5) as sock:
        sock.sendall(PREFACE + frame(0x1, 0x0, 1, block[:5]) + frame(0x9, 0x0, 1, block[5:9])
                     + frame(0x9, 0x4, 1, block[9:]) + frame(0x0, 0x1, 1, grpc_frame(b"")))
        time.sleep(1.5)  # past the header-block deadline: a complete block leaves none behind
        sock.sendall(frame(0x6, 0x0, 0, b"12345678"))  # a PING: the connection is still served
        received = b""
        sock.settimeout(5)
        while not any(kind == 0x6 and flags & 0x1 for kind, flags, _, _ in frames(received)):
            chunk = sock.recv(65536)
            assert chunk, f"closed: {goaway_debug(received)}"
            received += chunk
        assert any(kind == 0x1 and stream == 1 for kind, _, stream, _ in frames(received))  # the answer
        assert goaway_debug(received) == []


def test_request_trailers_left_open_close_the_connection(fresh_gateway):
    """Request trailers are a header block too: a call whose trailers' HEADERS comes without END_HEADERS (and no
    CONTINUATION after it) keeps no connection past the header-block deadline, although its stream is open."""
    import hpack
    from h2raw import grpc_frame

    gw = fresh_gateway(env=HEADER_BLOCK_ENV)
    trailers = hpack.Encoder().encode([("x-trailer", "value")])
    with socket.create_connection(("127.0.0.1", gw.port), timeout=5) as sock:
        sock.sendall(PREFACE + frame(0x1, 0x4, 1, request_header_block()) + frame(0x0, 0x0, 1, grpc_frame(b"")))
        started = time.monotonic()
        sock.sendall(frame(0x1, 0x1, 1, trailers[:2]))  # trailers: END_STREAM, no END_HEADERS
        received = read_until_closed(sock, timeout=8)
        assert received is not None, "request trailers left open kept the connection"
        assert time.monotonic() - started < 6
        assert goaway_debug(received) == ["header_block_timeout"]


# MARK: the admin port's bearer token (admin.bearerTokenFile)

ADMIN_TOKEN = "k3Jz0Q9mXvYt2bLw8pRe5sUa7dHn4cGf1iOyZ6TqBxM="
ROTATED_TOKEN = "Zq8pN2vXc5LmR7tY0wBs4KdHf9JgA1eUoIi6TyQxWc3="


def admin_get(gw, path, token=None):
    """(status, headers (names in any case), body) of a GET on the admin port, with `Authorization: Bearer token`
    when given."""
    request = urllib.request.Request(gw.admin_url + path)
    if token is not None:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=5) as answer:
            return answer.status, answer.headers, answer.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.headers, error.read().decode()


def write_secret(path, text, mode=0o600):
    """Writes `text` to `path` the way a Secret update lands: a new file renamed over the old one."""
    staged = f"{path}.new"
    with open(staged, "w") as f:
        f.write(text)
    os.chmod(staged, mode)
    os.replace(staged, path)


def admin_token_gateway(tmp_path):
    """A gateway whose admin port asks for ADMIN_TOKEN, from a token file named relative to its config."""
    write_secret(tmp_path / "admin-token", ADMIN_TOKEN + "\n")
    config = tmp_path / "gateway.yaml"
    config.write_text(yaml.safe_dump({"admin": {"listen": "127.0.0.1:0", "bearerTokenFile": "admin-token"}}))
    return Gateway(["--config", str(config)])


def test_admin_metrics_need_the_bearer_token_and_the_probes_stay_open(tmp_path):
    gw = admin_token_gateway(tmp_path)
    try:
        status, headers, body = admin_get(gw, "/metrics")
        assert status == 401 and "appstore_gateway" not in body
        assert headers["WWW-Authenticate"] == 'Bearer realm="appstore-gateway admin"'
        status, headers, _ = admin_get(gw, "/metrics", token=ROTATED_TOKEN)
        assert status == 401
        assert headers["WWW-Authenticate"] == 'Bearer realm="appstore-gateway admin", error="invalid_token"'
        # An unknown path tells nothing without the token either.
        assert admin_get(gw, "/anything")[0] == 401
        status, _, body = admin_get(gw, "/metrics", token=ADMIN_TOKEN)
        assert status == 200 and "# TYPE appstore_gateway_open_connections gauge" in body
        # Kubelet probes carry no credentials.
        assert admin_get(gw, "/healthz")[:1] == (200,)
        assert admin_get(gw, "/readyz")[:1] == (200,)
    finally:
        gw.stop()


def test_a_rotated_admin_token_is_in_force_without_a_restart(tmp_path):
    gw = admin_token_gateway(tmp_path)
    try:
        assert admin_get(gw, "/metrics", token=ADMIN_TOKEN)[0] == 200
        write_secret(tmp_path / "admin-token", ROTATED_TOKEN)
        wait_until(lambda: admin_get(gw, "/metrics", token=ROTATED_TOKEN)[0] == 200, seconds=30)
        assert admin_get(gw, "/metrics", token=ADMIN_TOKEN)[0] == 401
        # A bad file keeps the token in force (and never shows up in the log).
        write_secret(tmp_path / "admin-token", "too short\n")
        wait_until(lambda: "kept the previous admin bearer token" in gw.read_log(), seconds=30)
        assert admin_get(gw, "/metrics", token=ROTATED_TOKEN)[0] == 200
        assert ROTATED_TOKEN not in gw.read_log() and ADMIN_TOKEN not in gw.read_log()
    finally:
        gw.stop()


@pytest.mark.parametrize("content, mode, problem", [
    (ADMIN_TOKEN, 0o644, "mode 644"),
    ("short", 0o600, "of 5 characters"),
])
def test_an_admin_token_file_others_may_read_or_a_weak_token_stops_the_start(tmp_path, content, mode, problem):
    write_secret(tmp_path / "admin-token", content, mode)
    config = tmp_path / "gateway.yaml"
    config.write_text(yaml.safe_dump({"admin": {"bearerTokenFile": "admin-token"}}))
    from conftest import GATEWAY_BIN
    checked = subprocess.run([GATEWAY_BIN, "check-config", "--config", str(config)],
                             capture_output=True, text=True, timeout=30)
    assert checked.returncode == 1
    assert "admin.bearerTokenFile" in checked.stdout and problem in checked.stdout, checked.stdout
    assert ADMIN_TOKEN not in checked.stdout
    started = subprocess.run([GATEWAY_BIN, "serve", "--listen", "127.0.0.1:0", "--config", str(config)],
                             capture_output=True, text=True, timeout=30,
                             env={**os.environ, "APPSTORE_GATEWAY_ADMIN": "127.0.0.1:0"})
    assert started.returncode == 1 and "admin.bearerTokenFile" in started.stderr, started.stderr
