"""Caller identity, per-app authorization and fair shares, black-box: the gateway serves TLS (ALPN h2) with
certificates and JWKS keys generated here, grpcio calls it with bearer JWTs (RS256 and ES256) and client
certificates, and the App Store simulator in front records every call that reaches "Apple", so each refusal
is shown to send nothing upstream. Nothing is committed: every key and certificate is made per run."""
import datetime
import ipaddress
import json
import os
import re
import subprocess
import tempfile
import threading
import time
import urllib.request
import uuid

import grpc
import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from appstore.gateway.v1 import gateway_pb2_grpc, history_pb2
from conftest import GATEWAY_BIN, Gateway
from test_api import error_info

ISSUER = "https://kubernetes.default.svc.cluster.local"
AUDIENCE = "appstore-gateway"
BILLING = "system:serviceaccount:billing:api"
REPORTS = "system:serviceaccount:reports:batch"
SPIFFE = "spiffe://cluster.local/ns/billing/sa/api"
# A JWT-SVID's `sub` is a SPIFFE id: listed as `jwt:<sub>`, since a bare URI names a certificate URI SAN.
SVID_SUB = "spiffe://cluster.local/ns/reports/sa/svid"


# --- keys, certificates, tokens ---------------------------------------------------------------------------

def b64url(data):
    import base64
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def int_bytes(value):
    return value.to_bytes((value.bit_length() + 7) // 8, "big")


class Signer:
    """A JWKS key and the tokens it signs."""

    def __init__(self, kind, kid):
        self.kind, self.kid = kind, kid
        if kind == "RS256":
            self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
            numbers = self.key.public_key().public_numbers()
            self.jwk = {"kty": "RSA", "kid": kid, "use": "sig", "alg": "RS256",
                        "n": b64url(int_bytes(numbers.n)), "e": b64url(int_bytes(numbers.e))}
        else:
            self.key = ec.generate_private_key(ec.SECP256R1())
            numbers = self.key.public_key().public_numbers()
            self.jwk = {"kty": "EC", "kid": kid, "use": "sig", "alg": "ES256", "crv": "P-256",
                        "x": b64url(numbers.x.to_bytes(32, "big")), "y": b64url(numbers.y.to_bytes(32, "big"))}

    def token(self, sub=BILLING, iss=ISSUER, aud=(AUDIENCE,), exp_in=600, nbf_in=None, alg=None, kid=None, **extra):
        now = int(time.time())
        header = {"alg": alg or self.kind, "kid": kid or self.kid, "typ": "JWT"}
        claims = {"iss": iss, "sub": sub, "aud": aud if isinstance(aud, str) else list(aud), "iat": now,
                  "exp": now + exp_in}
        if nbf_in is not None:
            claims["nbf"] = now + nbf_in
        claims.update(extra)
        signing_input = (b64url(json.dumps(header).encode()) + "." + b64url(json.dumps(claims).encode())).encode()
        if self.kind == "RS256":
            signature = self.key.sign(signing_input, padding.PKCS1v15(), hashes.SHA256())
        else:
            r, s = decode_dss_signature(self.key.sign(signing_input, ec.ECDSA(hashes.SHA256())))
            signature = r.to_bytes(32, "big") + s.to_bytes(32, "big")
        return signing_input.decode() + "." + b64url(signature)


def write_jwks(path, signers):
    """Writes the JWKS atomically (rename over the file), as a ConfigMap update would replace it."""
    temporary = path + ".tmp"
    with open(temporary, "w") as f:
        json.dump({"keys": [s.jwk for s in signers]}, f)
    os.replace(temporary, path)


def make_ca(name):
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True)
            .sign(key, hashes.SHA256()))
    return key, cert


def issue(ca, common_name, names, usage):
    ca_key, ca_cert = ca
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.timezone.utc)
    builder = (x509.CertificateBuilder()
               .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)]))
               .issuer_name(ca_cert.subject).public_key(key.public_key()).serial_number(x509.random_serial_number())
               .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=1))
               .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
               .add_extension(x509.ExtendedKeyUsage([usage]), critical=False))
    if names:
        builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
    cert = builder.sign(ca_key, hashes.SHA256())
    return (key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                              serialization.NoEncryption()),
            cert.public_bytes(serialization.Encoding.PEM))


def pem(cert):
    return cert.public_bytes(serialization.Encoding.PEM)


# --- the world: simulator, PKI, JWKS ----------------------------------------------------------------------

