#!/usr/bin/env python3
"""Writes Tests/ProtoCodecTests/Fixtures/proto-json.txt: messages and the proto3 JSON Google's Python protobuf
prints for them, for ProtoJSONTests' differential test of ProtoJSON (Sources/ProtoCodec/Runtime/ProtoJSON.swift).

Run by hand with the venv's python when proto/ or the cases change (nothing runs it in CI):

    .venv/bin/python scripts/proto-json-fixtures.py

Python stubs are generated from proto/ into a temporary directory as Tests/interop/conftest.py does. Every case is
built from fixed seeds (the output depends only on proto/, this script and the protobuf version). One line per
case: `<full message name> <serialized message, hex> <JSON>`, where the JSON is

    json.dumps(json_format.MessageToDict(message), separators=(",", ":"), ensure_ascii=False)

that is `json_format.MessageToJson(message, indent=None, ensure_ascii=False)` without whitespace (checked for
each case), with one change: map entries sorted by key (json_format prints them in its map's hash order; ProtoJSON
sorts them). Left out, as ProtoJSON documents them differently: NUL in strings (a protobuf-c string ends at it),
-0.0 (protobuf-c's encoding drops it), Timestamps and Durations out of range and Any payloads of unknown types
(json_format raises on them).
"""

import json
import math
import os
import random
import struct
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
OUT = os.path.join(ROOT, "Tests", "ProtoCodecTests", "Fixtures", "proto-json.txt")


# The interop tests' stubs (generated from proto/ into a temporary package directory, put on sys.path).
sys.path.insert(0, os.path.join(ROOT, "Tests", "interop"))
import conftest  # noqa: E402,F401

import google.protobuf as protobuf  # noqa: E402
from google.protobuf import any_pb2, descriptor, duration_pb2, json_format, timestamp_pb2, wrappers_pb2  # noqa: E402
from appstore.gateway.v1 import (  # noqa: E402
    advanced_commerce_pb2, consumption_pb2, realtime_pb2, retention_pb2, subscription_state_pb2, transaction_pb2,
    verify_pb2,
)
from google.rpc import error_details_pb2, status_pb2  # noqa: E402

FD = descriptor.FieldDescriptor
WRAPPERS = {
    "google.protobuf.DoubleValue", "google.protobuf.FloatValue", "google.protobuf.Int64Value",
    "google.protobuf.UInt64Value", "google.protobuf.Int32Value", "google.protobuf.UInt32Value",
    "google.protobuf.BoolValue", "google.protobuf.StringValue", "google.protobuf.BytesValue",
}

# Pieces random strings are made of: plain text, what JSON escapes, DEL, and non-ASCII up to 4-byte UTF-8.
STRING_PIECES = [
    "a", "Z", "0", " ", "com.example.app", "1000000123456789", "\"", "\\", "/", "\n", "\r", "\t", "\b", "\f",
    "\x01", "\x1f", "\x7f", "é", "ü", "日本語", "🎉", "𝄞", "\u2028", "\ufeff", "<>&'",
]

DOUBLES = [
    0.1, 1.0, 2.5, -2.5, 100.0, 1e15, 1e16, 9007199254740993.0, 123456789.123, 1e-4, 1e-5, 1.5e-7, 5e-324,
    2.2250738585072014e-308, 1.7976931348623157e308, 1e21, 1e22, 1e100, 3.0e-310, 0.30000000000000004,
    9999999999999998.0, 1234567.0, float("nan"), float("inf"), float("-inf"), 1 / 3,
]


def random_string(rng):
    return "".join(rng.choice(STRING_PIECES) for _ in range(rng.randint(1, 6)))


def random_double(rng):
    kind = rng.random()
    if kind < 0.4:
        return rng.choice(DOUBLES)
    if kind < 0.7:
        return rng.uniform(-1, 1) * 10 ** rng.randint(-30, 30)
    while True:  # any finite bit pattern but -0.0
        value = struct.unpack("<d", struct.pack("<Q", rng.getrandbits(64)))[0]
        if math.isfinite(value) and not (value == 0 and math.copysign(1, value) < 0):
            return value


def random_float(rng):
    kind = rng.random()
    if kind < 0.3:
        value = rng.choice([0.1, 1.0, 3.4028234663852886e38, 1.17549435e-38, 1e-45, 16777216.0, 1e10, 0.9, 2.5e-5])
    elif kind < 0.6:
        value = rng.uniform(-1, 1) * 10 ** rng.randint(-20, 20)
    else:
        value = struct.unpack("<f", struct.pack("<I", rng.getrandbits(32)))[0]
    value = struct.unpack("<f", struct.pack("<f", value))[0]
    if not math.isfinite(value) or (value == 0 and math.copysign(1, value) < 0):
        return 0.5
    return value


