"""scripts/contract.py, the gRPC contract check of `make check-contract`: today's proto/ keeps the released
contract (proto/contract/v1.descriptor.binpb), every kind of breaking change to a copy of proto/ is caught and
named, and additions pass."""
import importlib.util
import os
import re
import shutil

import pytest

from conftest import ROOT

PROTO = os.path.join(ROOT, "proto")
V1 = os.path.join("appstore", "gateway", "v1")
BASELINE = os.path.join(PROTO, "contract", "v1.descriptor.binpb")

_spec = importlib.util.spec_from_file_location("contract", os.path.join(ROOT, "scripts", "contract.py"))
contract = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(contract)


def mutated(tmp_path, edits, name="proto"):
    """A copy of proto/ with `edits` applied: (file under appstore/gateway/v1 or "*" for all, old, new); a plain
    `old` must occur exactly once in its file, an `re.Pattern` is replaced wherever it matches."""
    copy = tmp_path / name
    shutil.copytree(PROTO, copy, ignore=shutil.ignore_patterns("contract"))
    for file, old, new in edits:
        paths = [copy / V1 / f for f in os.listdir(copy / V1)] if file == "*" else [copy / V1 / file]
        for path in paths:
            text = path.read_text()
            if isinstance(old, re.Pattern):
                text = old.sub(new, text)
            else:
                assert text.count(old) == 1, f"{old!r} is not once in {path}"
                text = text.replace(old, new)
            path.write_text(text)
    return str(copy)


def check(capsys, proto_dir, baseline=BASELINE):
    """Runs `contract.py check`; returns (exit status, what it printed)."""
    status = contract.main(["check", "--proto-dir", proto_dir, "--baseline", baseline])
    out, err = capsys.readouterr()
    return status, out + err


def test_todays_proto_keeps_the_released_contract(capsys):
    status, printed = check(capsys, PROTO)
    assert status == 0, printed
    assert "is compatible with proto/contract/v1.descriptor.binpb" in printed


def test_the_baseline_is_a_descriptor_set_of_the_v1_contract():
    released = contract.Contract(contract.load(BASELINE))
    assert ".appstore.gateway.v1.AppStoreGateway" in released.services
    assert ".grpc.health.v1.Health" in released.services
    assert not any(name.startswith("google/protobuf/") for name in released.files)


RESPONSE = "appstore.gateway.v1.ExtractTransactionIdFromReceiptResponse"
SERVICE = "appstore.gateway.v1.AppStoreGateway"
ENVIRONMENT = "appstore.gateway.v1.Environment"

BREAKING = {
    "field removed": (
        [("receipts.proto", "  bool found = 1;\n", "")],
        f"field {RESPONSE}.found (1) removed"),
    "field renumbered": (
        [("receipts.proto", "string transaction_id = 2;", "string transaction_id = 3;")],
        f"field {RESPONSE}.transaction_id (2) renumbered to 3"),
    "field renamed": (
        [("receipts.proto", "bool found = 1;", "bool present = 1;")],
        f"field {RESPONSE}.found (1) renamed to present"),
    "field type changed": (
        [("receipts.proto", "string transaction_id = 2;", "bytes transaction_id = 2;")],
        f"field {RESPONSE}.transaction_id (2) type changed from string to bytes"),
    "field message type changed": (
        [("history.proto", "SortOrder sort = 8;", "Environment sort = 8;")],
        "type changed from enum appstore.gateway.v1.SortOrder to enum appstore.gateway.v1.Environment"),
    "field made repeated": (
        [("receipts.proto", "string transaction_id = 2;", "repeated string transaction_id = 2;")],
        f"field {RESPONSE}.transaction_id (2) label changed from singular to repeated"),
    "field given explicit presence": (
        [("receipts.proto", "bool found = 1;", "optional bool found = 1;")],
        f"field {RESPONSE}.found (1) label changed from singular to explicit presence (optional)"),
    "field moved out of its oneof": (
        [("receipts.proto", "    string transaction_receipt = 2;\n  }", "  }\n  string transaction_receipt = 2;")],
        "transaction_receipt (2) oneof changed from receipt to None"),
    "message removed": (
        [("*", re.compile(r"\bExtractTransactionIdFromReceiptResponse\b"), "ExtractTransactionIdResponse")],
        f"message {RESPONSE} removed"),
    "enum removed": (
        [("*", re.compile(r"\bSortOrder\b"), "HistoryOrder")],
        "enum appstore.gateway.v1.SortOrder removed"),
    "enum value removed": (
        [("common.proto", "  ENVIRONMENT_LOCAL_TESTING = 4;\n", "")],
        f"enum value {ENVIRONMENT}.ENVIRONMENT_LOCAL_TESTING (4) removed"),
    "enum value renumbered": (
        [("common.proto", "ENVIRONMENT_LOCAL_TESTING = 4;", "ENVIRONMENT_LOCAL_TESTING = 5;")],
        f"enum value {ENVIRONMENT}.ENVIRONMENT_LOCAL_TESTING (4) renumbered to 5"),
    "enum value renamed": (
        [("common.proto", "ENVIRONMENT_LOCAL_TESTING = 4;", "ENVIRONMENT_LOCAL = 4;")],
        f"enum value {ENVIRONMENT}.ENVIRONMENT_LOCAL_TESTING (4) renamed to ENVIRONMENT_LOCAL"),
    "rpc removed": (
        [("gateway.proto", "  rpc ExtractTransactionIdFromReceipt(ExtractTransactionIdFromReceiptRequest)\n"
          "      returns (ExtractTransactionIdFromReceiptResponse);\n", "")],
        f"rpc {SERVICE}.ExtractTransactionIdFromReceipt removed"),
    "rpc request type changed": (
        [("gateway.proto", "rpc VerifyJWS(VerifyJWSRequest)", "rpc VerifyJWS(GetHistoryRequest)")],
        f"rpc {SERVICE}.VerifyJWS request type changed from appstore.gateway.v1.VerifyJWSRequest to "
        "appstore.gateway.v1.GetHistoryRequest"),
    "rpc response type changed": (
        [("gateway.proto", "returns (VerifyJWSResponse)", "returns (GetHistoryResponse)")],
        f"rpc {SERVICE}.VerifyJWS response type changed"),
    "rpc no longer streams": (
        [("gateway.proto", "returns (stream NotificationEvent)", "returns (NotificationEvent)")],
        f"rpc {SERVICE}.StreamNotifications streaming kind changed from server_streaming to unary"),
    "rpc streams its requests": (
        [("gateway.proto", "rpc VerifyJWS(VerifyJWSRequest)", "rpc VerifyJWS(stream VerifyJWSRequest)")],
        f"rpc {SERVICE}.VerifyJWS streaming kind changed from unary to client_streaming"),
    "service removed": (
        [("gateway.proto", "service AppStoreGateway {", "service AppStoreGatewayV2 {")],
        f"service {SERVICE} removed"),
    "generated package changed": (
        [("receipts.proto", 'option java_package = "com.appstore.gateway.v1";',
          'option java_package = "com.appstore.gateway";')],
        "file appstore/gateway/v1/receipts.proto: option java_package changed"),
}