class Simulator:
    def __init__(self, state, extra=()):
        self.state = state
        self.proc = subprocess.Popen(
            [GATEWAY_BIN, "simulator", "--listen", "127.0.0.1:0", "--state-dir", state, "--seed", "21",
             "--customers", "8", "--apps", "2"] + list(extra),
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        match = re.search(r"listening on (https://\S+)", self.proc.stdout.readline())
        assert match, "the simulator did not start"
        self.url = match.group(1)
        self.config = yaml.safe_load(open(os.path.join(state, "gateway.yaml")))
        index = json.load(open(os.path.join(state, "transactions.json")))
        self.transactions = {bundle: [c["transactionId"] for c in envs["Production"] if c["transactionId"]]
                             for bundle, envs in index.items()}

    def calls_since(self, since_ms):
        import ssl
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        with urllib.request.urlopen(self.url + f"/simulator/calls?since={since_ms}", context=context, timeout=5) as r:
            return json.loads(r.read())["calls"]

    def stop(self):
        self.proc.terminate()
        self.proc.wait()


@pytest.fixture(scope="module")
def world():
    directory = tempfile.mkdtemp(prefix="gw-callers-")
    simulator = Simulator(os.path.join(directory, "sim"))
    ca = make_ca("gateway test CA")
    other_ca = make_ca("someone else's CA")
    files = {}

    def write(name, data):
        path = os.path.join(directory, name)
        with open(path, "wb") as f:
            f.write(data)
        os.chmod(path, 0o600)
        files[name] = path
        return path

    server_key, server_cert = issue(ca, "localhost", [x509.DNSName("localhost"),
                                                      x509.IPAddress(ipaddress.ip_address("127.0.0.1"))],
                                    ExtendedKeyUsageOID.SERVER_AUTH)
    write("server.key", server_key)
    write("server.pem", server_cert)
    write("ca.pem", pem(ca[1]))
    spiffe_key, spiffe_cert = issue(ca, "billing-api", [x509.UniformResourceIdentifier(SPIFFE),
                                                        x509.DNSName("billing.example")],
                                    ExtendedKeyUsageOID.CLIENT_AUTH)
    dns_key, dns_cert = issue(ca, "reports", [x509.DNSName("reports.internal")], ExtendedKeyUsageOID.CLIENT_AUTH)
    cn_key, cn_cert = issue(ca, "legacy-batch", [], ExtendedKeyUsageOID.CLIENT_AUTH)
    # The reported case: the CA's certificate whose CN (no SAN) is a listed JWT subject.
    billing_cn_key, billing_cn_cert = issue(ca, BILLING, [], ExtendedKeyUsageOID.CLIENT_AUTH)
    stranger_key, stranger_cert = issue(other_ca, "billing-api", [x509.UniformResourceIdentifier(SPIFFE)],
                                        ExtendedKeyUsageOID.CLIENT_AUTH)
    rsa_signer, ec_signer = Signer("RS256", "rsa-1"), Signer("ES256", "ec-1")
    jwks = os.path.join(directory, "jwks.json")
    write_jwks(jwks, [rsa_signer, ec_signer])
    yield {
        "dir": directory, "simulator": simulator, "files": files, "jwks": jwks, "ca": ca,
        "rsa": rsa_signer, "ec": ec_signer,
        "clients": {"spiffe": (spiffe_key, spiffe_cert), "dns": (dns_key, dns_cert), "cn": (cn_key, cn_cert),
                    "billing-cn": (billing_cn_key, billing_cn_cert), "stranger": (stranger_key, stranger_cert)},
    }
    simulator.stop()


def gateway_config(world, name, *, client_ca=False, jwt=True, callers=True, rate=None, jwks=None, common_names=False):
    config = dict(world["simulator"].config)
    config["apps"] = [dict(a, environment="production") for a in config["apps"]]
    config.pop("listen", None)
    config.pop("admin", None)
    config["tls"] = {"certificateFile": world["files"]["server.pem"], "privateKeyFile": world["files"]["server.key"]}
    if client_ca:
        config["tls"]["clientCAFile"] = world["files"]["ca.pem"]
    if common_names:
        config["tls"]["identityFromCommonName"] = True
    if jwt:
        config["authentication"] = {"jwt": {"jwksFile": jwks or world["jwks"], "issuer": ISSUER,
                                            "audiences": ["other-audience", AUDIENCE]}}
    if callers:
        config["callers"] = [
            {"identity": BILLING, "apps": ["example"], "weight": 1},
            {"identity": REPORTS, "apps": ["com.example.app", "example2"], "weight": 1},
            {"identity": SPIFFE, "apps": ["example"]},
            {"identity": "dns:reports.internal", "apps": ["*"]},
            {"identity": "jwt:" + SVID_SUB, "apps": ["example2"]},
        ]
        if common_names:
            config["callers"].append({"identity": "cn:legacy-batch", "apps": ["example2"]})
    if rate:
        config["rateLimits"] = rate
    path = os.path.join(world["dir"], name + ".yaml")
    yaml.safe_dump(config, open(path, "w"))
    return path


def tls_channel(world, gw, client=None):
    key, cert = world["clients"][client] if client else (None, None)
    credentials = grpc.ssl_channel_credentials(
        root_certificates=open(world["files"]["ca.pem"], "rb").read(), private_key=key, certificate_chain=cert)
    return grpc.secure_channel(gw.address, credentials)


def bearer(token):
    return (("authorization", "Bearer " + token),)


def history(stub, world, token=None, app="example", bundle="com.example.app", timeout=10):
    transaction = world["simulator"].transactions[bundle][0]
    return stub.GetHistory(history_pb2.GetHistoryRequest(app=app, transaction_id=transaction),
                           metadata=bearer(token) if token else None, timeout=timeout)


def now_ms():
    return int(time.time() * 1000)


@pytest.fixture(scope="module")
def jwt_gateway(world):
    gw = Gateway(["--config", gateway_config(world, "jwt")])
    channel = tls_channel(world, gw)
    yield gw, gateway_pb2_grpc.AppStoreGatewayStub(channel), channel
    channel.close()
    gw.stop()


# --- authentication and authorization over TLS ------------------------------------------------------------

def test_health_and_reflection_need_no_identity(world, jwt_gateway):
    from grpc_health.v1 import health_pb2, health_pb2_grpc
    from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

    _, _, channel = jwt_gateway
    answer = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(service=""), timeout=5)
    assert answer.status == health_pb2.HealthCheckResponse.SERVING
    request = reflection_pb2.ServerReflectionRequest(list_services="")
    replies = list(reflection_pb2_grpc.ServerReflectionStub(channel).ServerReflectionInfo(iter([request]), timeout=5))
    assert any(s.name == "appstore.gateway.v1.AppStoreGateway" for s in replies[0].list_services_response.service)


def test_allowed_callers_get_their_apps_with_rs256_and_es256(world, jwt_gateway):
    _, stub, _ = jwt_gateway
    for signer in (world["rsa"], world["ec"]):
        response = history(stub, world, signer.token())
        assert response.transactions
    # REPORTS names the first app by bundle id and the second by name.
    assert history(stub, world, world["ec"].token(sub=REPORTS), app="example2", bundle="com.example.app2").transactions
    # An `aud` string (not a list) is accepted too.
    assert history(stub, world, world["rsa"].token(aud=AUDIENCE)).transactions


def refused(call):
    with pytest.raises(grpc.RpcError) as caught:
        call()
    return caught.value


@pytest.mark.parametrize("case", [
    "no credentials", "not bearer", "garbage", "bad signature", "expired", "nbf in the future", "wrong iss",
    "wrong aud", "unknown kid", "alg HS256", "alg none", "no sub", "huge token", "lifetime over a day",
    "iat in the future",
])
def test_each_bad_credential_is_unauthenticated_and_reaches_nobody(world, jwt_gateway, case):
    _, stub, _ = jwt_gateway
    rsa_signer, ec_signer = world["rsa"], world["ec"]
    good = rsa_signer.token()
    tokens = {
        "bad signature": good[:-6] + ("AAAAAA" if not good.endswith("AAAAAA") else "BBBBBB"),
        "expired": rsa_signer.token(exp_in=-120),
        "nbf in the future": ec_signer.token(nbf_in=600),
        "wrong iss": rsa_signer.token(iss="https://evil.example"),
        "wrong aud": ec_signer.token(aud=("someone-else",)),
        "unknown kid": rsa_signer.token(kid="rotated-away"),
        "alg HS256": rsa_signer.token(alg="HS256"),
        "alg none": ".".join(rsa_signer.token(alg="none").split(".")[:2]) + ".",
        "no sub": rsa_signer.token(sub=""),
        "garbage": "not.a.jwt",
        "huge token": "a" * 9000 + "." + "b" * 10 + "." + "c" * 10,
        # authentication.jwt.maxLifetime (24 h): exp - iat of 25 h, though most of it is still ahead.
        "lifetime over a day": rsa_signer.token(exp_in=3600, iat=int(time.time()) - 24 * 3600),
        "iat in the future": ec_signer.token(iat=int(time.time()) + 600, exp_in=1200),
    }
    transaction = world["simulator"].transactions["com.example.app"][1]
    if case == "no credentials":
        metadata = None
    elif case == "not bearer":
        metadata = (("authorization", "Basic dXNlcjpwYXNz"),)
    else:
        metadata = bearer(tokens[case])
    started = now_ms()
    error = refused(lambda: stub.GetHistory(history_pb2.GetHistoryRequest(app="example", transaction_id=transaction),
                                            metadata=metadata, timeout=10))
    assert error.code() == grpc.StatusCode.UNAUTHENTICATED, (case, error.details())
    expected = {"lifetime over a day": "lifetime_too_long", "iat in the future": "issued_in_future"}
    if case in expected:
        assert cause(error) == expected[case]
    time.sleep(0.2)
    assert not [c for c in world["simulator"].calls_since(started) if transaction in c[2]], case


