#!/usr/bin/env bash
# Fails when Swift code uses `Synchronization.Mutex` directly: state shared between threads goes behind
# GatewayFoundation's `Lock`, which ThreadSanitizer understands (`make test-tsan`), where `Mutex` is invisible to it.
set -euo pipefail
cd "$(dirname "$0")/.."
# Comments may name it; code outside Lock.swift may not.
if found=$(grep -rnwE 'Mutex' --include='*.swift' Sources Tests fuzz | grep -vE '^[^:]+:[0-9]+: *//' |
  grep -v '^Sources/GatewayFoundation/Lock\.swift:'); then
  echo "Mutex used where Lock (Sources/GatewayFoundation/Lock.swift) belongs:"
  echo "$found"
  exit 1
fi
