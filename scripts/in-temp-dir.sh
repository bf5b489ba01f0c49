#!/usr/bin/env bash
# Runs a command with TMPDIR set to a fresh directory of its own, removed when the command ends (its status is
# kept), so what a test run writes there (simulator states, gateway logs, generated stubs, SwiftPM's own
# scratch files) never piles up in the system's temporary directory. KEEP_TEST_TMP=1 keeps the directory, for a
# look after a failure; its path is printed either way.
#   scripts/in-temp-dir.sh swift test --no-parallel
set -uo pipefail
dir=$(mktemp -d "${TMPDIR:-/tmp}/appstore-gateway-test.XXXXXX") || exit 1
echo "temporary files under $dir" >&2
TMPDIR=$dir "$@"
status=$?
if [ -n "${KEEP_TEST_TMP:-}" ]; then echo "kept $dir (KEEP_TEST_TMP)" >&2; else rm -rf "$dir"; fi
exit $status