def random_scalar(rng, field):
    t = field.type
    if t in (FD.TYPE_INT64, FD.TYPE_SINT64, FD.TYPE_SFIXED64):
        return rng.choice([1, -1, 2**63 - 1, -(2**63), rng.randint(-(2**63), 2**63 - 1), rng.randint(-1000, 10**13)])
    if t in (FD.TYPE_UINT64, FD.TYPE_FIXED64):
        return rng.choice([1, 2**64 - 1, 2**63, rng.randint(0, 2**64 - 1), rng.randint(0, 10**6)])
    if t in (FD.TYPE_INT32, FD.TYPE_SINT32, FD.TYPE_SFIXED32):
        return rng.choice([1, -1, 2**31 - 1, -(2**31), rng.randint(-(2**31), 2**31 - 1), rng.randint(0, 100000)])
    if t in (FD.TYPE_UINT32, FD.TYPE_FIXED32):
        return rng.choice([1, 2**32 - 1, rng.randint(0, 2**32 - 1)])
    if t == FD.TYPE_BOOL:
        return rng.random() < 0.5
    if t == FD.TYPE_DOUBLE:
        return random_double(rng)
    if t == FD.TYPE_FLOAT:
        return random_float(rng)
    if t == FD.TYPE_STRING:
        return random_string(rng)
    if t == FD.TYPE_BYTES:
        return bytes(rng.getrandbits(8) for _ in range(rng.randint(1, 20)))
    if t == FD.TYPE_ENUM:
        if rng.random() < 0.15:  # a number the enum does not name (proto3 enums are open)
            return rng.choice([77, 1000, -3])
        return rng.choice(field.enum_type.values).number
    raise ValueError(f"no random value for {field.full_name}")


def random_timestamp(rng, message):
    message.seconds = rng.choice([0, -1, -62135596800, 253402300799, rng.randint(-62135596800, 253402300799),
                                  rng.randint(1_600_000_000, 1_900_000_000)])
    message.nanos = rng.choice([0, 0, 123_000_000, 5_000_000, 123_456_000, 1_000, 123_456_789, 999_999_999, 1])


def random_duration(rng, message):
    seconds = rng.choice([0, 1, 59, 86400, 315576000000, rng.randint(0, 315576000000)])
    nanos = rng.choice([0, 500_000_000, 1_000, 1, 999_999_999, 10_000_000])
    sign = rng.choice([1, -1])
    message.seconds = sign * seconds
    message.nanos = sign * nanos


# Message types an Any packs: every message of the stubs but map entries.
ANY_PAYLOADS = []


def collect_payloads():
    from google.protobuf import symbol_database

    pool = symbol_database.Default().pool
    names = set()
    for module in (advanced_commerce_pb2, consumption_pb2, realtime_pb2, retention_pb2, subscription_state_pb2,
                   transaction_pb2, verify_pb2, error_details_pb2, status_pb2):
        file = module.DESCRIPTOR

        def add(message):
            if not message.GetOptions().map_entry:
                names.add(message.full_name)
            for nested in message.nested_types:
                add(nested)

        for message in file.message_types_by_name.values():
            add(message)
    names |= WRAPPERS | {"google.protobuf.Timestamp", "google.protobuf.Duration", "google.protobuf.Any"}
    from google.protobuf import message_factory

    for name in sorted(names):
        ANY_PAYLOADS.append(message_factory.GetMessageClass(pool.FindMessageTypeByName(name)))