def test_unlisted_identity_and_other_app_are_permission_denied(world, jwt_gateway):
    _, stub, _ = jwt_gateway
    started = now_ms()
    error = refused(lambda: history(stub, world, world["rsa"].token(sub="system:serviceaccount:x:y")))
    assert error.code() == grpc.StatusCode.PERMISSION_DENIED
    # BILLING may use "example" only.
    error = refused(lambda: history(stub, world, world["ec"].token(), app="example2", bundle="com.example.app2"))
    assert error.code() == grpc.StatusCode.PERMISSION_DENIED
    assert "example2" in error.details()
    # An unknown app is PERMISSION_DENIED too for a caller without "*": nothing about other apps leaks.
    error = refused(lambda: history(stub, world, world["ec"].token(), app="no-such-app"))
    assert error.code() == grpc.StatusCode.PERMISSION_DENIED
    time.sleep(0.2)
    assert not world["simulator"].calls_since(started)


def test_every_rpc_that_names_an_app_checks_it(world, jwt_gateway):
    """Per-app authorization holds for every method of the service whose request has an `app` field (the
    generator marks each such message), not only for the RPCs that existed when the check was written."""
    from google.protobuf import message_factory
    from appstore.gateway.v1 import gateway_pb2

    _, _, channel = jwt_gateway
    service = gateway_pb2.DESCRIPTOR.services_by_name["AppStoreGateway"]
    checked = []
    started = now_ms()
    for method in service.methods:
        if "app" not in method.input_type.fields_by_name:
            continue
        request = message_factory.GetMessageClass(method.input_type)(app="example2")
        path = f"/{service.full_name}/{method.name}"
        call = (channel.unary_stream if method.server_streaming else channel.unary_unary)(
            path, request_serializer=lambda m: m.SerializeToString(), response_deserializer=lambda b: b)
        with pytest.raises(grpc.RpcError) as refused_call:
            answer = call(request, metadata=bearer(world["ec"].token()), timeout=10)
            if method.server_streaming:
                list(answer)
        assert refused_call.value.code() == grpc.StatusCode.PERMISSION_DENIED, (method.name, refused_call.value)
        checked.append(method.name)
    assert len(checked) >= 15 and "GetTransactionInfo" in checked and "CreatePromotionalOfferSignature" in checked
    time.sleep(0.2)
    assert not world["simulator"].calls_since(started)


def test_serve_realtime_requests_checks_every_app_its_first_message_names(world, jwt_gateway):
    """ServeRealtimeRequests names its apps in a list, not in `app`: each is authorized like `app`."""
    from appstore.gateway.v1 import realtime_pb2

    _, stub, _ = jwt_gateway

    def serve(*apps):
        return realtime_pb2.ServeRealtimeRequestsRequest(serve=realtime_pb2.RealtimeServe(apps=list(apps)))

    # BILLING may use "example" only.
    for apps in (["example", "example2"], ["no-such-app"]):
        with pytest.raises(grpc.RpcError) as refused_call:
            list(stub.ServeRealtimeRequests(iter([serve(*apps)]), metadata=bearer(world["ec"].token()), timeout=10))
        assert refused_call.value.code() == grpc.StatusCode.PERMISSION_DENIED, apps
    # Its own app: the stream stays open (no request comes) until the deadline the caller chose.
    done = threading.Event()

    def open_stream():
        yield serve("example")
        done.wait(10)

    with pytest.raises(grpc.RpcError) as ended:
        list(stub.ServeRealtimeRequests(open_stream(), metadata=bearer(world["ec"].token()), timeout=1))
    done.set()
    assert ended.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED

def test_resume_tokens_are_bound_to_the_caller_that_received_them(world, jwt_gateway):
    from google.protobuf import timestamp_pb2

    from appstore.gateway.v1 import notification_pb2

    _, stub, _ = jwt_gateway
    start, end = timestamp_pb2.Timestamp(), timestamp_pb2.Timestamp()
    start.FromSeconds(int(time.time()) - 179 * 86_400)
    end.FromSeconds(int(time.time()) + 3_600)

    def stream(token, app, resume=""):
        return list(stub.StreamNotifications(notification_pb2.StreamNotificationsRequest(
            app=app, start_date=start, end_date=end, resume_token=resume), metadata=bearer(token), timeout=60))

    events = stream(world["rsa"].token(sub=BILLING), "example")
    assert len(events) >= 2, "the simulator has too few notifications for this test"
    resume = events[0].resume_token
    rest = stream(world["ec"].token(sub=BILLING), "example", resume)
    uuids = lambda found: [e.notification.notification_uuid for e in found]
    assert uuids(rest) == uuids(events[1:])
    # REPORTS may use the same app (by bundle id) but not continue BILLING's stream.
    error = refused(lambda: stream(world["rsa"].token(sub=REPORTS), "com.example.app", resume))
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT and "another caller" in error.details()


def test_refusals_are_counted_by_reason_and_logged_with_the_caller(world, jwt_gateway):
    gw, stub, _ = jwt_gateway
    history(stub, world, world["rsa"].token())
    refused(lambda: history(stub, world, world["rsa"].token(exp_in=-100)))
    metrics = urllib.request.urlopen(gw.admin_url + "/metrics", timeout=5).read().decode()
    assert re.search(r'appstore_gateway_access_refusals_total\{reason="expired"\} [1-9]', metrics)
    assert re.search(r'appstore_gateway_caller_calls_total\{caller="%s"\} [1-9]' % re.escape(BILLING), metrics)
    # Unlisted identities never become labels.
    assert "system:serviceaccount:x:y" not in metrics
    log = gw.read_log()
    assert any('"caller":"%s"' % BILLING in line and '"rpc"' in line for line in log.splitlines())
    assert world["rsa"].token().split(".")[2] not in log


