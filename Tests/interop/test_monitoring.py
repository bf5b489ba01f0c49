"""The optional monitoring component (PodMonitor, PrometheusRule, Grafana dashboard): consistent with the base
manifests, expressions that promtool accepts, and every metric (and label) they name exported by a running gateway."""
import glob
import json
import os
import re
import shutil
import subprocess

import pytest
import yaml

from test_deploy import KUBE, _base, _container, _documents, _validate

MONITORING = os.path.join(KUBE, "components", "monitoring")
DASHBOARD = os.path.join(MONITORING, "appstore-gateway-dashboard.json")
# Prometheus adds these when it scrapes a pod (PodMonitor): a query may select on them, the gateway never exports them.
TARGET_LABELS = {"namespace", "pod", "instance", "job", "container", "endpoint", "service"}
METRIC = re.compile(r"\b((?:appstore_gateway|grpc_server|process)_[a-z0-9_]+)\b")


def _monitoring(kind):
    (doc,) = [d for p in glob.glob(os.path.join(MONITORING, "*.yaml")) for d in _documents(p) if d["kind"] == kind]
    return doc


def rule_expressions():
    """Every PromQL expression of the shipped PrometheusRule."""
    return [rule["expr"] for group in _monitoring("PrometheusRule")["spec"]["groups"] for rule in group["rules"]]


def rule_metric_names():
    """The metric names the rules use."""
    return {name for expr in rule_expressions() for name in METRIC.findall(expr)}


def dashboard():
    with open(DASHBOARD) as f:
        return json.load(f)


def dashboard_panels():
    """Every panel, those inside collapsed rows too."""
    panels = []
    for panel in dashboard()["panels"]:
        panels += [panel] + panel.get("panels", [])
    return panels


def dashboard_expressions():
    """Every PromQL expression of the dashboard's panels (Grafana's $__rate_interval left in)."""
    return [t["expr"] for p in dashboard_panels() for t in p.get("targets", [])]


def dashboard_variable_queries():
    """The templating queries (Grafana's label_values(selector, label))."""
    return [v["query"]["query"] for v in dashboard()["templating"]["list"] if v["type"] == "query"]


def _kustomization():
    with open(os.path.join(MONITORING, "kustomization.yaml")) as f:
        return yaml.safe_load(f)


def test_pod_monitor_scrapes_the_admin_port_of_the_gateway_pods():
    monitor = _monitoring("PodMonitor")["spec"]
    labels = _base("Deployment")["spec"]["template"]["metadata"]["labels"]
    assert monitor["selector"]["matchLabels"].items() <= labels.items()
    (endpoint,) = monitor["podMetricsEndpoints"]
    assert endpoint["port"] in {p["name"] for p in _container()["ports"]} and endpoint["port"] == "admin"
    assert endpoint["path"] == "/metrics"
    # The admin port asks for its bearer token: the scrape sends the Secret the pods mount as the token file.
    assert endpoint["authorization"]["type"] == "Bearer"
    credentials = endpoint["authorization"]["credentials"]
    (volume,) = [v for v in _base("Deployment")["spec"]["template"]["spec"]["volumes"]
                 if v.get("secret", {}).get("secretName") == credentials["name"]]
    (mount,) = [m for m in _container()["volumeMounts"] if m["name"] == volume["name"]]
    (item,) = [i for i in volume["secret"]["items"] if i["key"] == credentials["key"]]
    token_file = yaml.safe_load(_base("ConfigMap", "appstore-gateway-config")["data"]["gateway.yaml"])["admin"][
        "bearerTokenFile"]
    assert token_file == os.path.join(mount["mountPath"], item["path"])


def test_prometheus_rule_covers_the_promised_alerts_and_parses(tmp_path):
    rule = _monitoring("PrometheusRule")
    alerts = {r["alert"] for g in rule["spec"]["groups"] for r in g["rules"]}
    assert alerts == {"AppStoreGatewayAppleRateLimited", "AppStoreGatewayLocalRefusals", "AppStoreGatewayErrorRatio",
                      "AppStoreGatewayVerificationFailures"}
    for expr in rule_expressions():
        assert expr.count("(") == expr.count(")") and expr.count("{") == expr.count("}"), expr
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.skip("promtool (Debian package prometheus, scripts/install-deps.sh) is not installed")
    rules_file = tmp_path / "rules.yaml"
    rules_file.write_text(yaml.safe_dump(rule["spec"]))
    checked = subprocess.run([promtool, "check", "rules", str(rules_file)], capture_output=True, text=True, timeout=60)
    assert checked.returncode == 0, checked.stdout + checked.stderr



def test_dashboard_is_a_configmap_for_grafanas_sidecar():
    (generator,) = _kustomization()["configMapGenerator"]
    assert generator["files"] == [os.path.basename(DASHBOARD)]
    assert generator["options"]["labels"]["grafana_dashboard"] == "1"
    assert generator["options"]["disableNameSuffixHash"] is True  # one ConfigMap, replaced on update


