/// What a PNG file says about itself, read from its chunks without decompressing anything: its dimensions and
/// whether it can be transparent (an alpha channel or a `tRNS` chunk). The whole chunk structure is walked, so a
/// truncated or padded file is refused too. Every length is checked before it is used: hostile bytes cost time
/// in proportion to their size and never trap.
package struct PNGImageHeader: Sendable, Hashable {
    /// Width in pixels (1 to 2³¹ − 1).
    package var width: Int
    /// Height in pixels (1 to 2³¹ − 1).
    package var height: Int
    /// IHDR's colour type: 0 grey, 2 RGB, 3 palette, 4 grey + alpha, 6 RGB + alpha.
    package var colorType: UInt8
    /// Whether any pixel can be transparent: an alpha channel (colour types 4 and 6) or a `tRNS` chunk.
    package var hasTransparency: Bool

    /// The eight bytes every PNG file starts with.
    package static let signature: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]

    /// Why bytes are not a well-formed PNG file.
    package struct Problem: Error, Sendable, Hashable, CustomStringConvertible {
        /// What is wrong, for a person.
        package var description: String

        init(_ description: String) { self.description = description }
    }

    /// Reads `bytes` as a PNG file.
    package init(parsing bytes: [UInt8]) throws(Problem) {
        guard bytes.count >= Self.signature.count, bytes.prefix(Self.signature.count).elementsEqual(Self.signature)
        else { throw Problem("not a PNG file (its first 8 bytes are not the PNG signature)") }
        var offset = Self.signature.count
        var header: (width: Int, height: Int, colorType: UInt8)?
        var transparencyChunk = false
        var sawData = false
        while true {
            guard bytes.count - offset >= 12 else { throw Problem("the PNG file is truncated (no IEND chunk)") }
            let length = Int(Self.bigEndian32(bytes, at: offset))
            let type = Array(bytes[(offset + 4)..<(offset + 8)])
            guard length <= Int(Int32.max), bytes.count - offset - 12 >= length else {
                throw Problem("the PNG file is truncated (a chunk runs past its end)")
            }
            let data = offset + 8
            if header == nil {
                guard type == Array("IHDR".utf8), length == 13 else {
                    throw Problem("the PNG file does not start with a 13-byte IHDR chunk")
                }
                header = try Self.imageHeader(bytes, at: data)
            } else {
                switch String(decoding: type, as: UTF8.self) {
                case "IHDR": throw Problem("the PNG file has a second IHDR chunk")
                case "tRNS": transparencyChunk = true
                case "IDAT": sawData = true
                case "IEND":
                    guard sawData else { throw Problem("the PNG file has no image data (IDAT)") }
                    guard offset + 12 + length == bytes.count else {
                        throw Problem("the PNG file has bytes after its IEND chunk")
                    }
                    let found = header!
                    width = found.width
                    height = found.height
                    colorType = found.colorType
                    hasTransparency = transparencyChunk || found.colorType == 4 || found.colorType == 6
                    return
                default: break
                }
            }
            offset = data + length + 4
        }
    }

    private static func imageHeader(_ bytes: [UInt8], at offset: Int) throws(Problem) -> (Int, Int, UInt8) {
        let width = bigEndian32(bytes, at: offset)
        let height = bigEndian32(bytes, at: offset + 4)
        let depth = bytes[offset + 8]
        let colorType = bytes[offset + 9]
        guard (1...UInt32(Int32.max)).contains(width), (1...UInt32(Int32.max)).contains(height) else {
            throw Problem("the PNG file's width and height must be 1 to 2147483647")
        }
        let depths: [UInt8: Set<UInt8>] = [
            0: [1, 2, 4, 8, 16], 2: [8, 16], 3: [1, 2, 4, 8], 4: [8, 16], 6: [8, 16],
        ]
        guard let allowed = depths[colorType], allowed.contains(depth) else {
            throw Problem("the PNG file's colour type \(colorType) with bit depth \(depth) is not valid PNG")
        }
        guard bytes[offset + 10] == 0, bytes[offset + 11] == 0, bytes[offset + 12] <= 1 else {
            throw Problem("the PNG file's compression, filter or interlace method is not valid PNG")
        }
        return (Int(width), Int(height), colorType)
    }

    private static func bigEndian32(_ bytes: [UInt8], at offset: Int) -> UInt32 {
        UInt32(bytes[offset]) << 24 | UInt32(bytes[offset + 1]) << 16 | UInt32(bytes[offset + 2]) << 8
            | UInt32(bytes[offset + 3])
    }
}