def test_jwks_rotation_is_picked_up_including_a_symlink_swap(world):
    directory = tempfile.mkdtemp(prefix="jwks-", dir=world["dir"])
    # Kubernetes projects a ConfigMap as <dir>/..data -> ..<timestamp>/ with <dir>/jwks.json -> ..data/jwks.json.
    first = os.path.join(directory, "..v1")
    os.mkdir(first)
    old_signer, new_signer, newest_signer = Signer("RS256", "old"), Signer("ES256", "new"), Signer("RS256", "newest")
    write_jwks(os.path.join(first, "jwks.json"), [old_signer])
    os.symlink("..v1", os.path.join(directory, "..data"))
    os.symlink("..data/jwks.json", os.path.join(directory, "jwks.json"))
    gw = Gateway(["--config", gateway_config(world, "rotation", jwks=os.path.join(directory, "jwks.json"))])
    channel = tls_channel(world, gw)
    stub = gateway_pb2_grpc.AppStoreGatewayStub(channel)
    try:
        assert history(stub, world, old_signer.token()).transactions
        assert refused(lambda: history(stub, world, new_signer.token())).code() == grpc.StatusCode.UNAUTHENTICATED
        # The projected-volume swap: a new timestamped directory, then ..data re-pointed atomically.
        second = os.path.join(directory, "..v2")
        os.mkdir(second)
        write_jwks(os.path.join(second, "jwks.json"), [new_signer])
        os.symlink("..v2", os.path.join(directory, "..data.tmp"))
        os.replace(os.path.join(directory, "..data.tmp"), os.path.join(directory, "..data"))
        wait_until(lambda: accepted(stub, world, new_signer.token()))
        assert refused(lambda: history(stub, world, old_signer.token())).code() == grpc.StatusCode.UNAUTHENTICATED
        # An in-place rewrite (rename over the file) is seen too.
        write_jwks(os.path.join(second, "jwks.json"), [new_signer, newest_signer])
        wait_until(lambda: accepted(stub, world, newest_signer.token()))
        # A broken file keeps the keys in force.
        with open(os.path.join(second, "jwks.json"), "w") as f:
            f.write("{not json")
        time.sleep(2.5)
        assert accepted(stub, world, newest_signer.token())
        assert "kept the previous JWKS" in gw.read_log()
    finally:
        channel.close()
        gw.stop()


def accepted(stub, world, token):
    try:
        history(stub, world, token)
        return True
    except grpc.RpcError as error:
        assert error.code() == grpc.StatusCode.UNAUTHENTICATED, error.details()
        return False


def wait_until(condition, seconds=10):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.3)
    raise AssertionError("condition not reached in time")


def test_open_mode_warns_and_serves_anyone(world):
    gw = Gateway(["--config", gateway_config(world, "open", jwt=False, callers=False)])
    channel = tls_channel(world, gw)
    try:
        assert history(gateway_pb2_grpc.AppStoreGatewayStub(channel), world).transactions
        assert "no callers are configured" in gw.read_log()
    finally:
        channel.close()
        gw.stop()


def test_callers_without_a_way_to_authenticate_is_a_configuration_error(world):
    path = gateway_config(world, "nothing", jwt=False, callers=True)
    result = subprocess.run([GATEWAY_BIN, "check-config", "--config", path], capture_output=True, text=True, timeout=30)
    assert result.returncode == 1
    assert "callers" in result.stdout + result.stderr


def test_check_config_names_an_unusable_jwks_or_certificate(world, tmp_path):
    broken = tmp_path / "jwks.json"
    broken.write_text('{"keys": [{"kty": "oct", "k": "c2VjcmV0"}]}')
    path = gateway_config(world, "bad-jwks", jwks=str(broken))
    result = subprocess.run([GATEWAY_BIN, "check-config", "--config", path], capture_output=True, text=True, timeout=30)
    assert result.returncode == 1 and "authentication.jwt.jwksFile" in result.stdout, result.stdout + result.stderr
    config = yaml.safe_load(open(gateway_config(world, "bad-cert")))
    config["tls"]["privateKeyFile"] = world["files"]["ca.pem"]
    yaml.safe_dump(config, open(path, "w"))
    result = subprocess.run([GATEWAY_BIN, "check-config", "--config", path], capture_output=True, text=True, timeout=30)
    assert result.returncode == 1 and "tls" in result.stdout, result.stdout + result.stderr


def test_server_certificate_files_are_reloaded(world, tmp_path):
    import shutil
    import socket
    import ssl

    certificate, key = tmp_path / "server.pem", tmp_path / "server.key"
    shutil.copy(world["files"]["server.pem"], certificate)
    shutil.copy(world["files"]["server.key"], key)
    config = yaml.safe_load(open(gateway_config(world, "reload", jwt=False, callers=False)))
    config["tls"] = {"certificateFile": str(certificate), "privateKeyFile": str(key)}
    path = os.path.join(world["dir"], "reload.yaml")
    yaml.safe_dump(config, open(path, "w"))
    gw = Gateway(["--config", path])

    def served_serial():
        context = ssl.create_default_context(cafile=world["files"]["ca.pem"])
        context.set_alpn_protocols(["h2"])
        with socket.create_connection(("127.0.0.1", gw.port), timeout=5) as raw:
            with context.wrap_socket(raw, server_hostname="localhost") as tls:
                assert tls.selected_alpn_protocol() == "h2"
                return x509.load_der_x509_certificate(tls.getpeercert(binary_form=True)).serial_number

    try:
        first = served_serial()
        new_key, new_certificate = issue(world["ca"], "localhost", [x509.DNSName("localhost")],
                                         ExtendedKeyUsageOID.SERVER_AUTH)
        # Key first, then the certificate: in between, the pair does not match and the old one stays in force.
        key.write_bytes(new_key)
        time.sleep(1.5)
        assert served_serial() == first
        certificate.write_bytes(new_certificate)
        wait_until(lambda: served_serial() != first)
        assert served_serial() == x509.load_pem_x509_certificate(new_certificate).serial_number
        assert "reloaded the TLS certificate" in gw.read_log()
    finally:
        gw.stop()


# --- mutual TLS -------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def mtls_gateway(world):
    gw = Gateway(["--config", gateway_config(world, "mtls", client_ca=True)])
    yield gw
    gw.stop()


def test_mutual_tls_identities_spiffe_and_dns(world, mtls_gateway):
    channels = {name: tls_channel(world, mtls_gateway, name) for name in ("spiffe", "dns")}
    try:
        stubs = {name: gateway_pb2_grpc.AppStoreGatewayStub(ch) for name, ch in channels.items()}
        # The URI SAN (SPIFFE id) wins over the DNS SAN; that identity may use "example" only.
        assert history(stubs["spiffe"], world).transactions
        assert refused(lambda: history(stubs["spiffe"], world, app="example2", bundle="com.example.app2")).code() \
            == grpc.StatusCode.PERMISSION_DENIED
        # The DNS SAN, listed as dns:reports.internal, with "*".
        assert history(stubs["dns"], world, app="example2", bundle="com.example.app2").transactions
        # A bearer token outranks the certificate: REPORTS may use example2 with the SPIFFE certificate.
        assert history(stubs["spiffe"], world, world["rsa"].token(sub=REPORTS), app="example2",
                       bundle="com.example.app2").transactions
    finally:
        for ch in channels.values():
            ch.close()


def cause(error):
    """The `cause` of a refusal's google.rpc.ErrorInfo (UNAUTHENTICATED) or its `caller` (PERMISSION_DENIED)."""
    from google.rpc import error_details_pb2, status_pb2

    status = status_pb2.Status.FromString(dict(error.trailing_metadata())["grpc-status-details-bin"])
    info = error_details_pb2.ErrorInfo()
    for detail in status.details:
        if detail.Unpack(info):
            return info.metadata.get("cause") or info.metadata.get("caller")
    raise AssertionError("no ErrorInfo in the status details")