@pytest.mark.parametrize("kind", sorted(BREAKING))
def test_each_breaking_change_is_caught_and_named(tmp_path, capsys, kind):
    edits, expected = BREAKING[kind]
    status, printed = check(capsys, mutated(tmp_path, edits))
    assert status == 1, printed
    assert expected in printed, printed
    assert "breaks the released contract" in printed


def test_additions_pass(tmp_path, capsys):
    edits = [
        ("receipts.proto", "  string transaction_id = 2;\n",
         "  string transaction_id = 2;\n  // Added.\n  string note = 3;\n  optional int64 count = 4;\n"
         "  repeated Extra extras = 5;\n}\n\n// Added.\nmessage Extra {\n  string value = 1;\n"),
        ("common.proto", "  ENVIRONMENT_LOCAL_TESTING = 4;\n",
         "  ENVIRONMENT_LOCAL_TESTING = 4;\n  // Added.\n  ENVIRONMENT_OTHER = 5;\n"),
        ("gateway.proto", "  rpc VerifyJWS(VerifyJWSRequest) returns (VerifyJWSResponse);\n",
         "  rpc VerifyJWS(VerifyJWSRequest) returns (VerifyJWSResponse);\n"
         "  rpc Extract(ExtractTransactionIdFromReceiptRequest) returns (stream Extra);\n"),
    ]
    # Counted against today's proto, which may already add to the released contract.
    _, today = check(capsys, PROTO)
    before = int(re.search(r"\((\d+) additions\)", today).group(1))
    status, printed = check(capsys, mutated(tmp_path, edits))
    assert status == 0, printed
    assert f"({before + 6} additions)" in printed, printed


def test_reserved_numbers_and_names_stay_reserved(tmp_path, capsys):
    """A field removed in an earlier major version leaves its number and name reserved: neither may come back."""
    reserve = ("receipts.proto", "  bool found = 1;\n", "  bool found = 1;\n  reserved 7 to 9;\n  reserved \"gone\";\n")
    baseline = str(tmp_path / "released.binpb")
    released_dir = mutated(tmp_path, [reserve], "released")
    assert contract.main(["freeze", "--proto-dir", released_dir, "--baseline", baseline]) == 0
    capsys.readouterr()

    status, printed = check(capsys, mutated(tmp_path, [reserve], "same"), baseline)
    assert status == 0, printed

    reused = ("receipts.proto", "  bool found = 1;\n",
              "  bool found = 1;\n  reserved 7;\n  reserved 9;\n  string gone = 8;\n  string other = 10;\n")
    status, printed = check(capsys, mutated(tmp_path, [reused], "reused"), baseline)
    assert status == 1, printed
    assert f"field {RESPONSE}.gone uses the reserved number 8" in printed
    assert f"field {RESPONSE}.gone uses a reserved name" in printed

    released = ("receipts.proto", "  bool found = 1;\n", "  bool found = 1;\n  reserved 7, 8;\n")
    status, printed = check(capsys, mutated(tmp_path, [released], "released-again"), baseline)
    assert status == 1, printed
    assert f"message {RESPONSE}: reserved numbers 7-9 are no longer all reserved" in printed
    assert f"message {RESPONSE}: reserved name gone is no longer reserved" in printed


def test_compare_takes_two_descriptor_sets(tmp_path, capsys):
    newer = str(tmp_path / "newer.binpb")
    removed = ("common.proto", "  ENVIRONMENT_LOCAL_TESTING = 4;\n", "")
    assert contract.main(["freeze", "--proto-dir", mutated(tmp_path, [removed]), "--baseline", newer]) == 0
    capsys.readouterr()
    assert contract.main(["compare", BASELINE, BASELINE]) == 0
    assert contract.main(["compare", BASELINE, newer]) == 1
    assert "ENVIRONMENT_LOCAL_TESTING (4) removed" in capsys.readouterr().err
