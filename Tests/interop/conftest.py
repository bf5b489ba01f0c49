"""Black-box fixtures: grpcio stubs generated from proto/, and the built gateway binary on a free port."""
import atexit
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import pytest

# grpcio's fork handlers can deadlock a fork made while its threads hold their locks (a test thread restarting
# PostgreSQL with `subprocess` as another user forks; seen hanging a run for good): the tests never use grpc in a
# child, which always execs at once, so they go without. Read when grpc is first imported, below this.
os.environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "false")

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
GATEWAY_BIN = os.environ.get("GATEWAY_BIN", os.path.join(ROOT, ".build", "debug", "appstore-gateway"))


def _session_temp_root():
    """One temporary directory for everything this run writes, removed when it ends: the tests' own state
    directories, stubs and logs (tempfile), and through TMPDIR what the gateways, simulators and builds they
    start write. Set before any test module is imported, so module-level directories land in it too.
    KEEP_TEST_TMP=1 keeps it, for a look after a failure."""
    root = tempfile.mkdtemp(prefix="appstore-gateway-interop-")
    tempfile.tempdir = root
    os.environ["TMPDIR"] = root
    if os.environ.get("KEEP_TEST_TMP"):
        print(f"interop temporary files kept in {root}", file=sys.stderr)
    else:
        atexit.register(shutil.rmtree, root, ignore_errors=True)
    return root


TEMP_ROOT = _session_temp_root()


def _generate_stubs():
    """Generates Python stubs for every proto of proto/ into a temporary package directory."""
    from grpc_tools import protoc
    import grpc_tools

    out = tempfile.mkdtemp(prefix="gateway-stubs-")
    wkt = os.path.join(os.path.dirname(grpc_tools.__file__), "_proto")
    protos = []
    for sub in ("appstore", os.path.join("google", "rpc")):
        for base, _, files in os.walk(os.path.join(ROOT, "proto", sub)):
            for name in files:
                if name.endswith(".proto"):
                    protos.append(os.path.relpath(os.path.join(base, name), os.path.join(ROOT, "proto")))
    # Health stubs come from grpcio-health-checking (a generated `grpc.health` would shadow grpcio itself);
    # the packages stay namespace packages (no __init__.py) so `google.rpc` merges with `google.protobuf`.
    args = ["protoc", f"-I{os.path.join(ROOT, 'proto')}", f"-I{wkt}", f"--python_out={out}", f"--grpc_python_out={out}"]
    if protoc.main(args + sorted(protos)) != 0:
        raise RuntimeError("protoc failed to generate the Python stubs")
    sys.path.insert(0, out)
    return out


STUBS_DIR = _generate_stubs()


class Gateway:
    """A running gateway process."""

    def __init__(self, args, env=None, preexec_fn=None, launcher=()):
        if not os.path.exists(GATEWAY_BIN):
            raise RuntimeError(f"gateway binary not found at {GATEWAY_BIN}: run `swift build` first")
        self.log = tempfile.NamedTemporaryFile(prefix="gateway-", suffix=".log", delete=False)
        full_env = dict(os.environ)
        # Tests stop gateways often: no drain delay unless a test asks for one.
        full_env.setdefault("APPSTORE_GATEWAY_SHUTDOWN_DRAIN_DELAY", "0s")
        # Many gateways run side by side: the admin endpoint on a free port too.
        full_env.setdefault("APPSTORE_GATEWAY_ADMIN", "127.0.0.1:0")
        # A value of None removes the variable (a test of what the gateway does without it).
        for name, value in (env or {}).items():
            if value is None:
                full_env.pop(name, None)
            else:
                full_env[name] = value
        self.proc = subprocess.Popen(
            list(launcher) + [GATEWAY_BIN, "serve", "--listen", "127.0.0.1:0"] + list(args),
            stdout=subprocess.PIPE, stderr=self.log, env=full_env, text=True, preexec_fn=preexec_fn)
        line = self.proc.stdout.readline()
        match = re.search(r"listening on ([\d.]+):(\d+)", line or "")
        if not match:
            self.proc.kill()
            raise RuntimeError(f"gateway did not start: {line!r}\n{self.read_log()}")
        self.port = int(match.group(2))
        self.address = f"127.0.0.1:{self.port}"
        admin = self.proc.stdout.readline()
        match = re.search(r"admin on (http://[\d.]+:\d+)", admin or "")
        self.admin_url = match.group(1) if match else None

    def read_log(self):
        with open(self.log.name) as f:
            return f.read()

    def terminate(self, timeout=30):
        """Sends SIGTERM and returns the exit code."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout=timeout)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        # Tests may still read the log after stopping; the files go when the test run ends.
        atexit.register(lambda name=self.log.name: os.path.exists(name) and os.unlink(name))


@pytest.fixture(scope="module")
def gateway():
    gw = Gateway([])
    yield gw
    gw.stop()


@pytest.fixture
def fresh_gateway():
    """A gateway of the test's own, for tests that stop it."""
    started = []

    def start(*args, env=None, launcher=()):
        gw = Gateway(args, env=env, launcher=launcher)
        started.append(gw)
        return gw

    yield start
    for gw in started:
        gw.stop()


@pytest.fixture
def channel(gateway):
    import grpc

    ch = grpc.insecure_channel(gateway.address)
    yield ch
    ch.close()


def throwaway_key(directory):
    """A fresh P-256 PKCS#8 key file in `directory`, private to its owner as the gateway requires (VerifyJWS
    never signs with it; start-up checks every configured key)."""
    key = os.path.join(str(directory), "key.p8")
    if not os.path.exists(key):
        subprocess.run(["openssl", "genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256",
                        "-out", key], check=True, capture_output=True)
        os.chmod(key, 0o600)
    return key