def test_a_certificate_common_name_identifies_nobody_by_default(world, mtls_gateway):
    """The reported case: a certificate of the trusted CA with CN = a listed JWT subject and no SAN is not that
    caller; without tls.identityFromCommonName a CN is no identity at all, so no CN-only certificate is one."""
    channels = {name: tls_channel(world, mtls_gateway, name) for name in ("billing-cn", "cn")}
    try:
        started = now_ms()
        for name, channel in channels.items():
            error = refused(lambda: history(gateway_pb2_grpc.AppStoreGatewayStub(channel), world, app="example2",
                                            bundle="com.example.app2"))
            assert error.code() == grpc.StatusCode.UNAUTHENTICATED, (name, error.details())
            assert cause(error) == "certificate_without_identity", name
        time.sleep(0.2)
        assert not world["simulator"].calls_since(started)
        # The same channel with BILLING's token is BILLING: the certificate only carried the connection.
        assert history(gateway_pb2_grpc.AppStoreGatewayStub(channels["billing-cn"]), world,
                       world["rsa"].token()).transactions
    finally:
        for channel in channels.values():
            channel.close()


def test_a_common_name_counts_only_with_identity_from_common_name_and_a_cn_entry(world):
    gw = Gateway(["--config", gateway_config(world, "mtls-cn", client_ca=True, common_names=True)])
    channels = {name: tls_channel(world, gw, name) for name in ("billing-cn", "cn", "spiffe")}
    try:
        stubs = {name: gateway_pb2_grpc.AppStoreGatewayStub(ch) for name, ch in channels.items()}
        # Listed as cn:legacy-batch, for example2 only.
        assert history(stubs["cn"], world, app="example2", bundle="com.example.app2").transactions
        error = refused(lambda: history(stubs["cn"], world))
        assert error.code() == grpc.StatusCode.PERMISSION_DENIED and cause(error) == "cn:legacy-batch"
        # A CN equal to a listed JWT subject is still not that subject: unknown caller, named as a CN.
        error = refused(lambda: history(stubs["billing-cn"], world))
        assert error.code() == grpc.StatusCode.PERMISSION_DENIED, error.details()
        assert cause(error) == "cn:" + BILLING
        # SANs still come first: the SPIFFE certificate (CN billing-api) is its URI SAN.
        assert history(stubs["spiffe"], world).transactions
        log = gw.read_log()
        assert any('"caller":"cn:legacy-batch"' in line and '"rpc"' in line for line in log.splitlines())
        metrics = urllib.request.urlopen(gw.admin_url + "/metrics", timeout=5).read().decode()
        assert re.search(r'appstore_gateway_caller_calls_total\{caller="cn:legacy-batch"\} [1-9]', metrics)
    finally:
        for channel in channels.values():
            channel.close()
        gw.stop()


def test_a_uri_san_matches_a_uri_entry_and_a_jwt_sub_of_that_uri_does_not(world, mtls_gateway):
    channel = tls_channel(world, mtls_gateway, "dns")  # reports.internal: "*", so any refusal is the token's
    try:
        stub = gateway_pb2_grpc.AppStoreGatewayStub(channel)
        started = now_ms()
        # sub = the SPIFFE id the spiffe entry lists: a token is never a certificate's URI SAN.
        error = refused(lambda: history(stub, world, world["rsa"].token(sub=SPIFFE)))
        assert error.code() == grpc.StatusCode.PERMISSION_DENIED and cause(error) == "jwt:" + SPIFFE
        # Nor is a sub of "dns:reports.internal" the DNS SAN of that entry.
        error = refused(lambda: history(stub, world, world["ec"].token(sub="dns:reports.internal")))
        assert error.code() == grpc.StatusCode.PERMISSION_DENIED
        time.sleep(0.2)
        assert not world["simulator"].calls_since(started)
        # A JWT-SVID listed as jwt:<its sub> is that caller (example2 only).
        assert history(stub, world, world["ec"].token(sub=SVID_SUB), app="example2",
                       bundle="com.example.app2").transactions
        assert refused(lambda: history(stub, world, world["ec"].token(sub=SVID_SUB))).code() \
            == grpc.StatusCode.PERMISSION_DENIED
    finally:
        channel.close()
    # And the certificate that carries that URI SAN is the spiffe entry.
    channel = tls_channel(world, mtls_gateway, "spiffe")
    try:
        assert history(gateway_pb2_grpc.AppStoreGatewayStub(channel), world).transactions
    finally:
        channel.close()


def test_a_cn_entry_without_identity_from_common_name_is_a_configuration_error(world):
    config = yaml.safe_load(open(gateway_config(world, "cn-without-opt-in", client_ca=True)))
    config["callers"].append({"identity": "cn:legacy-batch", "apps": ["example2"]})
    path = os.path.join(world["dir"], "cn-without-opt-in.yaml")
    yaml.safe_dump(config, open(path, "w"))
    result = subprocess.run([GATEWAY_BIN, "check-config", "--config", path], capture_output=True, text=True, timeout=30)
    assert result.returncode == 1
    assert "identityFromCommonName" in result.stdout + result.stderr and "callers[" in result.stdout + result.stderr


@pytest.mark.parametrize("client", [None, "stranger"])
def test_clients_without_a_trusted_certificate_are_refused(world, mtls_gateway, client):
    channel = tls_channel(world, mtls_gateway, client)
    try:
        started = now_ms()
        error = refused(lambda: history(gateway_pb2_grpc.AppStoreGatewayStub(channel), world, world["rsa"].token(),
                                        timeout=5))
        assert error.code() == grpc.StatusCode.UNAVAILABLE  # the TLS handshake fails
        assert not world["simulator"].calls_since(started)
    finally:
        channel.close()


# --- fair share -------------------------------------------------------------------------------------------

def fair_gateway(world, budget, rate):
    """A gateway with callers at `rate` on the local or the Redis budget (its own redis-server), or a skip."""
    import shutil

    redis = None
    if budget == "redis":
        if shutil.which("redis-server") is None:
            pytest.skip("redis-server not installed")
        from test_shared_budget import Redis
        redis = Redis()
    path = gateway_config(world, "fair-" + budget, rate=rate)
    if redis:
        config = yaml.safe_load(open(path))
        config["redis"] = {"url": f"redis://127.0.0.1:{redis.port}/0", "keyPrefix": f"fair-{uuid.uuid4().hex[:8]}:"}
        yaml.safe_dump(config, open(path, "w"))
    return Gateway(["--config", path]), redis


class Flood:
    """`workers` threads calling GetHistory for BILLING back to back, each call needing its own token."""

    def __init__(self, world, gw, workers):
        self.channel = tls_channel(world, gw)
        self.stub = gateway_pb2_grpc.AppStoreGatewayStub(self.channel)
        self.transactions = world["simulator"].transactions["com.example.app"]
        self.token = world["rsa"].token(sub=BILLING)
        self.stop = threading.Event()
        self.codes = []
        self.workers = [threading.Thread(target=self.run, args=(n,)) for n in range(workers)]
        for worker in self.workers:
            worker.start()

    def run(self, number):
        calls = 0
        while not self.stop.is_set():
            # Distinct filters defeat coalescing: every flood call needs its own token.
            request = history_pb2.GetHistoryRequest(
                app="example", transaction_id=self.transactions[number % len(self.transactions)],
                product_ids=[f"p{number}-{calls}-{uuid.uuid4().hex[:6]}"])
            calls += 1
            try:
                self.stub.GetHistory(request, metadata=bearer(self.token), timeout=5)
                self.codes.append("OK")
            except grpc.RpcError as error:
                self.codes.append(error.code().name)

    def end(self):
        self.stop.set()
        for worker in self.workers:
            worker.join()
        self.channel.close()


