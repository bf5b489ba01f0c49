"""Start-up configuration as an operator meets it: `check-config`, JSON errors from `serve`, https-only Apple URLs."""
import json
import os
import subprocess
import time

import yaml

from conftest import GATEWAY_BIN, ROOT

BAD = {
    "listen": "nope",
    "threads": "many",
    "limits": {"maxConcurrentStreams": 0},
    "colour": "blue",
    "apple": {"productionURL": "http://api.storekit.apple.com"},
}


def _write(tmp_path, config, name="gateway.yaml"):
    path = tmp_path / name
    path.write_text(yaml.safe_dump(config))
    return str(path)


def _run(*args):
    return subprocess.run([GATEWAY_BIN, *args], capture_output=True, text=True, timeout=30,
                          env={**os.environ, "APPSTORE_GATEWAY_ADMIN": "127.0.0.1:0"})


def test_check_config_reports_every_bad_key_and_exits_1(tmp_path):
    result = _run("check-config", "--config", _write(tmp_path, BAD))
    assert result.returncode == 1
    lines = result.stdout.strip().splitlines()
    keys = [line.split(":", 1)[0] for line in lines]
    assert keys == ["listen", "threads", "limits.maxConcurrentStreams", "colour", "apple.productionURL"], lines
    assert "Usage" not in result.stdout + result.stderr


def test_check_config_accepts_the_shipped_example(tmp_path):
    with open(os.path.join(ROOT, "deploy", "gateway.yaml")) as f:
        config = yaml.safe_load(f)
    config["verification"]["rootCertificates"] = [os.path.join(ROOT, "certs", "AppleRootCA-G3.cer")]
    result = _run("check-config", "--config", _write(tmp_path, config))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "valid" in result.stdout


def test_serve_reports_a_bad_configuration_as_one_json_line_and_exits_1(tmp_path):
    result = _run("serve", "--config", _write(tmp_path, BAD))
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    entry = json.loads(lines[0])
    assert entry["level"] == "critical"
    assert entry["key"] == "listen"
    assert len(entry["problems"]) == 5
    assert "Usage" not in result.stdout + result.stderr


def test_serve_reports_an_unreadable_file_as_json(tmp_path):
    result = _run("serve", "--config", str(tmp_path / "missing.yaml"))
    assert result.returncode == 1
    entry = json.loads(result.stderr.strip())
    assert "cannot read the configuration file" in entry["message"]


def test_plain_http_apple_urls_need_allow_insecure_url(tmp_path):
    config = {"apple": {"productionURL": "http://127.0.0.1:1", "sandboxURL": "http://127.0.0.1:2"}}
    refused = _run("check-config", "--config", _write(tmp_path, config))
    assert refused.returncode == 1
    assert [line.split(":", 1)[0] for line in refused.stdout.splitlines()] == [
        "apple.productionURL", "apple.sandboxURL"]
    config["apple"]["allowInsecureURL"] = True
    accepted = _run("check-config", "--config", _write(tmp_path, config))
    assert accepted.returncode == 0, accepted.stdout


def test_ca_pinning_keys_are_accepted(tmp_path):
    config = {"apple": {"caFile": os.path.join(ROOT, "certs", "AppleRootCA-G3.cer"), "trustSystemCAs": True}}
    assert _run("check-config", "--config", _write(tmp_path, config)).returncode == 0
    config["apple"]["trustSystemCAs"] = "perhaps"
    result = _run("check-config", "--config", _write(tmp_path, config))
    assert result.returncode == 1 and result.stdout.startswith("apple.trustSystemCAs:")


def test_threads_carry_their_role_as_their_name(fresh_gateway, tmp_path):
    """`top -H`, `ps -L` and profilers show what each thread is (README, Architecture)."""
    gw = fresh_gateway("--simulator", "--state-dir", str(tmp_path / "state"), "--threads", "2")
    wanted = {"h2-loop-0", "h2-loop-1", "sim-loop-0", "admin-loop-0", "upstream-curl", "log-writer"}
    deadline = time.monotonic() + 10
    while True:
        names = set()
        for task in os.listdir(f"/proc/{gw.proc.pid}/task"):
            try:
                with open(f"/proc/{gw.proc.pid}/task/{task}/comm") as f:
                    names.add(f.read().strip())
            except FileNotFoundError:
                pass  # a thread that ended meanwhile
        if wanted <= names or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert wanted <= names, f"missing {wanted - names}; threads: {sorted(names)}"


# --- secrets: no core files, key files judged like .p8 ------------------------------------------------------

def _core_limit(pid):
    """The soft and hard RLIMIT_CORE of process `pid`, as /proc shows them."""
    with open(f"/proc/{pid}/limits") as f:
        for line in f:
            if line.startswith("Max core file size"):
                return line.split()[4:6]
    raise AssertionError("no core file size in /proc/PID/limits")


def _allow_core_files():
    """In the child before exec: the soft core limit raised to the hard one (as `ulimit -c unlimited` would)."""
    import resource
    _, hard = resource.getrlimit(resource.RLIMIT_CORE)
    resource.setrlimit(resource.RLIMIT_CORE, (hard, hard))


def test_serve_writes_no_core_file_unless_allowed(tmp_path):
    import resource

    import pytest

    from conftest import Gateway

    if resource.getrlimit(resource.RLIMIT_CORE)[1] == 0:
        pytest.skip("this environment allows no core files at all")
    # The gateway starts with a core limit above 0 (as under a shell with `ulimit -c unlimited`).
    gw = Gateway(["--simulator", "--state-dir", str(tmp_path / "state")], preexec_fn=_allow_core_files)
    try:
        assert _core_limit(gw.proc.pid) == ["0", "0"]
    finally:
        gw.stop()
    gw = Gateway(["--simulator", "--state-dir", str(tmp_path / "state"), "--allow-core-dumps"],
                 preexec_fn=_allow_core_files)
    try:
        assert _core_limit(gw.proc.pid)[0] != "0"
        # The warning is written before the port is announced, through the log's own writer: read until it is.
        deadline = time.monotonic() + 10
        while "core dumps are allowed" not in gw.read_log() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert "core dumps are allowed" in gw.read_log()
    finally:
        gw.stop()


def test_a_redis_client_key_others_may_read_is_refused(tmp_path):
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                    "-days", "1", "-keyout", "client.key", "-out", "client.pem", "-subj", "/CN=gateway"],
                   cwd=tmp_path, check=True, capture_output=True)
    with open(os.path.join(ROOT, "deploy", "gateway.yaml")) as f:
        config = yaml.safe_load(f)
    config["verification"]["rootCertificates"] = [os.path.join(ROOT, "certs", "AppleRootCA-G3.cer")]
    config["redis"] = {"url": "rediss://localhost:6380/0", "caFile": str(tmp_path / "client.pem"),
                       "certFile": str(tmp_path / "client.pem"), "keyFile": str(tmp_path / "client.key")}
    (tmp_path / "client.key").chmod(0o644)
    result = _run("check-config", "--config", _write(tmp_path, config))
    assert result.returncode == 1
    assert "redis.keyFile" in result.stdout and "mode 644" in result.stdout, result.stdout
    (tmp_path / "client.key").chmod(0o600)
    result = _run("check-config", "--config", _write(tmp_path, config))
    assert result.returncode == 0, result.stdout + result.stderr
