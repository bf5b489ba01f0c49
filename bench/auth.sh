#!/usr/bin/env bash
# Cost of knowing the caller, per call: VerifyJWS (a cached chain, so the call is cheap and inline) through
# four gateways, one event loop each, interleaved per round:
#   plain    h2c, no callers (the reference)
#   jwt      h2c, `callers` + a bearer JWT (ES256) on every call: after the first, a verified-token cache hit
#   tls      TLS (ALPN h2), no callers
#   tls+jwt  both
# Keys, certificates and the token are generated here (nothing committed).
#
#   bench/auth.sh                     # 3 rounds of 5 s
#   ROUNDS=5 SECONDS_PER_RUN=8 bench/auth.sh
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh

ROUNDS=${ROUNDS:-3}
SECONDS_PER_RUN=${SECONDS_PER_RUN:-$([ "${QUICK:-0}" = 1 ] && echo 2 || echo 5)}
CLIENTS=${CLIENTS:-4}
STREAMS=${STREAMS:-32}
BASE_PORT=${BASE_PORT:-30171}
SAMPLE=${SAMPLE:-Tests/SignedDataTests/Fixtures/transaction-Sandbox-1.jws}
BIN=${BIN:-.build/release/appstore-gateway}
PY=${PY:-.venv/bin/python}

command -v h2load >/dev/null || scripts/install-deps.sh
[ -n "${SKIP_BUILD:-}" ] || swift build -c release --product appstore-gateway >/dev/null

work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; [ -n "${KEEP:-}" ] || rm -rf "$work"; }
trap cleanup EXIT

# The request: a gRPC frame holding VerifyJWSRequest{jws: SAMPLE, app: "bench"}.
verify_request "$SAMPLE" "$work/request.bin" bench
"$PY" - "$work" <<'PY'
import base64, json, sys, time, datetime
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature
from cryptography.x509.oid import NameOID

work = sys.argv[1]
b64 = lambda data: base64.urlsafe_b64encode(data).rstrip(b"=").decode()
pem = lambda key: key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                    serialization.NoEncryption())
# The app's (unused) Apple key, the JWKS signing key, the TLS key and certificate.
open(f"{work}/app.p8", "wb").write(pem(ec.generate_private_key(ec.SECP256R1())))
signer = ec.generate_private_key(ec.SECP256R1())
n = signer.public_key().public_numbers()
json.dump({"keys": [{"kty": "EC", "crv": "P-256", "kid": "bench", "x": b64(n.x.to_bytes(32, "big")),
                     "y": b64(n.y.to_bytes(32, "big"))}]}, open(f"{work}/jwks.json", "w"))
now = int(time.time())
signing_input = b64(json.dumps({"alg": "ES256", "kid": "bench"}).encode()) + "." + b64(json.dumps(
    {"iss": "bench-issuer", "sub": "bench-caller", "aud": "appstore-gateway", "exp": now + 3600}).encode())
r, s = decode_dss_signature(signer.sign(signing_input.encode(), ec.ECDSA(hashes.SHA256())))
open(f"{work}/token", "w").write(signing_input + "." + b64(r.to_bytes(32, "big") + s.to_bytes(32, "big")))
tls_key = ec.generate_private_key(ec.SECP256R1())
name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
moment = datetime.datetime.now(datetime.timezone.utc)
cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(tls_key.public_key())
        .serial_number(x509.random_serial_number()).not_valid_before(moment - datetime.timedelta(minutes=5))
        .not_valid_after(moment + datetime.timedelta(days=1)).sign(tls_key, hashes.SHA256()))
open(f"{work}/tls.key", "wb").write(pem(tls_key))
open(f"{work}/tls.pem", "wb").write(cert.public_bytes(serialization.Encoding.PEM))
PY
chmod 600 "$work/app.p8" "$work/tls.key"   # the gateway refuses a key file others may read