def steady_calls(world, gw, count, interval):
    """REPORTS calling GetHistory `count` times, one call every `interval` seconds; the status of each."""
    channel = tls_channel(world, gw)
    stub = gateway_pb2_grpc.AppStoreGatewayStub(channel)
    transactions = world["simulator"].transactions["com.example.app"]
    token = world["ec"].token(sub=REPORTS)
    codes = []
    try:
        for n in range(count):
            started = time.monotonic()
            request = history_pb2.GetHistoryRequest(app="example", transaction_id=transactions[n % len(transactions)],
                                                    product_ids=[f"quiet-{n}-{uuid.uuid4().hex[:6]}"])
            try:
                stub.GetHistory(request, metadata=bearer(token), timeout=5)
                codes.append("OK")
            except grpc.RpcError as error:
                codes.append(error.code().name)
            time.sleep(max(0.0, interval - (time.monotonic() - started)))
    finally:
        channel.close()
    return codes


def contend(world, budget, rate, workers, warm_up, calls):
    """A flood of `workers` against one app's getTransactionHistory bucket (`rate`), then `calls` steady calls
    of another caller, two a second: (the flood's codes, the steady caller's codes, /metrics). With the Redis
    budget the tokens must have come from Redis."""
    gw, redis = fair_gateway(world, budget, rate)
    flood = Flood(world, gw, workers)
    try:
        time.sleep(warm_up)  # the flood owns the bucket
        steady = steady_calls(world, gw, calls, 0.5)
    finally:
        flood.end()
    metrics = urllib.request.urlopen(gw.admin_url + "/metrics", timeout=5).read().decode()
    gw.stop()
    if redis:
        redis.stop()
        assert re.search(r'appstore_gateway_shared_budget_reservations_total\{[^}]*outcome="taken"\} [1-9]', metrics)
    return flood.codes, steady, metrics


@pytest.mark.parametrize("budget", ["local", "redis"])
def test_a_flooding_caller_leaves_another_caller_of_the_app_its_share(world, budget):
    # 4 calls/s for getTransactionHistory, waits up to 1 s: a flood of 16 workers wants far more.
    flood, quiet, metrics = contend(
        world, budget, {"getTransactionHistory": {"perSecond": 4, "burst": 1}, "maxWait": "1s"}, 16, 1.5, 12)
    assert "RESOURCE_EXHAUSTED" in flood, "the flood never exceeded the budget: the test shows nothing"
    assert quiet.count("OK") >= 0.8 * len(quiet), quiet
    assert re.search(r'appstore_gateway_fair_share_refusals_total\{caller="%s",app="example"\} [1-9]'
                     % re.escape(BILLING), metrics)


@pytest.mark.parametrize("budget", ["local", "redis"])
def test_a_steady_caller_below_its_share_is_served_at_a_max_wait_of_one_token_interval(world, budget):
    # 10 calls/s, a call waits at most 100 ms (one token interval): a flood of 8 workers keeps calls waiting
    # all the time, while the steady caller sends 2 calls/s. Each token goes, when it comes, to the caller
    # furthest below its share, so the steady caller's call gets the first token after it arrives.
    flood, steady, _ = contend(
        world, budget, {"getTransactionHistory": {"perSecond": 10, "burst": 1}, "maxWait": "100ms"}, 8, 0.5, 6)
    assert "OK" in flood and "RESOURCE_EXHAUSTED" in flood, "no contention: the test shows nothing"
    assert steady == ["OK"] * len(steady)


# --- the examples send the token --------------------------------------------------------------------------

def test_python_and_go_examples_send_a_token_file(world, jwt_gateway, tmp_path):
    import shutil
    import sys

    from conftest import ROOT

    gw, _, _ = jwt_gateway
    token_file = tmp_path / "token"
    token_file.write_text(world["ec"].token() + "\n")
    transaction = world["simulator"].transactions["com.example.app"][0]
    common = ["--target", f"localhost:{gw.port}", "--ca-file", world["files"]["ca.pem"]]
    python = [sys.executable, os.path.join(ROOT, "examples", "python", "client.py")]
    ok = subprocess.run(python + common + ["--token-file", str(token_file), "history", "--app", "example",
                                           "--transaction-id", transaction], capture_output=True, text=True, timeout=60)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    denied = subprocess.run(python + common + ["history", "--app", "example", "--transaction-id", transaction],
                            capture_output=True, text=True, timeout=60)
    assert denied.returncode == 2 and "UNAUTHENTICATED" in denied.stdout
    if shutil.which("go") is None or shutil.which("protoc-gen-go-grpc") is None:
        return
    out = tmp_path / "go"
    subprocess.run([os.path.join(ROOT, "examples", "go", "build.sh"), str(out)], check=True, capture_output=True,
                   timeout=600)
    client = [str(out / "bin" / "client"), "-target", f"localhost:{gw.port}", "-ca-file", world["files"]["ca.pem"],
              "-app", "example", "-transaction-id", transaction]
    ok = subprocess.run(client + ["-token-file", str(token_file)], capture_output=True, text=True, timeout=60)
    assert ok.returncode == 0 and "GetHistory: bundle_id=com.example.app" in ok.stdout, ok.stdout + ok.stderr
    denied = subprocess.run(client, capture_output=True, text=True, timeout=60)
    assert denied.returncode == 2 and "Unauthenticated" in denied.stdout


# --- key files: judged like the apps' .p8 ---------------------------------------------------------------------

def test_a_tls_key_others_may_read_is_refused_unless_allowed(world, tmp_path):
    import shutil

    key = tmp_path / "server.key"
    shutil.copy(world["files"]["server.key"], key)
    key.chmod(0o644)
    config = yaml.safe_load(open(gateway_config(world, "open-key", jwt=False, callers=False)))
    config["tls"]["privateKeyFile"] = str(key)
    path = tmp_path / "open-key.yaml"
    yaml.safe_dump(config, open(path, "w"))
    checked = subprocess.run([GATEWAY_BIN, "check-config", "--config", str(path)], capture_output=True, text=True,
                             timeout=60)
    assert checked.returncode == 1
    assert "tls.privateKeyFile" in checked.stdout + checked.stderr and "mode 644" in checked.stdout + checked.stderr
    served = subprocess.run([GATEWAY_BIN, "serve", "--config", str(path), "--listen", "127.0.0.1:0"],
                            capture_output=True, text=True, timeout=60,
                            env=dict(os.environ, APPSTORE_GATEWAY_ADMIN="127.0.0.1:0"))
    assert served.returncode == 1 and "tls.privateKeyFile" in served.stderr, served.stderr
    # The same escape hatch as for .p8 files.
    config["apple"] = dict(config.get("apple", {}), allowReadableKeyFiles=True)
    yaml.safe_dump(config, open(path, "w"))
    gw = Gateway(["--config", str(path)])
    try:
        channel = tls_channel(world, gw)
        try:
            from grpc_health.v1 import health_pb2, health_pb2_grpc
            assert health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=5).status \
                == health_pb2.HealthCheckResponse.SERVING
        finally:
            channel.close()
    finally:
        gw.stop()


