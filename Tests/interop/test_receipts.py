"""ExtractTransactionIdFromReceipt against receipts the test builds and signs itself (PKCS#7 SignedData with a
self-made certificate), each answer equal to Apple's own ReceiptUtility (app-store-server-library) on the same
receipt, and malformed receipts refused with INVALID_ARGUMENT."""
import base64
import datetime

import grpc
import pytest
from appstoreserverlibrary.receipt_utility import ReceiptUtility
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import pkcs7
from cryptography.x509.oid import NameOID

from appstore.gateway.v1 import gateway_pb2_grpc, receipts_pb2


def der(tag, content):
    length = len(content)
    if length < 0x80:
        header = bytes([length])
    else:
        encoded = length.to_bytes((length.bit_length() + 7) // 8, "big")
        header = bytes([0x80 | len(encoded)]) + encoded
    return bytes([tag]) + header + content


def integer(value):
    return der(0x02, value.to_bytes(max(1, (value.bit_length() + 8) // 8), "big", signed=True))


def attribute(kind, value):
    return der(0x30, integer(kind) + integer(1) + der(0x04, value))


def utf8(text):
    return der(0x0C, text.encode())


def receipt_content(purchases):
    """A receipt payload: a bundle id attribute, then one in-app purchase (type 17) per id list."""
    attributes = [attribute(2, utf8("com.example.app"))]
    for fields in purchases:
        attributes.append(attribute(17, der(0x31, b"".join(attribute(k, utf8(v)) for k, v in fields))))
    return der(0x31, b"".join(attributes))


@pytest.fixture(scope="module")
def signer():
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "Receipt test signer")])
    now = datetime.datetime.now(datetime.timezone.utc)
    certificate = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
                   .serial_number(1).not_valid_before(now).not_valid_after(now + datetime.timedelta(days=1))
                   .sign(key, hashes.SHA256()))
    return certificate, key


def signed_receipt(signer, content):
    certificate, key = signer
    signed = (pkcs7.PKCS7SignatureBuilder().set_data(content).add_signer(certificate, key, hashes.SHA256())
              .sign(serialization.Encoding.DER, []))
    return base64.b64encode(signed).decode()


@pytest.fixture(scope="module")
def stub(gateway):
    channel = grpc.insecure_channel(gateway.address)
    yield gateway_pb2_grpc.AppStoreGatewayStub(channel)
    channel.close()


def extract(stub, **receipt):
    return stub.ExtractTransactionIdFromReceipt(receipts_pb2.ExtractTransactionIdFromReceiptRequest(**receipt),
                                                timeout=10)


@pytest.mark.parametrize("purchases, expected", [
    ([[(1701, "1"), (1703, "2000000123456789"), (1705, "2000000000000001")]], "2000000123456789"),
    ([[(1705, "2000000000000001"), (1703, "2000000123456789")]], "2000000000000001"),
    ([[(1701, "1")], [(1703, "777")]], "777"),
    ([], None),
])
def test_app_receipt_ids_equal_apples_receipt_utility(stub, signer, purchases, expected):
    receipt = signed_receipt(signer, receipt_content(purchases))
    assert ReceiptUtility().extract_transaction_id_from_app_receipt(receipt) == expected
    answer = extract(stub, app_receipt=receipt)
    assert answer.found == (expected is not None) and answer.transaction_id == (expected or "")


def test_xcode_receipts_wrap_the_content_once_more(stub, signer):
    receipt = signed_receipt(signer, der(0x04, receipt_content([[(1703, "42")]])))
    assert extract(stub, app_receipt=receipt).transaction_id == "42"


def test_transaction_receipt_equals_apples_receipt_utility(stub):
    inner = base64.b64encode(b'{\n\t"original-transaction-id" = "11";\n\t"transaction-id" = "33";\n}').decode()
    receipt = base64.b64encode(f'{{\n\t"signature" = "AAAA";\n\t"purchase-info" = "{inner}";\n}}'.encode()).decode()
    assert ReceiptUtility().extract_transaction_id_from_transaction_receipt(receipt) == "33"
    answer = extract(stub, transaction_receipt=receipt)
    assert answer.found and answer.transaction_id == "33"
    empty = base64.b64encode(b'{"signature" = "AAAA";}').decode()
    assert not extract(stub, transaction_receipt=empty).found


@pytest.mark.parametrize("receipt", [
    "not base64!",
    base64.b64encode(b"\x30\x03\x02\x01\x01").decode(),  # DER, not a SignedData
    base64.b64encode(b"\x30\x80" + b"\x00" * 10).decode(),  # indefinite length garbage
])
def test_malformed_app_receipts_are_invalid_argument(stub, receipt):
    with pytest.raises(grpc.RpcError) as info:
        extract(stub, app_receipt=receipt)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "app_receipt" in info.value.details()


def test_content_that_lies_about_its_length_is_refused(stub, signer):
    receipt = signed_receipt(signer, b"\x31\x84\x7f\xff\xff\xff" + attribute(17, b""))
    with pytest.raises(grpc.RpcError) as info:
        extract(stub, app_receipt=receipt)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT


def test_a_receipt_over_the_cap_is_refused_before_parsing(stub):
    with pytest.raises(grpc.RpcError) as info:
        extract(stub, app_receipt="A" * 4_000_004)
    assert info.value.code() in (grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.RESOURCE_EXHAUSTED)
