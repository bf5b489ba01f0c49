/// PNG files built chunk by chunk (CRCs zero: the gateway reads the structure, never the checksums).
package enum PNGBytes {
    /// The 8 bytes every PNG file starts with.
    package static let signature: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]

    /// One chunk: length, type, data, a zero CRC.
    package static func chunk(_ type: String, _ data: [UInt8]) -> [UInt8] {
        let length = UInt32(data.count)
        return [UInt8(length >> 24), UInt8(length >> 16 & 0xFF), UInt8(length >> 8 & 0xFF), UInt8(length & 0xFF)]
            + Array(type.utf8) + data + [0, 0, 0, 0]
    }

    /// The IHDR chunk.
    package static func header(width: UInt32, height: UInt32, depth: UInt8 = 8, colorType: UInt8 = 2) -> [UInt8] {
        func be(_ value: UInt32) -> [UInt8] {
            [UInt8(value >> 24), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)]
        }
        return chunk("IHDR", be(width) + be(height) + [depth, colorType, 0, 0, 0])
    }

    /// A whole PNG file of one IDAT chunk, with `extra` chunks after the header.
    package static func png(
        width: UInt32, height: UInt32, colorType: UInt8 = 2, extra: [[UInt8]] = [], end: Bool = true
    ) -> [UInt8] {
        signature + header(width: width, height: height, colorType: colorType) + extra.joined()
            + chunk("IDAT", [0x78, 0x9C, 0x03, 0x00]) + (end ? chunk("IEND", []) : [])
    }
}
