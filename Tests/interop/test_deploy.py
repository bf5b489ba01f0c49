"""The Kubernetes manifests and the image files in deploy/: schema-valid, consistent with each other, and
with a ConfigMap the real binary accepts."""
import glob
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time

import grpc
import pytest
import yaml

from conftest import ROOT, Gateway

DEPLOY = os.path.join(ROOT, "deploy")
KUBE = os.path.join(DEPLOY, "kubernetes")
BASE = os.path.join(KUBE, "base")
KUBERNETES_VERSION = "1.30"  # the oldest version we support; kubernetes-validate ships its schemas offline
GATEWAY_SERVICE = "appstore.gateway.v1.AppStoreGateway"
DEFAULT_DRAIN_DELAY_SECONDS = 5  # shutdown.drainDelay's documented default


def _documents(path):
    with open(path) as f:
        return [doc for doc in yaml.safe_load_all(f) if doc]


def _manifest_files():
    files = sorted(glob.glob(os.path.join(KUBE, "**", "*.yaml"), recursive=True))
    return [f for f in files if os.path.basename(f) != "kustomization.yaml"]


def _base(kind, name=None):
    found = []
    for path in _manifest_files():
        if os.path.dirname(path) == BASE:
            found += [d for d in _documents(path) if d["kind"] == kind and name in (None, d["metadata"]["name"])]
    assert len(found) == 1, f"expected one {kind} {name or ''} in the base, found {len(found)}"
    return found[0]


def _container():
    (container,) = _base("Deployment")["spec"]["template"]["spec"]["containers"]
    return container


def _gateway_config():
    return yaml.safe_load(_base("ConfigMap", "appstore-gateway-config")["data"]["gateway.yaml"])


def _seconds(text):
    match = re.fullmatch(r"(\d+)(ms|s|m|h)", str(text))
    assert match, f"not a duration: {text!r}"
    return int(match.group(1)) * {"ms": 0.001, "s": 1, "m": 60, "h": 3600}[match.group(2)]


OPERATOR_KINDS = {"PodMonitor", "PrometheusRule"}  # monitoring.coreos.com CRDs: no schema offline, checked below


def _validate(doc, where):
    import kubernetes_validate

    if doc["kind"] in OPERATOR_KINDS:
        assert doc["apiVersion"] == "monitoring.coreos.com/v1", where
        return

    if doc["kind"] == "HorizontalPodAutoscaler" and "scaleTargetRef" not in doc.get("spec", {}):
        # A strategic-merge patch in an overlay, not a whole object: checked after `kubectl kustomize`.
        return
    try:
        kubernetes_validate.validate(doc, KUBERNETES_VERSION, strict=True)
    except kubernetes_validate.ValidationError as error:
        pytest.fail(f"{where}: {doc['kind']}/{doc['metadata'].get('name')}: {error.message} at {list(error.path)}")


@pytest.mark.parametrize("path", _manifest_files(), ids=lambda p: os.path.relpath(p, KUBE))
def test_manifest_validates_against_the_kubernetes_schema(path):
    docs = _documents(path)
    assert docs, f"{path} is empty"
    for doc in docs:
        _validate(doc, os.path.relpath(path, ROOT))