def fill(rng, message, depth):
    """Sets a random subset of `message`'s fields to random values (sub-messages to `depth` levels)."""
    name = message.DESCRIPTOR.full_name
    if name == "google.protobuf.Timestamp":
        random_timestamp(rng, message)
        return
    if name == "google.protobuf.Duration":
        random_duration(rng, message)
        return
    if name == "google.protobuf.Any":
        payload = rng.choice(ANY_PAYLOADS)()
        if depth > 0:
            fill(rng, payload, depth - 1)
        prefix = rng.choice(["type.googleapis.com/", "type.googleapis.com/", "example.com/types/"])
        message.Pack(payload, type_url_prefix=prefix, deterministic=True)
        return
    done_oneofs = set()
    for field in message.DESCRIPTOR.fields:
        oneof = field.containing_oneof
        if oneof is not None:
            if oneof.name in done_oneofs:
                continue
            done_oneofs.add(oneof.name)
            if rng.random() < 0.3:
                continue
            member = rng.choice(oneof.fields)
            if member.type == FD.TYPE_MESSAGE:
                sub = getattr(message, member.name)
                sub.SetInParent()
                if depth > 0 and rng.random() < 0.8:
                    fill(rng, sub, depth - 1)
            else:  # sometimes the default: a set oneof case is printed even then
                value = random_scalar(rng, member)
                if rng.random() < 0.25:
                    value = member.default_value
                setattr(message, member.name, value)
            continue
        if name not in WRAPPERS and rng.random() < 0.35:
            continue
        if field.type == FD.TYPE_MESSAGE and field.message_type.GetOptions().map_entry:
            target = getattr(message, field.name)
            value_field = field.message_type.fields_by_name["value"]
            for _ in range(rng.randint(1, 4)):
                key = random_string(rng)
                if value_field.type == FD.TYPE_MESSAGE:
                    fill(rng, target[key], depth - 1)
                else:
                    target[key] = random_scalar(rng, value_field)
        elif field.is_repeated:
            target = getattr(message, field.name)
            for _ in range(rng.randint(1, 3)):
                if field.type == FD.TYPE_MESSAGE:
                    sub = target.add()
                    if depth > 0:
                        fill(rng, sub, depth - 1)
                else:
                    target.append(random_scalar(rng, field))
        elif field.type == FD.TYPE_MESSAGE:
            sub = getattr(message, field.name)
            sub.SetInParent()  # set, even if nothing in it is
            if depth > 0 and rng.random() < 0.85:
                fill(rng, sub, depth - 1)
        else:
            setattr(message, field.name, random_scalar(rng, field))


def sort_maps(message, js):
    """json_format's dict with every map's entries sorted by key (UTF-8 bytes, numbers by value)."""
    if not isinstance(js, dict):
        return js
    name = message.DESCRIPTOR.full_name
    if name == "google.protobuf.Any":
        if not message.type_url:
            return js
        payload = json_format._CreateMessageFromTypeUrl(message.type_url, None)
        payload.ParseFromString(message.value)
        if "value" in js and payload.DESCRIPTOR.full_name in WRAPPERS | {
            "google.protobuf.Timestamp", "google.protobuf.Duration", "google.protobuf.Any"
        }:
            js["value"] = sort_maps(payload, js["value"])
            return js
        return sort_maps(payload, js)
    for field, value in message.ListFields():
        key = field.json_name
        if field.type != FD.TYPE_MESSAGE or key not in js:
            continue
        if field.message_type.GetOptions().map_entry:
            key_type = field.message_type.fields_by_name["key"].type
            if field.message_type.fields_by_name["value"].type == FD.TYPE_MESSAGE:
                raise NotImplementedError("maps of messages: sort their values' maps too")

            def order(item):
                if key_type == FD.TYPE_STRING:
                    return item[0].encode("utf-8")
                return item[0] == "true" if key_type == FD.TYPE_BOOL else int(item[0])

            js[key] = dict(sorted(js[key].items(), key=order))
        elif field.is_repeated:
            js[key] = [sort_maps(m, j) for m, j in zip(value, js[key])]
        else:
            js[key] = sort_maps(value, js[key])
    return js


def case(message):
    js = sort_maps(message, json_format.MessageToDict(message))
    text = json.dumps(js, separators=(",", ":"), ensure_ascii=False)
    official = json_format.MessageToJson(message, indent=None, ensure_ascii=False)
    if json.loads(official) != json.loads(text):
        raise AssertionError(f"differs from MessageToJson: {official}")
    if "\\u0000" in text:
        raise AssertionError("a NUL in a string (ProtoJSON cuts C strings at it)")
    return f"{message.DESCRIPTOR.full_name} {message.SerializeToString(deterministic=True).hex()} {text}"


