@testable import GRPC

/// The gRPC deframer over arbitrary bytes delivered in arbitrary chunks, as DATA frames would deliver them.
/// The first input byte picks the chunk size, so the fuzzer explores splits as well as contents.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzDeframer(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size > 0 else { return 0 }
    let input = UnsafeRawBufferPointer(start: data, count: size)
    let chunk = Int(input[0]) + 1
    var deframer = MessageDeframer(maxMessageSize: 64 * 1024, compressionAllowed: input[0] & 1 == 1)
    var offset = 1
    var total = 0
    while offset < size {
        let end = min(size, offset + chunk)
        deframer.append(UnsafeRawBufferPointer(rebasing: input[offset..<end]))
        offset = end
        do {
            while let message = try deframer.next() {
                total += message.count + 5
                precondition(total <= size, "the deframer produced more bytes than it received")
            }
        } catch {
            return 0  // a status that ends the call: the expected answer to bad framing
        }
    }
    return 0
}
