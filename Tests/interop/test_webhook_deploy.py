"""deploy/: the webhook components render with `kubectl kustomize` on the base and validate, and they point
the gateway at the store the documentation describes (SQLite on a volume, one replica; or the shared Redis
with an append-only file)."""
import os
import shutil
import subprocess
import tempfile

import pytest
import yaml

from test_deploy import KUBE, _validate

pytestmark = pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")


def render(*components):
    overlay = tempfile.mkdtemp(prefix="kustomize-webhook-")
    with open(os.path.join(overlay, "kustomization.yaml"), "w") as f:
        yaml.safe_dump({
            "apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
            "resources": [os.path.relpath(os.path.join(KUBE, "base"), overlay)],
            "components": [os.path.relpath(os.path.join(KUBE, "components", c), overlay) for c in components],
        }, f)
    rendered = subprocess.run(["kubectl", "kustomize", overlay], capture_output=True, text=True, timeout=30)
    assert rendered.returncode == 0, rendered.stderr
    docs = [d for d in yaml.safe_load_all(rendered.stdout) if d]
    for doc in docs:
        _validate(doc, f"base + {', '.join(components)}")
    return docs


def find(docs, kind, name):
    (doc,) = [d for d in docs if d["kind"] == kind and d["metadata"]["name"] == name]
    return doc


def gateway_env(docs):
    (container,) = find(docs, "Deployment", "appstore-gateway")["spec"]["template"]["spec"]["containers"]
    return container, {e["name"]: e.get("value") for e in container["env"]}


def assert_the_ingress_routes_apples_paths(docs):
    """Apple reaches the webhook and the realtime URL through the Ingress, each at the path the gateway serves."""
    _, env = gateway_env(docs)
    served = {"/apple/notifications", env["APPSTORE_GATEWAY_NOTIFICATIONS_REALTIME_PATH"]}
    ingress = find(docs, "Ingress", "appstore-gateway-webhook")
    paths = ingress["spec"]["rules"][0]["http"]["paths"]
    assert {p["path"] for p in paths} == served == {"/apple/notifications", "/apple/realtime"}
    for path in paths:
        assert path["pathType"] == "Exact"
        assert path["backend"]["service"] == {"name": "appstore-gateway-webhook", "port": {"name": "webhook"}}


def test_the_sqlite_webhook_runs_one_replica_with_its_database_on_a_volume():
    docs = render("webhook")
    container, env = gateway_env(docs)
    assert env["APPSTORE_GATEWAY_NOTIFICATIONS_WEBHOOK_LISTEN"] == "0.0.0.0:8080"
    database = env["APPSTORE_GATEWAY_NOTIFICATIONS_STORE_SQLITE"]
    (mount,) = [m for m in container["volumeMounts"] if m["name"] == "notifications"]
    assert database.startswith(mount["mountPath"] + "/")
    deployment = find(docs, "Deployment", "appstore-gateway")
    assert deployment["spec"]["replicas"] == 1 and deployment["spec"]["strategy"]["type"] == "Recreate"
    hpa = find(docs, "HorizontalPodAutoscaler", "appstore-gateway")
    assert hpa["spec"]["maxReplicas"] == 1
    assert {"name": "webhook", "containerPort": 8080, "protocol": "TCP"} in container["ports"]
    service = find(docs, "Service", "appstore-gateway-webhook")
    assert service["spec"]["ports"][0]["targetPort"] == 8080
    assert_the_ingress_routes_apples_paths(docs)
    find(docs, "PersistentVolumeClaim", "appstore-gateway-notifications")


def test_the_redis_webhook_shares_a_durable_stream():
    docs = render("redis", "webhook-redis")
    _, env = gateway_env(docs)
    assert env["APPSTORE_GATEWAY_NOTIFICATIONS_STORE_REDIS"] == "true"
    assert env["APPSTORE_GATEWAY_REDIS_URL"].startswith("redis://")
    (redis,) = find(docs, "Deployment", "appstore-gateway-redis")["spec"]["template"]["spec"]["containers"]
    args = redis["args"]
    assert args[args.index("--appendonly") + 1] == "yes" and args[args.index("--appendfsync") + 1] == "always"
    volumes = find(docs, "Deployment", "appstore-gateway-redis")["spec"]["template"]["spec"]["volumes"]
    assert volumes[0]["persistentVolumeClaim"]["claimName"] == "appstore-gateway-redis-data"
    assert find(docs, "Deployment", "appstore-gateway")["spec"]["replicas"] > 1
    assert_the_ingress_routes_apples_paths(docs)


def test_the_postgres_webhook_reads_an_external_database_from_a_secret():
    """No database in the manifests: the URL comes from a Secret (never a literal in the Deployment), the password
    from a file of that Secret, every replica runs the webhook, and egress to PostgreSQL is allowed."""
    docs = render("webhook-postgres")
    container, env = gateway_env(docs)
    (variable,) = [e for e in container["env"] if e["name"] == "APPSTORE_GATEWAY_NOTIFICATIONS_STORE_POSTGRES"]
    assert variable["valueFrom"]["secretKeyRef"] == {"name": "appstore-gateway-postgres", "key": "url"}
    password = env["APPSTORE_GATEWAY_NOTIFICATIONS_STORE_POSTGRES_PASSWORD_FILE"]
    (mount,) = [m for m in container["volumeMounts"] if m["name"] == "postgres"]
    assert password.startswith(mount["mountPath"] + "/") and mount["readOnly"]
    volumes = find(docs, "Deployment", "appstore-gateway")["spec"]["template"]["spec"]["volumes"]
    (volume,) = [v for v in volumes if v["name"] == "postgres"]
    assert volume["secret"]["secretName"] == "appstore-gateway-postgres"
    assert not [d for d in docs if d["kind"] in ("StatefulSet", "PersistentVolumeClaim")]
    assert find(docs, "Deployment", "appstore-gateway")["spec"]["replicas"] > 1
    egress = find(docs, "NetworkPolicy", "appstore-gateway-postgres")["spec"]["egress"]
    assert {"protocol": "TCP", "port": 5432} in egress[0]["ports"]
    assert_the_ingress_routes_apples_paths(docs)
    example = yaml.safe_load(open(os.path.join(KUBE, "examples", "postgres-secret.example.yaml")))
    assert example["kind"] == "Secret" and "url" in example["stringData"]