def subscription_event_by_hand():
    """A whole subscription event as the gateway posts it: a renewal with its subscription, transaction and
    renewal info."""
    sub = subscription_state_pb2
    event = sub.SubscriptionEvent(
        event_id="evt-1000000123456789-2", app="acme", environment=1, original_transaction_id="1000000123456789",
        sequence=18446744073709551615, type=sub.SUBSCRIPTION_EVENT_TYPE_RENEWAL, previous_status=1,
        cause="d4f9c3a2-6b1e-4c7a-9f0e-3b2a1c5d7e8f")
    event.occurred_at.FromSeconds(1795928400)
    s = event.subscription
    s.app = "acme"
    s.environment = 1
    s.original_transaction_id = "1000000123456789"
    s.product_id = "com.acme.pro.monthly"
    s.status = 1
    s.entitled = True
    s.entitlements.extend(["pro", "sync"])
    s.expires_date.seconds, s.expires_date.nanos = 1798520400, 123_000_000
    s.auto_renew = True
    s.version = 42
    s.transaction.transaction_id = "2000000987654321"
    s.transaction.quantity = 1
    s.transaction.price_milliunits = 9990
    s.transaction.purchase_date.seconds = 1795928400
    s.transaction.is_upgraded_value.value = False
    s.renewal_info.auto_renew_product_id = "com.acme.pro.yearly"
    s.renewal_info.eligible_win_back_offer_ids.extend(["wb1", "wb2"])
    s.renewal_info.is_in_billing_retry_period_value.value = True
    s.renewal_info.renewal_date.seconds, s.renewal_info.renewal_date.nanos = 1798520400, 1_000
    return event


def status_by_hand():
    """A status with one detail of each kind an Any holds: a message with a map, a well-known type, an Any."""
    status = status_pb2.Status(code=8, message="quota")
    info = error_details_pb2.ErrorInfo(reason="RATE_LIMIT_EXCEEDED", domain="appstore.gateway")
    for key, value in [("b", "2"), ("é", "4"), ("a", "1"), ("Z", "0"), ("", "e"), ("a\"", "q"), ("日本", "🎉")]:
        info.metadata[key] = value
    retry = error_details_pb2.RetryInfo()
    retry.retry_delay.FromMilliseconds(250)
    when = timestamp_pb2.Timestamp(seconds=1795928400, nanos=5_000_000)
    inner = any_pb2.Any()
    inner.Pack(wrappers_pb2.BoolValue(value=True), deterministic=True)
    for detail in (info, retry, when, wrappers_pb2.Int64Value(value=-5), inner, error_details_pb2.RetryInfo()):
        status.details.add().Pack(detail, deterministic=True)
    status.details.add()  # an empty Any: {}
    return status


def main():
    collect_payloads()
    cases = [
        subscription_event_by_hand(),
        subscription_state_pb2.SubscriptionEvent(),
        status_pb2.Status(code=8, message="quota \"exceeded\"\n"),
        status_by_hand(),
    ]
    rng = random.Random(47)
    randomized = [
        (subscription_state_pb2.SubscriptionEvent, 8, 3),
        (subscription_state_pb2.Subscription, 3, 3),
        (transaction_pb2.Transaction, 3, 2),
        (transaction_pb2.RenewalInfo, 3, 2),
        (status_pb2.Status, 5, 3),
        (error_details_pb2.ErrorInfo, 3, 1),
        (error_details_pb2.RetryInfo, 2, 1),
        (verify_pb2.VerifyJWSResponse, 4, 3),
        (realtime_pb2.ServeRealtimeRequestsRequest, 4, 3),
        (consumption_pb2.SendConsumptionInformationRequest, 4, 1),
        (subscription_state_pb2.GetCustomerRequest, 3, 1),
        (retention_pb2.UploadImageRequest, 3, 1),
        (transaction_pb2.AdvancedCommerceTransactionInfo, 3, 3),
        (advanced_commerce_pb2.CreateInAppSignatureRequest, 4, 4),
        (any_pb2.Any, 8, 3),
        (timestamp_pb2.Timestamp, 12, 0),
        (duration_pb2.Duration, 12, 0),
        (wrappers_pb2.DoubleValue, 150, 0),
        (wrappers_pb2.FloatValue, 100, 0),
        (wrappers_pb2.Int64Value, 4, 0),
        (wrappers_pb2.UInt64Value, 4, 0),
        (wrappers_pb2.Int32Value, 4, 0),
        (wrappers_pb2.UInt32Value, 3, 0),
        (wrappers_pb2.BoolValue, 2, 0),
        (wrappers_pb2.StringValue, 4, 0),
        (wrappers_pb2.BytesValue, 4, 0),
    ]
    for cls, count, depth in randomized:
        for _ in range(count):
            message = cls()
            fill(rng, message, depth)
            cases.append(message)
    lines = [case(message) for message in cases]
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w", encoding="utf-8", newline="\n") as h:
        h.write(f"# Generated by scripts/proto-json-fixtures.py (protobuf {protobuf.__version__}). Do not edit: "
                "run it again.\n")
        h.write("# <full message name> <serialized message, hex> <json_format's JSON, compact, maps sorted>\n")
        for line in lines:
            h.write(line + "\n")
    print(f"wrote {len(lines)} cases to {os.path.relpath(OUT, ROOT)}")


if __name__ == "__main__":
    main()