# --- per-caller permissions (callers[].permissions, callers[].maxRealtimeStreams) -------------------------

# What each guarded RPC needs, written out here as the README's Callers section states it, so the gateway's own
# table is checked against the documentation rather than against itself.
READ, WRITE, SIGN, REALTIME = "read", "write", "sign", "realtime"
EXPECTED_PERMISSIONS = {
    "AppStoreGateway": {
        "GetHistory": READ, "StreamNotifications": READ, "VerifyJWS": READ, "GetTransactionInfo": READ,
        "GetAllSubscriptionStatuses": READ, "LookUpOrderId": READ, "GetRefundHistory": READ,
        "GetAppTransactionInfo": READ, "GetStatusOfSubscriptionRenewalDateExtensions": READ,
        "GetTestNotificationStatus": READ, "ExtractTransactionIdFromReceipt": READ,
        "SendConsumptionInformation": WRITE, "ExtendSubscriptionRenewalDate": WRITE,
        "ExtendRenewalDatesForAllActiveSubscribers": WRITE, "RequestTestNotification": WRITE,
        "SetAppAccountToken": WRITE, "FinishTransaction": WRITE,
        "CreatePromotionalOfferSignature": SIGN, "CreatePromotionalOfferV2Signature": SIGN,
        "CreateIntroductoryOfferEligibilitySignature": SIGN,
        "ServeRealtimeRequests": REALTIME,
    },
    "AdvancedCommerce": {
        "CreateInAppSignature": SIGN, "CancelSubscription": WRITE, "RevokeSubscription": WRITE,
        "ChangeSubscriptionPrice": WRITE, "ChangeSubscriptionMetadata": WRITE, "MigrateSubscription": WRITE,
        "RequestRefund": WRITE,
    },
    "RetentionMessaging": {
        "UploadImage": WRITE, "DeleteImage": WRITE, "GetImageList": READ, "UploadMessage": WRITE,
        "DeleteMessage": WRITE, "GetMessageList": READ, "ConfigureDefaultMessage": WRITE,
        "DeleteDefaultMessage": WRITE, "GetDefaultMessage": READ, "ConfigureRealtimeUrl": WRITE,
        "DeleteRealtimeUrl": WRITE, "GetRealtimeUrl": READ, "InitiatePerformanceTest": WRITE,
        "GetPerformanceTestResults": READ,
    },
    "SubscriptionState": {
        "GetSubscription": READ, "GetCustomer": READ, "ApplySignedTransaction": READ, "RefreshSubscription": READ,
        "WatchSubscriptionEvents": READ,
    },
}
READER, SIGNER, REALTIME_TEAM = (
    "system:serviceaccount:perm:reader", "system:serviceaccount:perm:signer", "system:serviceaccount:perm:rt")


@pytest.fixture(scope="module")
def permissions_gateway(world):
    path = gateway_config(world, "permissions")
    config = yaml.safe_load(open(path))
    config["callers"] += [
        {"identity": READER, "apps": ["*"], "permissions": ["read"]},
        {"identity": SIGNER, "apps": ["*"], "permissions": ["sign", "write"]},
        {"identity": REALTIME_TEAM, "apps": ["*"], "permissions": ["realtime"], "maxRealtimeStreams": 1},
    ]
    yaml.safe_dump(config, open(path, "w"))
    gw = Gateway(["--config", path])
    channel = tls_channel(world, gw)
    yield gw, channel
    channel.close()
    gw.stop()


def _guarded_methods():
    from appstore.gateway.v1 import advanced_commerce_pb2, gateway_pb2, retention_pb2, subscription_state_pb2

    for module, name in ((gateway_pb2, "AppStoreGateway"), (advanced_commerce_pb2, "AdvancedCommerce"),
                         (retention_pb2, "RetentionMessaging"), (subscription_state_pb2, "SubscriptionState")):
        yield from module.DESCRIPTOR.services_by_name[name].methods


def _call(channel, method, token, timeout=10):
    """Calls `method` with an (empty but for `app`) request; returns None, or the RpcError."""
    from google.protobuf import message_factory

    fields = method.input_type.fields_by_name
    request = message_factory.GetMessageClass(method.input_type)(**({"app": "example"} if "app" in fields else {}))
    path = f"/{method.containing_service.full_name}/{method.name}"
    serialize = lambda m: m.SerializeToString()
    try:
        if method.client_streaming:
            answer = channel.stream_stream(path, request_serializer=serialize, response_deserializer=lambda b: b)(
                iter([]), metadata=bearer(token), timeout=timeout)
            list(answer)
        elif method.server_streaming:
            list(channel.unary_stream(path, request_serializer=serialize, response_deserializer=lambda b: b)(
                request, metadata=bearer(token), timeout=timeout))
        else:
            channel.unary_unary(path, request_serializer=serialize, response_deserializer=lambda b: b)(
                request, metadata=bearer(token), timeout=timeout)
    except grpc.RpcError as error:
        return error
    return None


def test_every_guarded_rpc_needs_its_documented_permission(world, permissions_gateway):
    """A caller listed with `permissions: [read]` passes the guard on every read RPC and is refused every other
    one with PERMISSION_DENIED `PERMISSION_NOT_GRANTED` naming the permission, before a handler or Apple sees it;
    a caller with [sign, write] is refused exactly the read and realtime RPCs."""
    _, channel = permissions_gateway
    methods = list(_guarded_methods())
    listed = {(m.containing_service.name, m.name) for m in methods}
    documented = {(service, name) for service, table in EXPECTED_PERMISSIONS.items() for name in table}
    assert listed == documented, "a guarded RPC is missing from the README's permission table, or gone"
    for identity, granted in ((READER, {READ}), (SIGNER, {SIGN, WRITE})):
        token = world["ec"].token(sub=identity)
        needs = lambda m: EXPECTED_PERMISSIONS[m.containing_service.name][m.name]
        # The refused ones first: none of them reaches Apple.
        started = now_ms()
        for method in sorted(methods, key=lambda m: needs(m) in granted):
            if needs(method) in granted and started is not None:
                time.sleep(0.2)
                assert not world["simulator"].calls_since(started), identity
                started = None
            error = _call(channel, method, token)
            denied = (error is not None and error.code() == grpc.StatusCode.PERMISSION_DENIED
                      and error_info(error).reason == "PERMISSION_NOT_GRANTED")
            assert denied == (needs(method) not in granted), (identity, method.name, error)
            if denied:
                info = error_info(error)
                assert info.metadata["permission"] == needs(method) and info.metadata["caller"] == identity
                assert method.name in error.details()


