"""The Apple peer of bench/verify-peers.sh: verifications per second of Apple's app-store-server-library
(`SignedDataVerifier`, offline, the same root and JWS as the gateway) on one core. Offline, the library verifies
the whole x5c chain on every call (its chain cache is for online checks only).

  .venv/bin/python bench/peers/apple_python_verify.py JWS_FILE ROOT_CER SECONDS
"""
import base64
import json
import sys
import time

from appstoreserverlibrary.models.Environment import Environment
from appstoreserverlibrary.signed_data_verifier import SignedDataVerifier


def main(jws_path, root_path, seconds):
    jws = open(jws_path).read().strip()
    claims = json.loads(base64.urlsafe_b64decode(jws.split(".")[1] + "=="))
    verifier = SignedDataVerifier(
        root_certificates=[open(root_path, "rb").read()], enable_online_checks=False,
        environment=Environment(claims["environment"]), bundle_id=claims["bundleId"],
        app_apple_id=claims.get("appAppleId"))
    verifier.verify_and_decode_signed_transaction(jws)  # raises if the sample does not verify
    count, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        for _ in range(20):
            verifier.verify_and_decode_signed_transaction(jws)
        count += 20
    print(f"{count / (time.perf_counter() - start):.0f}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], float(sys.argv[3]))
