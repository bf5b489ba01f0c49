#!/usr/bin/env bash
# Packs bench/fleet.sh with what it runs — the release binary (and BEFORE=<an older one>, for an A/B), h2load,
# nghttpd, nghttp, openssl and every shared library they load but libc's, the VerifyJWS request and the GetHistory
# tool — so a bigger machine needs nothing installed but python3:
#   swift build -c release && bench/pack-fleet-bundle.sh fleet.tar.xz
#   (there) tar -xJf fleet.tar.xz && fleet-bundle/fleet.sh > fleet.txt; python3 fleet-bundle/fleet_summary.py fleet.txt
set -eu
out=$(realpath "${1:?usage: pack-fleet-bundle.sh OUT.tar.xz}")
cd "$(dirname "$0")/.."
. bench/lib.sh
work=$(mktemp -d); b=$work/fleet-bundle; mkdir -p "$b/bin" "$b/lib"
cp .build/release/appstore-gateway "$(command -v h2load)" "$(command -v nghttpd)" "$(command -v nghttp)" \
  "$(command -v openssl)" "$b/bin/"
[ -n "${BEFORE:-}" ] && cp "$BEFORE" "$b/bin/appstore-gateway-before"
strip --strip-debug "$b"/bin/appstore-gateway*   # the symbols stay (for a profile), the debug info goes
for x in "$b"/bin/*; do ldd "$x" | awk '/=>/ {print $3}'; done | sort -u |
  grep -v -E '/(libc|libm|libpthread|libdl|librt|libresolv)\.so|/ld-linux' | while read -r l; do cp -L "$l" "$b/lib/"; done
verify_request Tests/SignedDataTests/Fixtures/transaction-Sandbox-1.jws "$b/verify-request.bin"
cp bench/fleet.sh bench/lib.sh bench/fleet_summary.py bench/history_tool.py "$b/"
tar -C "$work" -cf - fleet-bundle | xz -T0 -6 > "$out"; rm -rf "$work"; ls -la "$out"
