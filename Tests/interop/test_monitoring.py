"""The optional monitoring component (PodMonitor + PrometheusRule): consistent with the base manifests, and
rule expressions that promtool accepts. test_observability.py checks their metric names against /metrics."""
import glob
import os
import re
import shutil
import subprocess

import pytest
import yaml

from test_deploy import KUBE, _base, _container, _documents

MONITORING = os.path.join(KUBE, "components", "monitoring")


def _monitoring(kind):
    (doc,) = [d for p in glob.glob(os.path.join(MONITORING, "*.yaml")) for d in _documents(p) if d["kind"] == kind]
    return doc


def rule_expressions():
    """Every PromQL expression of the shipped PrometheusRule."""
    return [rule["expr"] for group in _monitoring("PrometheusRule")["spec"]["groups"] for rule in group["rules"]]


def rule_metric_names():
    """The metric names the rules use (identifiers followed by a selector or a range)."""
    names = set()
    for expr in rule_expressions():
        names |= set(re.findall(r"\b((?:appstore_gateway|grpc_server|process)_[a-z_]+)\s*[{\[]", expr))
    return names


def test_pod_monitor_scrapes_the_admin_port_of_the_gateway_pods():
    monitor = _monitoring("PodMonitor")["spec"]
    labels = _base("Deployment")["spec"]["template"]["metadata"]["labels"]
    assert monitor["selector"]["matchLabels"].items() <= labels.items()
    (endpoint,) = monitor["podMetricsEndpoints"]
    assert endpoint["port"] in {p["name"] for p in _container()["ports"]} and endpoint["port"] == "admin"
    assert endpoint["path"] == "/metrics"


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