def test_kustomization_lists_every_base_manifest_but_the_examples():
    for component in glob.glob(os.path.join(KUBE, "components", "*")):
        with open(os.path.join(component, "kustomization.yaml")) as f:
            kustomization = yaml.safe_load(f)
        assert kustomization["kind"] == "Component"
        present = {os.path.basename(p) for p in glob.glob(os.path.join(component, "*.yaml"))}
        assert set(kustomization["resources"]) == present - {"kustomization.yaml"}
    with open(os.path.join(BASE, "kustomization.yaml")) as f:
        listed = set(yaml.safe_load(f)["resources"])
    present = {os.path.basename(p) for p in glob.glob(os.path.join(BASE, "*.yaml"))} - {"kustomization.yaml"}
    assert listed == present - {"secret.example.yaml", "jwks-configmap.example.yaml",
                                "resume-token-keys-secret.example.yaml", "admin-token-secret.example.yaml"}


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl (for `kubectl kustomize`) is not installed")
@pytest.mark.parametrize("overlay", ["base", "overlays/example"])
def test_kustomize_output_validates(overlay):
    rendered = subprocess.run(["kubectl", "kustomize", os.path.join(KUBE, overlay)],
                              capture_output=True, text=True, timeout=30)
    assert rendered.returncode == 0, rendered.stderr
    docs = [d for d in yaml.safe_load_all(rendered.stdout) if d]
    assert {d["kind"] for d in docs} >= {"Deployment", "Service", "ConfigMap", "PodDisruptionBudget",
                                         "HorizontalPodAutoscaler", "NetworkPolicy"}
    for doc in docs:
        _validate(doc, f"kubectl kustomize {overlay}")


def test_probes_use_the_admin_port_that_callers_cannot_reach():
    # A flood of connections to the gRPC port fills its caps; probes there would fail and get pods restarted.
    container = _container()
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert int(_gateway_config()["listen"].rsplit(":", 1)[1]) == ports["grpc"] == 50051
    assert int(_gateway_config()["admin"]["listen"].rsplit(":", 1)[1]) == ports["admin"]
    paths = {}
    for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
        assert set(container[probe]) & {"grpc", "tcpSocket", "exec"} == set(), probe
        assert container[probe]["httpGet"]["port"] in ("admin", ports["admin"]), probe
        paths[probe] = container[probe]["httpGet"]["path"]
    assert paths == {"startupProbe": "/healthz", "livenessProbe": "/healthz", "readinessProbe": "/readyz"}
    policy = _base("NetworkPolicy")["spec"]
    for rule in policy["ingress"]:
        labels = [peer["namespaceSelector"]["matchLabels"] for peer in rule["from"]]
        if {"appstore-gateway-client": "true"} in labels:
            assert [p["port"] for p in rule["ports"]] == [ports["grpc"]], "callers must not reach the admin port"


def test_the_admin_port_answers_the_probes_as_the_manifest_asks(fresh_gateway):
    import urllib.error
    import urllib.request

    gw = fresh_gateway()
    for probe, path in (("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")):
        assert _container()[probe]["httpGet"]["path"] == path
        assert urllib.request.urlopen(gw.admin_url + path, timeout=5).status == 200, probe
    # From SIGTERM on readiness fails (503) while liveness holds: the pod leaves the Service, is not restarted.
    drain = fresh_gateway(env={"APPSTORE_GATEWAY_SHUTDOWN_DRAIN_DELAY": "3s"})
    drain.proc.send_signal(signal.SIGTERM)
    time.sleep(0.5)
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(drain.admin_url + "/readyz", timeout=5)
    assert refused.value.code == 503
    assert urllib.request.urlopen(drain.admin_url + "/healthz", timeout=5).status == 200


def test_services_speak_h2c_on_the_container_ports():
    ports = {p["name"]: p["containerPort"] for p in _container()["ports"]}
    admin_port = int(_gateway_config()["admin"]["listen"].rsplit(":", 1)[1])
    assert ports["admin"] == admin_port
    service = _base("Service", "appstore-gateway")
    by_name = {p["name"]: p for p in service["spec"]["ports"]}
    assert by_name["grpc"]["targetPort"] == ports["grpc"]
    assert by_name["grpc"]["appProtocol"] == "kubernetes.io/h2c"
    assert by_name["admin"]["targetPort"] == ports["admin"]
    headless = _base("Service", "appstore-gateway-headless")
    assert headless["spec"]["clusterIP"] == "None"
    assert [p["targetPort"] for p in headless["spec"]["ports"]] == [ports["grpc"]]


