#!/usr/bin/env bash
# Installs the Debian packages the gateway needs, only when some are missing:
#   scripts/install-deps.sh run    what building and running need (make build, make release, make run)
#   scripts/install-deps.sh        everything: the above and what the tests, generation and benchmarks need
#                                  (make test, make test-*, make gen, make fuzz, make bench)
# Idempotent: a second run with everything present costs one dpkg query.
set -euo pipefail

# Building and running: the C libraries behind the shims, with their headers.
run_packages=(
  pkg-config
  libnghttp2-dev        # HTTP/2 server sessions (CNGHTTP2)
  libprotobuf-c-dev     # protobuf-c runtime (CProtobufC); the generated code is committed
  libssl-dev            # OpenSSL 3: ES256, X.509, TLS (COpenSSL)
  libcurl4-openssl-dev  # upstream HTTP/2 client (CCurl)
  libhiredis-dev        # Redis client for the shared rate budget and notification store (CHiredis)
  libsqlite3-dev        # the webhook's embedded notification store (CSQLite)
  libpq-dev             # PostgreSQL client on the event loops (CLibPQ)
  libjemalloc-dev       # the allocator the gateway binary links (per-thread caches; docs/ARCHITECTURE.md)
)

# Testing, generating code and benchmarking.
test_packages=(
  libprotobuf-dev       # google/protobuf/*.proto well-known types for protoc-c
  protobuf-c-compiler   # protoc-c, for `make gen` and the drift check
  redis-server          # the shared-budget tests start their own Redis
  postgresql            # initdb, pg_ctl and postgres: the PostgreSQL tests start their own server
  curl                  # TLS, HTTP/2 and HTTP/1.1 peer in the HTTP server tests
  python3-venv          # the grpcio interop test venv
  python3-pip
  prometheus            # promtool, which checks the PrometheusRule and dashboard expressions in `make test`
  protobuf-compiler     # protoc, for the Go example's stubs
  golang-go             # the Go example (examples/go), built and run against the simulator in `make test`
  golang-google-grpc-dev               # grpc-go 1.33 (GOPATH mode: no module proxy needed)
  golang-google-genproto-dev
  golang-google-protobuf-dev           # also the source protoc-gen-go is built from
  golang-github-golang-protobuf-1-5-dev
  protoc-gen-go-grpc
  nghttp2-client        # h2load and nghttp, for benchmarks and debugging
  nghttp2-server        # nghttpd, the benchmark reference
)

case "${1:-all}" in
  run) packages=("${run_packages[@]}") ;;
  all | test) packages=("${run_packages[@]}" "${test_packages[@]}") ;;
  *) echo "usage: $0 [run|all]" >&2; exit 2 ;;
esac

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$p")
done
[[ ${#missing[@]} -eq 0 ]] && exit 0

echo "installing missing packages: ${missing[*]}"
sudo=""
if [[ $(id -u) -ne 0 ]]; then sudo="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