def test_a_read_caller_reads_but_cannot_write_sign_or_serve_realtime(world, permissions_gateway):
    from appstore.gateway.v1 import signing_pb2, transaction_info_pb2

    gw, channel = permissions_gateway
    stub = gateway_pb2_grpc.AppStoreGatewayStub(channel)
    token = world["ec"].token(sub=READER)
    assert history(stub, world, token).transactions
    transaction = world["simulator"].transactions["com.example.app"][0]
    started = now_ms()
    error = refused(lambda: stub.FinishTransaction(
        transaction_info_pb2.FinishTransactionRequest(app="example", transaction_id=transaction),
        metadata=bearer(token), timeout=10))
    assert error.code() == grpc.StatusCode.PERMISSION_DENIED and error_info(error).metadata["permission"] == WRITE
    error = refused(lambda: stub.CreatePromotionalOfferV2Signature(
        signing_pb2.CreatePromotionalOfferV2SignatureRequest(app="example", product_id="p", offer_identifier="o"),
        metadata=bearer(token), timeout=10))
    assert error.code() == grpc.StatusCode.PERMISSION_DENIED and error_info(error).metadata["permission"] == SIGN
    time.sleep(0.2)
    assert not world["simulator"].calls_since(started)
    metrics = urllib.request.urlopen(gw.admin_url + "/metrics", timeout=5).read().decode()
    assert re.search(r'appstore_gateway_access_refusals_total\{reason="permission_not_granted"\} [1-9]', metrics)


def test_a_caller_holds_at_most_max_realtime_streams(world, permissions_gateway):
    from appstore.gateway.v1 import realtime_pb2

    _, channel = permissions_gateway
    stub = gateway_pb2_grpc.AppStoreGatewayStub(channel)
    token = world["ec"].token(sub=REALTIME_TEAM)  # maxRealtimeStreams: 1
    serve = realtime_pb2.ServeRealtimeRequestsRequest(serve=realtime_pb2.RealtimeServe(apps=["example"]))
    done = threading.Event()
    outcome = {}

    def open_stream():
        yield serve
        done.wait(30)

    def hold():
        try:
            list(stub.ServeRealtimeRequests(open_stream(), metadata=bearer(token), timeout=30))
        except grpc.RpcError as error:
            outcome["first"] = error.code()

    gw, _ = permissions_gateway
    opened = gw.read_log().count("realtime stream open")
    holder = threading.Thread(target=hold)
    holder.start()
    try:
        # Once the gateway has opened the first stream, a second one is refused while it stays open.
        wait_until(lambda: gw.read_log().count("realtime stream open") > opened or "first" in outcome)
        assert "first" not in outcome, outcome
        error = refused(lambda: list(stub.ServeRealtimeRequests(iter([serve]), metadata=bearer(token), timeout=10)))
        assert error.code() == grpc.StatusCode.RESOURCE_EXHAUSTED and "maxRealtimeStreams" in error.details()
    finally:
        done.set()
        holder.join(40)
    # The held stream ended with the caller's cancellation (its iterator ended), not with a refusal.
    assert outcome.get("first") != grpc.StatusCode.RESOURCE_EXHAUSTED


def test_permissions_are_checked_at_load(world, tmp_path):
    path = gateway_config(world, "bad-permissions")
    config = yaml.safe_load(open(path))
    for permissions, problem in ((["read", "admin"], "callers[0].permissions[1]"), ([], "callers[0].permissions")):
        config["callers"][0]["permissions"] = permissions
        yaml.safe_dump(config, open(path, "w"))
        checked = subprocess.run([GATEWAY_BIN, "check-config", "--config", path], capture_output=True, text=True,
                                 timeout=60)
        assert checked.returncode != 0 and problem in checked.stdout + checked.stderr, checked


def test_a_reload_that_takes_a_permission_or_an_app_away_ends_the_callers_open_streams(world):
    """`callers` is re-read when the configuration file changes: a stream of a caller that lost the permission
    (or the app) it was opened with ends with PERMISSION_DENIED, new calls are refused, other callers' streams go
    on; a file that does not load keeps the callers in force."""
    from appstore.gateway.v1 import realtime_pb2

    path = gateway_config(world, "reload")
    config = yaml.safe_load(open(path))
    config["callers"] += [
        {"identity": REALTIME_TEAM, "apps": ["example"], "permissions": ["realtime", "read"]},
        {"identity": READER, "apps": ["example"], "permissions": ["realtime"]},
    ]
    yaml.safe_dump(config, open(path, "w"))
    gw = Gateway(["--config", path])
    channel = tls_channel(world, gw)
    stub = gateway_pb2_grpc.AppStoreGatewayStub(channel)
    serve = realtime_pb2.ServeRealtimeRequestsRequest(serve=realtime_pb2.RealtimeServe(apps=["example"]))
    done = threading.Event()
    outcomes = {}

    def hold(identity):
        def messages():
            yield serve
            done.wait(60)

        try:
            list(stub.ServeRealtimeRequests(messages(), metadata=bearer(world["ec"].token(sub=identity)), timeout=60))
            outcomes[identity] = "ended"
        except grpc.RpcError as error:
            outcomes[identity] = error

    def streams():
        log = gw.read_log()
        return log.count("realtime stream open") - log.count("realtime stream closed")

    threads = [threading.Thread(target=hold, args=(identity,)) for identity in (REALTIME_TEAM, READER)]
    try:
        for thread in threads:
            thread.start()
        wait_until(lambda: streams() == 2)
        # A file that does not load keeps the callers in force: both streams stay.
        open(path, "w").write("callers: [ this is not yaml")
        time.sleep(3)
        assert streams() == 2 and not outcomes
        # REALTIME_TEAM loses `realtime`; READER keeps everything.
        config["callers"][-2]["permissions"] = ["read"]
        yaml.safe_dump(config, open(path, "w"))
        wait_until(lambda: REALTIME_TEAM in outcomes, 20)
        error = outcomes[REALTIME_TEAM]
        assert isinstance(error, grpc.RpcError) and error.code() == grpc.StatusCode.PERMISSION_DENIED
        assert error_info(error).reason == "PERMISSION_NOT_GRANTED"
        assert READER not in outcomes and streams() == 1
        refused_call = refused(lambda: list(stub.ServeRealtimeRequests(
            iter([serve]), metadata=bearer(world["ec"].token(sub=REALTIME_TEAM)), timeout=10)))
        assert refused_call.code() == grpc.StatusCode.PERMISSION_DENIED
        # READER loses the app its stream serves.
        config["callers"][-1]["apps"] = ["example2"]
        yaml.safe_dump(config, open(path, "w"))
        wait_until(lambda: READER in outcomes, 20)
        assert outcomes[READER].code() == grpc.StatusCode.PERMISSION_DENIED
        assert error_info(outcomes[READER]).reason == "APP_NOT_ALLOWED"
        log = gw.read_log()
        assert "kept the previous callers" in log and "reloaded callers" in log
    finally:
        done.set()
        for thread in threads:
            thread.join(70)
        channel.close()
        gw.stop()