def test_termination_grace_exceeds_drain_plus_grace():
    shutdown = _gateway_config().get("shutdown", {})
    drain = _seconds(shutdown.get("drainDelay", f"{DEFAULT_DRAIN_DELAY_SECONDS}s"))
    grace = _seconds(shutdown.get("grace", "10s"))
    pod = _base("Deployment")["spec"]["template"]["spec"]
    assert pod["terminationGracePeriodSeconds"] > drain + grace
    # Liveness must not restart a pod that is draining (health may read NOT_SERVING from SIGTERM on).
    liveness = _container()["livenessProbe"]
    assert liveness["periodSeconds"] * liveness["failureThreshold"] > drain + grace


def test_security_context_is_restricted():
    pod = _base("Deployment")["spec"]["template"]["spec"]
    context = _container()["securityContext"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["seccompProfile"]["type"] == "RuntimeDefault"
    assert context["readOnlyRootFilesystem"] is True
    assert context["allowPrivilegeEscalation"] is False
    assert context["capabilities"]["drop"] == ["ALL"]
    assert {c["topologyKey"] for c in pod["topologySpreadConstraints"]} == {
        "topology.kubernetes.io/zone", "kubernetes.io/hostname"}
    assert _base("Deployment")["spec"]["replicas"] == 3


def test_private_key_secret_is_mounted_where_the_config_points():
    pod = _base("Deployment")["spec"]["template"]["spec"]
    key_file = _gateway_config()["apps"][0]["privateKeyFile"]
    mounts = {m["name"]: m for m in _container()["volumeMounts"]}
    volumes = {v["name"]: v for v in pod["volumes"]}
    (name,) = [n for n, v in volumes.items() if v.get("secret", {}).get("secretName") == "appstore-gateway-keys"]
    assert mounts[name]["mountPath"] == os.path.dirname(key_file)
    assert mounts[name]["readOnly"] is True
    assert volumes[name]["secret"]["defaultMode"] == 0o400
    (secret,) = _documents(os.path.join(BASE, "secret.example.yaml"))
    assert secret["metadata"]["name"] == volumes[name]["secret"]["secretName"]
    assert list(secret["stringData"]) == [os.path.basename(key_file)]
    assert "PLACEHOLDER-NOT-A-REAL-KEY" in secret["stringData"][os.path.basename(key_file)]
    config_mount = [m for m in _container()["volumeMounts"] if m["name"] == "config"][0]
    assert config_mount["mountPath"] == "/etc/appstore-gateway"


def test_network_policy_allows_clients_in_and_only_https_and_dns_out():
    policy = _base("NetworkPolicy")["spec"]
    assert set(policy["policyTypes"]) == {"Ingress", "Egress"}
    for rule in policy["ingress"]:
        for peer in rule["from"]:
            assert set(peer) == {"namespaceSelector"}, "ingress only from labelled namespaces"
    assert {"appstore-gateway-client": "true"} in [
        peer["namespaceSelector"]["matchLabels"] for rule in policy["ingress"] for peer in rule["from"]]
    # The admin port (its /metrics names every caller) only from the monitoring namespaces, the gRPC port
    # only from the clients'.
    admin_port = {p["name"]: p["containerPort"] for p in _container()["ports"]}["admin"]
    opened = {}
    for rule in policy["ingress"]:
        for peer in rule["from"]:
            for port in rule["ports"]:
                opened.setdefault(port["port"], []).append(peer["namespaceSelector"]["matchLabels"])
    assert opened[admin_port] == [{"appstore-gateway-metrics": "true"}], opened
    assert opened[50051] == [{"appstore-gateway-client": "true"}], opened
    egress = {(p.get("protocol", "TCP"), p["port"]) for rule in policy["egress"] for p in rule["ports"]}
    assert egress == {("TCP", 443), ("UDP", 53), ("TCP", 53)}


def test_dockerfile_matches_the_manifests():
    with open(os.path.join(DEPLOY, "Dockerfile")) as f:
        dockerfile = f.read()
    assert re.search(r"^FROM swift:\$\{SWIFT_VERSION\}-bookworm AS builder$", dockerfile, re.M)
    assert re.search(r"^FROM debian:bookworm-slim$", dockerfile, re.M)
    assert "--static-swift-stdlib" in dockerfile
    assert re.search(r"^EXPOSE 50051 9090$", dockerfile, re.M)
    pod = _base("Deployment")["spec"]["template"]["spec"]
    user = re.search(r"^USER (\d+):(\d+)$", dockerfile, re.M)
    assert user and int(user.group(1)) == pod["securityContext"]["runAsUser"]
    assert re.search(r'^ENTRYPOINT \["/usr/local/bin/appstore-gateway"\]$', dockerfile, re.M)
    assert re.search(r'^CMD \["serve", "--config", "/etc/appstore-gateway/gateway.yaml"\]$', dockerfile, re.M)
    (root,) = _gateway_config()["verification"]["rootCertificates"]
    assert f"COPY certs/AppleRootCA-G3.cer {root}" in dockerfile
    assert os.path.exists(os.path.join(ROOT, "certs", "AppleRootCA-G3.cer"))


def _install_deps_packages(name):
    """The packages of one array (`run_packages`, `test_packages`) of scripts/install-deps.sh."""
    with open(os.path.join(ROOT, "scripts", "install-deps.sh")) as f:
        body = re.search(rf"^{name}=\((.*?)^\)", f.read(), re.M | re.S).group(1)
    return [line.split("#")[0].strip() for line in body.splitlines() if line.split("#")[0].strip()]


def test_the_image_builds_with_what_make_run_installs_and_runs_with_their_libraries():
    """`make run` installs only `install-deps.sh run`; the image's builder stage needs exactly those packages,
    and its runtime stage the shared library of each -dev package (a missing one fails the image's ldd check)."""
    run, test = _install_deps_packages("run_packages"), _install_deps_packages("test_packages")
    assert run and test and not set(run) & set(test)
    with open(os.path.join(DEPLOY, "Dockerfile")) as f:
        dockerfile = f.read()
    builder, runtime = re.findall(r"apt-get install -y --no-install-recommends((?:\s*\\\n[^\n]*)+?)\s*\\\n\s*&&",
                                  dockerfile)
    assert set(builder.replace("\\", " ").split()) == set(run)
    libraries = {"libnghttp2-dev": "libnghttp2-14", "libprotobuf-c-dev": "libprotobuf-c1", "libssl-dev": "libssl3",
                 "libcurl4-openssl-dev": "libcurl4", "libhiredis-dev": "libhiredis0.14",
                 "libsqlite3-dev": "libsqlite3-0", "libjemalloc-dev": "libjemalloc2", "libpq-dev": "libpq5"}
    assert set(libraries) == set(run) - {"pkg-config"}
    assert set(runtime.replace("\\", " ").split()) == set(libraries.values()) | {"ca-certificates"}


def test_the_gateway_allocates_with_jemalloc():
    """The binary links jemalloc ahead of libc, so the process's mallocs (Swift's runtime, nghttp2, libcurl)
    are jemalloc's: asked through its MALLOC_CONF, it prints the statistics of what it served at exit."""
    gateway = Gateway(["--simulator"], env={"MALLOC_CONF": "stats_print:true"})
    try:
        with open(f"/proc/{gateway.proc.pid}/maps") as f:
            assert "libjemalloc.so" in f.read()
        assert gateway.terminate(timeout=15) == 0
        log = gateway.read_log()
        assert "Begin jemalloc statistics" in log
        allocated = re.search(r"^Allocated: (\d+)", log, re.M)
        assert allocated and int(allocated.group(1)) > 0, log[-2000:]
    finally:
        gateway.stop()


def _serve_and_stop(config, extra_env=None):
    """Starts the real binary on `config` (a dict), checks health, SIGTERMs it and returns its log."""
    from grpc_health.v1 import health_pb2, health_pb2_grpc

    with tempfile.TemporaryDirectory(prefix="deploy-config-") as tmp:
        path = os.path.join(tmp, "gateway.yaml")
        with open(path, "w") as f:
            yaml.safe_dump(config, f)
        gateway = Gateway(["--config", path], env=extra_env)
        try:
            with grpc.insecure_channel(gateway.address) as channel:
                stub = health_pb2_grpc.HealthStub(channel)
                for service in ("", GATEWAY_SERVICE):
                    reply = stub.Check(health_pb2.HealthCheckRequest(service=service), timeout=5)
                    assert reply.status == health_pb2.HealthCheckResponse.SERVING, service
            assert gateway.terminate(timeout=15) == 0, gateway.read_log()
            return gateway.read_log()
        finally:
            gateway.stop()


def _throwaway_key_ring(directory):
    """A resume-token key ring with one fresh key, private to its owner, standing in for the Secret's."""
    import base64

    path = directory / "resume-token-keys"
    path.write_text(base64.b64encode(os.urandom(32)).decode() + "\n")
    path.chmod(0o400)
    return str(path)


def test_resume_token_key_ring_secret_is_mounted_as_a_directory_where_the_config_points():
    ring = _gateway_config()["notifications"]["resumeTokenKeyFile"]
    pod = _base("Deployment")["spec"]["template"]["spec"]
    (mount,) = [m for m in _container()["volumeMounts"] if m["mountPath"] == os.path.dirname(ring)]
    assert "subPath" not in mount, "a subPath mount never sees Secret updates (key rotation)"
    assert mount["readOnly"] is True
    (volume,) = [v for v in pod["volumes"] if v["name"] == mount["name"]]
    assert volume["secret"]["defaultMode"] == 0o400
    assert [item["path"] for item in volume["secret"]["items"]] == [os.path.basename(ring)]
    (secret,) = _documents(os.path.join(BASE, "resume-token-keys-secret.example.yaml"))
    assert secret["metadata"]["name"] == volume["secret"]["secretName"]
    assert list(secret["stringData"]) == [item["key"] for item in volume["secret"]["items"]]


def test_the_example_key_ring_is_refused_so_no_pod_runs_with_a_published_key(tmp_path):
    (secret,) = _documents(os.path.join(BASE, "resume-token-keys-secret.example.yaml"))
    ring = tmp_path / "keys"
    ring.write_text(secret["stringData"]["keys"])
    ring.chmod(0o400)
    config = _configmap_config_with_key(_kubelet_secret_mount(tmp_path / "secrets", "key.p8", 0o400))
    config["notifications"]["resumeTokenKeyFile"] = str(ring)
    checked = _check_config(config, tmp_path)
    assert checked.returncode == 1
    assert "notifications.resumeTokenKeyFile" in checked.stdout and "line 2" in checked.stdout, checked.stdout


def test_admin_token_secret_is_mounted_as_a_directory_where_the_config_points():
    token = _gateway_config()["admin"]["bearerTokenFile"]
    pod = _base("Deployment")["spec"]["template"]["spec"]
    (mount,) = [m for m in _container()["volumeMounts"] if m["mountPath"] == os.path.dirname(token)]
    assert "subPath" not in mount, "a subPath mount never sees Secret updates (token rotation)"
    assert mount["readOnly"] is True
    (volume,) = [v for v in pod["volumes"] if v["name"] == mount["name"]]
    assert volume["secret"]["defaultMode"] == 0o400
    assert [item["path"] for item in volume["secret"]["items"]] == [os.path.basename(token)]
    (secret,) = _documents(os.path.join(BASE, "admin-token-secret.example.yaml"))
    assert secret["metadata"]["name"] == volume["secret"]["secretName"]
    assert list(secret["stringData"]) == [item["key"] for item in volume["secret"]["items"]]


def test_the_example_admin_token_is_refused_so_no_pod_runs_with_a_published_token(tmp_path):
    (secret,) = _documents(os.path.join(BASE, "admin-token-secret.example.yaml"))
    token = tmp_path / "token"
    token.write_text(secret["stringData"]["token"])
    token.chmod(0o400)
    config = _configmap_config_with_key(_kubelet_secret_mount(tmp_path / "secrets", "key.p8", 0o400))
    config["admin"] = {"listen": "127.0.0.1:0", "bearerTokenFile": str(token)}
    checked = _check_config(config, tmp_path)
    assert checked.returncode == 1
    assert "admin.bearerTokenFile" in checked.stdout and "PLACEHOLDER" not in checked.stdout, checked.stdout


def _throwaway_admin_token(directory):
    """An admin bearer token, private to its owner, standing in for the Secret's."""
    import base64

    path = directory / "admin-token"
    path.write_text(base64.b64encode(os.urandom(32)).decode() + "\n")
    path.chmod(0o400)
    return str(path)


def test_configmap_config_is_accepted_by_the_gateway(tmp_path):
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    config = _gateway_config()
    # The paths inside the image, rewritten to a throwaway P-256 key and the repository's root certificate.
    key_path = tmp_path / os.path.basename(config["apps"][0]["privateKeyFile"])
    key_path.write_bytes(ec.generate_private_key(ec.SECP256R1()).private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    key_path.chmod(0o400)
    for app in config["apps"]:
        app["privateKeyFile"] = str(key_path)
    config["verification"]["rootCertificates"] = [os.path.join(ROOT, "certs", "AppleRootCA-G3.cer")]
    config["admin"]["listen"] = "127.0.0.1:0"  # the admin port may be taken on a test machine
    config["admin"]["bearerTokenFile"] = _throwaway_admin_token(tmp_path)
    # The JWKS ConfigMap is the cluster's: a JWKS with a key generated here stands in for it.
    config["authentication"]["jwt"]["jwksFile"] = str(_throwaway_jwks(tmp_path))
    config["notifications"]["resumeTokenKeyFile"] = _throwaway_key_ring(tmp_path)
    # The Deployment sets APPSTORE_GATEWAY_THREADS from the CPU limit.
    limit = _container()["resources"]["limits"]["cpu"]
    log = _serve_and_stop(config, extra_env={"APPSTORE_GATEWAY_THREADS": str(int(limit))})
    assert "BEGIN PRIVATE KEY" not in log


def _throwaway_jwks(tmp_path):
    import base64
    import json

    from cryptography.hazmat.primitives.asymmetric import ec

    numbers = ec.generate_private_key(ec.SECP256R1()).public_key().public_numbers()

    def b64(value):
        return base64.urlsafe_b64encode(value.to_bytes(32, "big")).rstrip(b"=").decode()

    path = tmp_path / "jwks.json"
    path.write_text(json.dumps({"keys": [{"kty": "EC", "crv": "P-256", "kid": "k", "x": b64(numbers.x),
                                          "y": b64(numbers.y)}]}))
    return path


def test_jwks_is_mounted_as_a_directory_where_the_config_points():
    jwks = _gateway_config()["authentication"]["jwt"]["jwksFile"]
    (mount,) = [m for m in _container()["volumeMounts"] if m["name"] == "jwks"]
    assert "subPath" not in mount, "a subPath mount never sees ConfigMap updates"
    assert jwks == mount["mountPath"] + "/jwks.json"
    (volume,) = [v for v in _base("Deployment")["spec"]["template"]["spec"]["volumes"] if v["name"] == "jwks"]
    example = _documents(os.path.join(BASE, "jwks-configmap.example.yaml"))[0]
    assert volume["configMap"]["name"] == example["metadata"]["name"]
    assert "jwks.json" in example["data"]


def test_caller_example_projects_a_token_for_the_gateways_audience():
    docs = _documents(os.path.join(KUBE, "examples", "caller.yaml"))
    (deployment,) = [d for d in docs if d["kind"] == "Deployment"]
    (volume,) = deployment["spec"]["template"]["spec"]["volumes"]
    (source,) = volume["projected"]["sources"]
    assert source["serviceAccountToken"]["audience"] in _gateway_config()["authentication"]["jwt"]["audiences"]
    (namespace,) = [d for d in docs if d["kind"] == "Namespace"]
    assert namespace["metadata"]["labels"]["appstore-gateway-client"] == "true"
    identity = f"system:serviceaccount:{deployment['metadata']['namespace']}:" \
               f"{deployment['spec']['template']['spec']['serviceAccountName']}"
    assert identity in [c["identity"] for c in _gateway_config()["callers"]]


def test_image_default_config_is_accepted_by_the_gateway():
    with open(os.path.join(DEPLOY, "gateway.yaml")) as f:
        config = yaml.safe_load(f)
    config["verification"]["rootCertificates"] = [os.path.join(ROOT, "certs", "AppleRootCA-G3.cer")]
    config["admin"] = "127.0.0.1:0"
    _serve_and_stop(config)


# Apple's published per-app rate limits (requests per second, production), by endpoint config name.
APPLE_RATES = {
    "getTransactionInfo": 50, "getTransactionHistory": 50, "getTransactionHistoryV1": 50,
    "getAllSubscriptionStatuses": 50, "sendConsumptionInformation": 50, "sendConsumptionInformationV1": 50,
    "getNotificationHistory": 50, "getAppTransactionInfo": 50, "finishTransaction": 50,
    "extendSubscriptionRenewalDate": 20, "setAppAccountToken": 20,
    "lookUpOrderId": 10, "getRefundHistory": 10, "getRefundHistoryV1": 10,
    "extendRenewalDatesForAllActiveSubscribers": 1, "getStatusOfSubscriptionRenewalDateExtensions": 1,
    "requestTestNotification": 1, "getTestNotificationStatus": 1,
    # Retention Messaging API.
    "configureDefaultMessage": 10, "uploadImage": 1, "deleteImage": 1, "getImageList": 1, "uploadMessage": 1,
    "deleteMessage": 1, "getMessageList": 1, "deleteDefaultMessage": 1, "getDefaultMessage": 1,
    "configureRealtimeUrl": 1, "deleteRealtimeUrl": 1, "getRealtimeUrl": 1, "initiatePerformanceTest": 1,
    "getPerformanceTestResults": 1,
    # Advanced Commerce API ("Identifying rate limits for Advanced Commerce APIs").
    "cancelSubscription": 5, "revokeSubscription": 5, "requestTransactionRefund": 5,
    "changeSubscriptionPrice": 50, "changeSubscriptionMetadata": 50, "migrateSubscription": 50,
}


def _max_pods(max_replicas):
    """Pods that may run at once: the HPA's maxReplicas plus the rollout's surge."""
    surge = _base("Deployment")["spec"]["strategy"]["rollingUpdate"]["maxSurge"]
    assert isinstance(surge, int), "maxSurge as a percentage would make the budget depend on the replica count"
    return max_replicas + surge


def test_rate_limits_hold_across_every_replica_the_manifests_allow():
    limits = _gateway_config()["rateLimits"]
    overlay_patch = _documents(os.path.join(KUBE, "overlays", "example", "hpa-bounds.yaml"))[0]
    for max_replicas in (_base("HorizontalPodAutoscaler")["spec"]["maxReplicas"],
                         overlay_patch["spec"]["maxReplicas"]):
        pods = _max_pods(max_replicas)
        for endpoint, apple_rate in APPLE_RATES.items():
            assert endpoint in limits, f"rateLimits.{endpoint} is missing: it would take Apple's full rate per pod"
            assert limits[endpoint]["perSecond"] * pods <= apple_rate, (endpoint, pods)
            assert limits[endpoint]["burst"] >= 1
    for app in _gateway_config()["apps"]:
        assert "rateLimits" not in app, "a per-app override would need the same check"


def _kubelet_secret_mount(directory, file_name, mode):
    """The layout the kubelet's atomic writer makes for a Secret volume: the file in a timestamped directory,
    `..data` linking to that directory and one link per key through `..data`; fsGroup owns the files."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    stamped = directory / "..2026_11_23_14_00_00.123456789"
    stamped.mkdir(parents=True)
    real = stamped / file_name
    real.write_bytes(ec.generate_private_key(ec.SECP256R1()).private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    os.chown(real, -1, os.getegid())  # the pod's fsGroup is one of the process's groups
    real.chmod(mode)
    os.symlink(stamped.name, directory / "..data")
    os.symlink(os.path.join("..data", file_name), directory / file_name)
    return directory / file_name


def _configmap_config_with_key(key_path):
    config = _gateway_config()
    for app in config["apps"]:
        app["privateKeyFile"] = str(key_path)
    config["verification"]["rootCertificates"] = [os.path.join(ROOT, "certs", "AppleRootCA-G3.cer")]
    config["admin"] = "127.0.0.1:0"
    config["authentication"]["jwt"]["jwksFile"] = str(_throwaway_jwks(key_path.parent.parent))
    config["notifications"]["resumeTokenKeyFile"] = _throwaway_key_ring(key_path.parent.parent)
    return config


def _check_config(config, tmp_path):
    path = tmp_path / "check.yaml"
    path.write_text(yaml.safe_dump(config))
    from conftest import GATEWAY_BIN
    return subprocess.run([GATEWAY_BIN, "check-config", "--config", str(path)],
                          capture_output=True, text=True, timeout=30)


def test_kubelet_secret_layout_with_fsgroup_0440_starts(tmp_path):
    key_file = os.path.basename(_gateway_config()["apps"][0]["privateKeyFile"])
    key = _kubelet_secret_mount(tmp_path / "secrets", key_file, 0o440)
    assert os.path.islink(key) and oct(os.lstat(key).st_mode & 0o777) == oct(0o777)
    config = _configmap_config_with_key(key)
    checked = _check_config(config, tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    _serve_and_stop(config)


def test_kubelet_secret_layout_readable_by_others_is_refused(tmp_path):
    key_file = os.path.basename(_gateway_config()["apps"][0]["privateKeyFile"])
    key = _kubelet_secret_mount(tmp_path / "secrets", key_file, 0o444)
    checked = _check_config(_configmap_config_with_key(key), tmp_path)
    assert checked.returncode == 1
    assert "apps[0].privateKeyFile" in checked.stdout and "mode 444" in checked.stdout, checked.stdout


def test_builds_are_reproducible_from_the_committed_package_resolved():
    with open(os.path.join(DEPLOY, "Dockerfile")) as f:
        dockerfile = f.read()
    assert re.search(r"^COPY Package.swift Package.resolved \./$", dockerfile, re.M)
    assert "--force-resolved-versions" in dockerfile
    with open(os.path.join(DEPLOY, "Dockerfile.dockerignore")) as f:
        assert "!Package.resolved" in f.read().splitlines()
    tracked = subprocess.run(["git", "ls-files", "--error-unmatch", "Package.resolved"], cwd=ROOT,
                             capture_output=True, text=True)
    assert tracked.returncode == 0, "Package.resolved must be committed"
    with open(os.path.join(ROOT, "Package.resolved")) as f:
        pins = {pin["identity"] for pin in __import__("json").load(f)["pins"]}
    assert {"swift-argument-parser", "swift-log", "yams"} <= pins
    for label in ("title", "version", "revision", "created", "description"):
        assert f"org.opencontainers.image.{label}=" in dockerfile, label
