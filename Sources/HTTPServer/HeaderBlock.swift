internal import CNGHTTP2

/// A header list encoded once into nghttp2 name/value pairs, for responses sent over and over (a gRPC
/// response head, an OK trailer): building it per call would be waste.
/// Immutable after init; the storage is owned here and lives as long as the block. nghttp2 is told not to copy
/// the names and values (NO_COPY_NAME, NO_COPY_VALUE): it reads them when it packs the frame, so a block
/// handed to it must outlive that; the stream it was submitted on keeps it (`HTTP2Stream.submittedHead`,
/// `submittedTrailers`), and nghttp2 packs a stream's frames only while the stream is open.
public final class HeaderBlock: @unchecked Sendable {
    let fields: [(name: String, value: String)]
    private let storage: UnsafeMutableRawBufferPointer
    let pairs: UnsafeMutableBufferPointer<nghttp2_nv>

    /// Lowercase names; pseudo-headers (":status") first.
    public init(_ fields: [(name: String, value: String)]) {
        let flags = UInt8(NGHTTP2_NV_FLAG_NO_COPY_NAME.rawValue | NGHTTP2_NV_FLAG_NO_COPY_VALUE.rawValue)
        self.fields = fields
        let size = max(1, fields.reduce(0) { $0 + $1.name.utf8.count + $1.value.utf8.count })
        storage = UnsafeMutableRawBufferPointer.allocate(byteCount: size, alignment: 1)
        pairs = UnsafeMutableBufferPointer<nghttp2_nv>.allocate(capacity: max(1, fields.count))
        var offset = 0
        let base = storage.baseAddress!.assumingMemoryBound(to: UInt8.self)
        for (index, field) in fields.enumerated() {
            let name = Array(field.name.utf8)
            let value = Array(field.value.utf8)
            let namePointer = base + offset
            namePointer.update(from: name, count: name.count)
            offset += name.count
            let valuePointer = base + offset
            valuePointer.update(from: value, count: value.count)
            offset += value.count
            pairs[index] = nghttp2_nv(
                name: namePointer, value: valuePointer, namelen: name.count, valuelen: value.count, flags: flags)
        }
    }

    deinit {
        storage.deallocate()
        pairs.deallocate()
    }

    var count: Int { fields.count }

    /// The fields, as given.
    public var fieldList: [(name: String, value: String)] { fields }
}
