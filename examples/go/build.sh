#!/usr/bin/env bash
# Builds the Go example into OUT/bin/client from Debian's Go packages, in GOPATH mode: no module proxy and
# no network (scripts/install-deps.sh installs golang-go, the grpc-go/genproto/protobuf sources under
# /usr/share/gocode, protoc and protoc-gen-go-grpc).
#   examples/go/build.sh OUT
set -euo pipefail
out=${1:?usage: examples/go/build.sh OUT}
root="$(cd "$(dirname "$0")/../.." && pwd)"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
export GO111MODULE=off GOPATH="$out/gopath:/usr/share/gocode" GOCACHE="$out/cache"

# protoc-gen-go from the packaged google.golang.org/protobuf source.
go build -o "$out/bin/protoc-gen-go" google.golang.org/protobuf/cmd/protoc-gen-go

# Stubs at the import path of the protos' go_package, inside this GOPATH.
src="$out/gopath/src"
mkdir -p "$src"
(cd "$root/proto" && PATH="$out/bin:$PATH" protoc -I . --go_out="$src" --go-grpc_out="$src" \
  $(find appstore -name '*.proto' | LC_ALL=C sort))

# The example itself, as a GOPATH package.
app="$src/example.com/appstore-gateway/examples/go"
mkdir -p "$app"
cp "$root/examples/go/main.go" "$app/main.go"
(cd "$app" && go build -o "$out/bin/client" .)
echo "built $out/bin/client"
