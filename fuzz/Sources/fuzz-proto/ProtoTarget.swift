@testable import ProtoCodec

/// Request messages decoded from arbitrary bytes through protobuf-c; whatever decodes must re-encode and
/// decode to the same value.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzProto(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    roundTrip(VerifyJWSRequest.self, bytes)
    roundTrip(GetHistoryRequest.self, bytes)
    return 0
}

private func roundTrip<M: ProtoMessage & Equatable>(_ type: M.Type, _ bytes: [UInt8]) {
    guard let message = try? M(serializedBytes: bytes) else { return }
    let again = try? M(serializedBytes: message.serializedBytes())
    precondition(again == message, "\(M.self) does not survive a round trip")
}