def test_dashboard_is_well_formed():
    board = dashboard()
    assert board["uid"] == "appstore-gateway" and board["title"] and board["schemaVersion"] >= 36
    variables = {v["name"]: v for v in board["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource" and variables["datasource"]["query"] == "prometheus"
    panels = dashboard_panels()
    assert len({p["id"] for p in panels}) == len(panels)
    cells = set()
    for panel in panels:
        grid = panel["gridPos"]
        assert grid["x"] >= 0 and grid["w"] > 0 and grid["x"] + grid["w"] <= 24, panel["title"]
        cell = {(grid["y"] + dy, grid["x"] + dx) for dy in range(grid["h"]) for dx in range(grid["w"])}
        assert not cell & cells, f"{panel['title']} overlaps another panel"
        cells |= cell
        if panel["type"] == "row":
            continue
        assert panel["title"] and panel.get("description"), panel
        assert panel["datasource"]["uid"] == "${datasource}", panel["title"]
        refs = [t["refId"] for t in panel["targets"]]
        assert panel["targets"] and len(set(refs)) == len(refs), panel["title"]
        for target in panel["targets"]:
            assert target["datasource"]["uid"] == "${datasource}", panel["title"]
    for expr in dashboard_variable_queries():
        assert re.fullmatch(r"label_values\((\w+)(\{[^}]*\})?, (\w+)\)", expr), expr
    for expr in dashboard_expressions():
        assert expr.count("(") == expr.count(")") and expr.count("{") == expr.count("}"), expr
        assert 'namespace=~"$namespace", pod=~"$pod"' in expr, f"not filtered by the dashboard's variables: {expr}"


def test_dashboard_covers_the_promised_panels():
    """RPCs per method, Apple per endpoint and status, each app's budget and refusals, fair-share waits per caller,
    the webhook, store commits, follower lag, connections and handshakes, and the process."""
    used = {name for expr in dashboard_expressions() for name in METRIC.findall(expr)}
    promised = {
        "grpc_server_handled_total", "grpc_server_handling_seconds_bucket", "appstore_gateway_apple_requests_total",
        "appstore_gateway_apple_request_duration_seconds_bucket", "appstore_gateway_rate_limit_tokens",
        "appstore_gateway_rate_limit_refusals_total", "appstore_gateway_apple_rate_limited_total",
        "appstore_gateway_fair_share_waits_total", "appstore_gateway_fair_share_refusals_total",
        "appstore_gateway_webhook_received_total", "appstore_gateway_notifications_stored_total",
        "appstore_gateway_notification_follow_lag_seconds_bucket", "appstore_gateway_open_connections",
        "appstore_gateway_pending_handshakes", "appstore_gateway_handshake_deadline_closes_total",
        "appstore_gateway_tls_handshakes_total", "process_cpu_seconds_total", "process_resident_memory_bytes",
        "process_open_fds"}
    assert promised <= used, promised - used
    exprs = "\n".join(dashboard_expressions())
    for grouping in ("by (grpc_service, grpc_method)", "by (grpc_method, grpc_code)", "by (endpoint, http_status)",
                     "by (app, endpoint)", "by (caller, app)", "by (port, deadline)", "by (port, resumed)"):
        assert grouping in exprs, grouping


def test_dashboard_expressions_parse(tmp_path):
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.skip("promtool (Debian package prometheus, scripts/install-deps.sh) is not installed")
    grafana = {"$__rate_interval": "5m", "$__interval": "1m", "$__range": "1h"}
    rules = []
    for index, expr in enumerate(dashboard_expressions()):
        for variable, value in grafana.items():
            expr = expr.replace(variable, value)
        rules.append({"record": f"dashboard:panel_{index}", "expr": expr})
    rules_file = tmp_path / "dashboard.yaml"
    rules_file.write_text(yaml.safe_dump({"groups": [{"name": "dashboard", "rules": rules}]}))
    checked = subprocess.run([promtool, "check", "rules", str(rules_file)], capture_output=True, text=True, timeout=60)
    assert checked.returncode == 0, checked.stdout + checked.stderr


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl (for `kubectl kustomize`) is not installed")
def test_kustomize_renders_the_component_with_the_dashboard(tmp_path):
    overlay = {
        "apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization", "namespace": "appstore-gateway",
        "resources": [os.path.relpath(os.path.join(KUBE, "overlays", "example"), tmp_path)],
        "components": [os.path.relpath(MONITORING, tmp_path)],
    }
    (tmp_path / "kustomization.yaml").write_text(yaml.safe_dump(overlay))
    rendered = subprocess.run(["kubectl", "kustomize", str(tmp_path)], capture_output=True, text=True, timeout=30)
    assert rendered.returncode == 0, rendered.stderr
    docs = [d for d in yaml.safe_load_all(rendered.stdout) if d]
    assert {"PodMonitor", "PrometheusRule", "Deployment"} <= {d["kind"] for d in docs}
    (configmap,) = [d for d in docs
                    if d["kind"] == "ConfigMap" and d["metadata"]["name"] == "appstore-gateway-dashboard"]
    assert configmap["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert configmap["metadata"]["namespace"] == "appstore-gateway"
    assert json.loads(configmap["data"][os.path.basename(DASHBOARD)]) == dashboard()
    for doc in docs:
        _validate(doc, "kubectl kustomize overlays/example + components/monitoring")


def _families(text):
    """Each exported family's type, and the label names of its samples (None while it has no sample)."""
    types, labels = {}, {}
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split()
            types[name], labels[name] = kind, None
    for line in text.splitlines():
        match = re.match(r"([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? ", line)
        if line.startswith("#") or not match:
            continue
        name = match.group(1)
        family = name if name in types else re.sub(r"_(bucket|sum|count)$", "", name)
        labels[family] = (labels.get(family) or set()) | set(re.findall(r'([a-zA-Z_][a-zA-Z0-9_]*)="',
                                                                        match.group(2) or ""))
    return types, labels


def _family(name, types):
    """The family a queried series belongs to (a histogram's _bucket, _sum and _count are its own)."""
    stem = re.sub(r"_(bucket|sum|count)$", "", name)
    return stem if stem != name and types.get(stem) == "histogram" else name


def test_every_metric_and_label_the_dashboard_and_the_alert_rules_use_is_exported():
    """A gateway with the webhook and the simulator as Apple: two GetHistory calls on a bucket of one token (the
    second refused), one VerifyJWS, one delivered notification and one refused webhook request; then every family
    the queries name must be registered (a # TYPE line), and every label they select or group by must be on that
    family's samples where it has some."""
    import grpc

    from appstore.gateway.v1 import gateway_pb2_grpc, history_pb2, verify_pb2
    from test_webhook import Simulator, WebhookGateway, database_path

    expressions = rule_expressions() + dashboard_expressions() + dashboard_variable_queries()
    sim = Simulator()
    try:
        one_token = {"maxWait": "0s", "getTransactionHistory": {"perSecond": 0.01, "burst": 1}}
        gw = WebhookGateway(sim, database_path(), extra={"rateLimits": one_token})
        try:
            (delivered,) = sim.deliver(gw.webhook, notificationType="TEST")
            assert delivered["status"] == 200
            assert gw.post(b"{}")[0] == 400
            with grpc.insecure_channel(gw.address) as channel:
                stub = gateway_pb2_grpc.AppStoreGatewayStub(channel)
                stub.VerifyJWS(verify_pb2.VerifyJWSRequest(jws="garbage"), timeout=10)
                codes = []
                for _ in range(2):
                    try:  # the simulator knows no such customer; the call to it is what counts
                        stub.GetHistory(history_pb2.GetHistoryRequest(transaction_id="1"), timeout=30)
                    except grpc.RpcError as error:
                        codes.append(error.code())
                assert codes[-1] == grpc.StatusCode.RESOURCE_EXHAUSTED, codes
            text = gw.metrics()
        finally:
            gw.stop()
    finally:
        sim.stop()

    types, labels = _families(text)
    assert types.get("appstore_gateway_webhook_received_total") == "counter"  # the webhook's families are there
    names = {name for expr in expressions for name in METRIC.findall(expr)}
    assert {"appstore_gateway_apple_rate_limited_total", "grpc_server_handled_total",
            "appstore_gateway_verifications_total"} <= names
    missing = {name for name in names if _family(name, types) not in types}
    assert not missing, f"queried but not exported: {sorted(missing)}"

    checked = set()
    for expr in expressions:
        selected = [(m.group(1), m.group(2)) for m in re.finditer(r"\b([a-z_][a-z0-9_]*)\{([^}]*)\}", expr)
                    if METRIC.fullmatch(m.group(1))]
        for name, matchers in selected:
            family = _family(name, types)
            for label in re.findall(r"([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)", matchers):
                if label not in TARGET_LABELS and labels[family] is not None:
                    assert label in labels[family], f"{family} has no label {label} ({expr})"
                    checked.add(family)
        families = {_family(name, types) for name in METRIC.findall(expr)}
        known = set().union(*(labels[f] or set() for f in families))
        for grouping in re.findall(r"\bby \(([^)]*)\)", expr):
            for label in (l.strip() for l in grouping.split(",")):
                if label in TARGET_LABELS or any(labels[f] is None for f in families):
                    continue
                assert label in known, f"no metric of ({expr}) has the label {label}"
    assert {"grpc_server_handled_total", "appstore_gateway_apple_requests_total"} <= checked
