"""What reaches the ports before any RPC, black-box: sockets that never finish their handshake (TLS) or never
send the HTTP/2 preface are closed by `connection.handshakeTimeout` and never fill `limits.maxConnections`; TLS
sessions with client certificates resume (OpenSSL's client, TLS 1.2 and 1.3, and grpcio) and keep the
identity of the certificate verified when they were made; a change of the client CAs ends every session."""
import os
import re
import socket
import subprocess
import time
import urllib.error
import urllib.request

import grpc
import pytest
import yaml
from grpc_health.v1 import health_pb2, health_pb2_grpc

from appstore.gateway.v1 import gateway_pb2_grpc
from conftest import Gateway
from test_callers import gateway_config, history, make_ca, pem, refused, tls_channel, wait_until, world  # noqa: F401

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


def s_client(world, resumption, version, *session):
    directory = resumption["dir"]
    command = ["openssl", "s_client", "-connect", f"127.0.0.1:{resumption['gw'].port}", version,
               "-CAfile", world["files"]["ca.pem"], "-servername", "localhost", "-alpn", "h2",
               "-cert", str(directory / "client.pem"), "-key", str(directory / "client.key"), *session]
    # TLS 1.3 tickets arrive after the handshake: keep stdin open a moment so s_client reads them.
    result = subprocess.run(["bash", "-c", 'sleep 0.5 | "$@"', "s_client"] + command, capture_output=True,
                            text=True, timeout=20)
    return result.stdout + result.stderr


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
