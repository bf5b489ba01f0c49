#!/usr/bin/env bash
# Packs bench/fleet.sh with what it runs — the release binary (and BEFORE=<an older one>, for an A/B), h2load,
# nghttpd and every shared library they load but libc's — so a bigger machine needs nothing installed:
#   swift build -c release && bench/pack-fleet-bundle.sh fleet.tar.xz
#   (there) tar -xJf fleet.tar.xz && fleet-bundle/fleet.sh > fleet.txt; python3 fleet-bundle/fleet_summary.py fleet.txt
set -eu
out=${1:?usage: pack-fleet-bundle.sh OUT.tar.xz}
cd "$(dirname "$0")/.."
work=$(mktemp -d); b=$work/fleet-bundle; mkdir -p "$b/bin" "$b/lib"
cp .build/release/appstore-gateway "$(command -v h2load)" "$(command -v nghttpd)" "$b/bin/"
[ -n "${BEFORE:-}" ] && cp "$BEFORE" "$b/bin/appstore-gateway-before"
for x in "$b"/bin/*; do ldd "$x" | awk '/=>/ {print $3}'; done | sort -u |
  grep -v -E '/(libc|libm|libpthread|libdl|librt|libresolv)\.so|/ld-linux' | while read -r l; do cp -L "$l" "$b/lib/"; done
cp bench/fleet.sh bench/fleet_summary.py "$b/"
tar -C "$work" -cf - fleet-bundle | xz -T0 -6 > "$out"; rm -rf "$work"; ls -la "$out"