config() {  # config NAME WITH_TLS WITH_CALLERS
  {
    echo "admin: \"\""
    echo "apps: [{name: bench, bundleId: com.example, issuerId: i, keyId: ABCDEFGHIJ, privateKeyFile: $work/app.p8, environment: sandbox}]"
    # signatureCacheSize 0: every VerifyJWS pays its ECDSA, as in the figures measured before the cache.
    echo "verification: {allowUnboundVerification: true, signatureCacheSize: 0, rootCertificates: [$PWD/certs/AppleRootCA-G3.cer]}"
    echo "logging: {accessLog: false}"
    [ "$2" = yes ] && echo "tls: {certificateFile: $work/tls.pem, privateKeyFile: $work/tls.key}"
    if [ "$3" = yes ]; then
      echo "authentication: {jwt: {jwksFile: $work/jwks.json, issuer: bench-issuer, audiences: [appstore-gateway]}}"
      echo "callers: [{identity: bench-caller, apps: [\"*\"]}]"
    fi
  } > "$work/$1.yaml"
}

names=(plain jwt tls tls+jwt)
declare -A port scheme header
index=0
for variant in "${names[@]}"; do
  file=${variant/+/-}
  case $variant in
    plain) config "$file" no no ;;
    jwt) config "$file" no yes ;;
    tls) config "$file" yes no ;;
    tls+jwt) config "$file" yes yes ;;
  esac
  port[$variant]=$((BASE_PORT + index)); index=$((index + 1))
  scheme[$variant]=$([[ $variant == tls* ]] && echo https || echo http)
  header[$variant]=$([[ $variant == *jwt ]] && echo "authorization: Bearer $(cat "$work/token")" || echo "x-bench: 1")
  "$BIN" serve --config "$work/$file.yaml" --listen "127.0.0.1:${port[$variant]}" --threads 1 > "$work/$file.log" 2>&1 &
  pids+=($!)
  wait_port "${port[$variant]}"
done

rate() {  # rate VARIANT -> requests/s; failures (non-OK gRPC statuses show as h2load errors only for HTTP) are checked once below
  h2load -D "$SECONDS_PER_RUN" -c "$CLIENTS" -m "$STREAMS" -t 1 -d "$work/request.bin" \
    -H 'content-type: application/grpc' -H 'te: trailers' -H "${header[$1]}" \
    "${scheme[$1]}://127.0.0.1:${port[$1]}/appstore.gateway.v1.AppStoreGateway/VerifyJWS" 2>&1 |
    awk '/^finished in/ {gsub(",", "", $4); print $4} /^requests:/ { if ($10+0 > 0 || $12+0 > 0) print "h2load saw failures: " $0 > "/dev/stderr" }'
}

# Every variant must answer with a message: a refusal (UNAUTHENTICATED, PERMISSION_DENIED) is Trailers-Only, with
# grpc-status in the response head, and would be cheaper and flatter the figure. (h2load -v prints no trailers.)
for variant in "${names[@]}"; do
  status=$(h2load -n 1 -c 1 -d "$work/request.bin" -H 'content-type: application/grpc' -H 'te: trailers' \
    -H "${header[$variant]}" -v "${scheme[$variant]}://127.0.0.1:${port[$variant]}/appstore.gateway.v1.AppStoreGateway/VerifyJWS" \
    2>&1 | awk -F': ' '/grpc-status/ {print $2; exit}')
  [ -z "$status" ] || { echo "$variant answered grpc-status '${status:-none}'" >&2; cat "$work/${variant/+/-}.log" >&2; exit 1; }
done

declare -A runs
for round in $(seq 1 "$ROUNDS"); do
  line="round $round:"
  for variant in "${names[@]}"; do
    r=$(rate "$variant"); runs[$variant]="${runs[$variant]:-} $r"; line="$line $variant ${r}/s"
  done
  echo "$line"
done
# shellcheck disable=SC2086
emit auth "{\"plain\":$(stat_json ${runs[plain]}),\"jwt\":$(stat_json ${runs[jwt]}),\"tls\":$(stat_json ${runs[tls]}),\"tls_jwt\":$(stat_json ${runs[tls+jwt]}),\"jwt_vs_plain\":$(stat_json $(ratios "${runs[jwt]# }" "${runs[plain]# }")),\"tls_vs_plain\":$(stat_json $(ratios "${runs[tls]# }" "${runs[plain]# }")),\"tls_jwt_vs_plain\":$(stat_json $(ratios "${runs[tls+jwt]# }" "${runs[plain]# }"))}"
echo "VerifyJWS (cached chain), h2load -D $SECONDS_PER_RUN -c $CLIENTS -m $STREAMS -t 1; gateways threads=1; $(nproc) cores"
