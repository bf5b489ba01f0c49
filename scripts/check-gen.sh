#!/usr/bin/env bash
# Regenerates every generated file in a scratch copy of the tree and fails if anything differs from what is
# committed here: generated code is committed, so it must always match proto/ and the generators.
set -euo pipefail
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
generated="Sources/CGatewayProtos Sources/ProtoCodec/Generated"
# The scratch copy has no venv: point the generator at this tree's.
export GATEWAY_VENV="${GATEWAY_VENV:-$PWD/.venv}"
mkdir -p Sources/ProtoCodec/Generated
tar cf - proto scripts $generated | (cd "$tmp" && tar xf -)
(cd "$tmp" && scripts/gen-protos.sh >/dev/null)
for g in $generated; do
  if ! diff -r "$g" "$tmp/$g" >/dev/null; then
    echo "generated code is stale: run 'make gen' and commit the result" >&2
    diff -r "$g" "$tmp/$g" | head -20 >&2
    exit 1
  fi
done
echo "generated code matches proto/"
