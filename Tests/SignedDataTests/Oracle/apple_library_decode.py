"""Oracle for SignedDataTests: verify and decode JWS files with Apple's app-store-server-library.

Usage: apple_library_decode.py ROOT_CER FILE.jws...   Prints one JSON object keyed by file name:
{"status": <VerificationVerdict name or "OK">, "decoded": {<Apple field name>: value, ...}}.
Each file is verified with online checks off, the payload's own bundle id, app Apple id (Production) and
environment; legacy payloads without an environment are checked against Sandbox.
"""
import base64
import enum
import json
import sys

import attr
from appstoreserverlibrary.models.Environment import Environment
from appstoreserverlibrary.signed_data_verifier import SignedDataVerifier, VerificationException


def payload_of(jws):
    part = jws.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))


def plain(value):
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def main():
    root = open(sys.argv[1], "rb").read()
    out = {}
    for path in sys.argv[2:]:
        jws = open(path).read().strip()
        payload = payload_of(jws)
        identity = payload.get("data") or payload.get("summary") or payload.get("appData") or payload
        environment = Environment(identity.get("environment", "Sandbox"))
        app_apple_id = identity.get("appAppleId") if environment == Environment.PRODUCTION else None
        verifier = SignedDataVerifier([root], False, environment, identity.get("bundleId", "unused"), app_apple_id)
        name = path.rsplit("/", 1)[-1][: -len(".jws")]
        try:
            if "notificationType" in payload:
                decoded = verifier.verify_and_decode_notification(jws)
            elif "transactionId" in payload:
                decoded = verifier.verify_and_decode_signed_transaction(jws)
            else:
                decoded = verifier.verify_and_decode_renewal_info(jws)
            out[name] = {"status": "OK", "decoded": plain(attr.asdict(decoded, recurse=True))}
        except VerificationException as error:
            out[name] = {"status": error.status.name, "decoded": None}
    json.dump(out, sys.stdout, sort_keys=True)


if __name__ == "__main__":
    main()
