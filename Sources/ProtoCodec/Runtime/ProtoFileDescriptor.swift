/// One proto file's serialized `google.protobuf.FileDescriptorProto`, for gRPC server reflection
/// (grpc/grpc doc/server-reflection.md): clients such as grpcurl ask for a file by name or by a symbol it
/// defines, then for its dependencies. The generated `ProtoFileDescriptor.all` lists every file.
public struct ProtoFileDescriptor: Sendable, Hashable {
    /// The file's import path, e.g. "appstore/gateway/v1/verify.proto".
    public let name: String
    /// The import paths this file depends on.
    public let dependencies: [String]
    /// Fully qualified names defined here: messages, enums, services and methods (`pkg.Service.Method`).
    public let symbols: [String]
    /// The serialized FileDescriptorProto (without source comments).
    public let serializedBytes: [UInt8]

    init(name: String, dependencies: [String], symbols: [String], base64: String) {
        self.name = name
        self.dependencies = dependencies
        self.symbols = symbols
        self.serializedBytes = Self.decodeBase64(base64)
    }

    /// The descriptor of the file named `name`.
    public static func file(named name: String) -> ProtoFileDescriptor? {
        all.first { $0.name == name }
    }

    /// The descriptor of the file that defines `symbol` (a fully qualified name without leading dot).
    public static func file(containingSymbol symbol: String) -> ProtoFileDescriptor? {
        all.first { $0.symbols.contains(symbol) }
    }

    /// Decodes the generator's standard base64 (line breaks and whitespace ignored). The input is generated, so
    /// an invalid character is a generator bug.
    private static func decodeBase64(_ text: String) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count * 3 / 4)
        var accumulator: UInt32 = 0
        var bits = 0
        for character in text.utf8 {
            let value: UInt32
            switch character {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): value = UInt32(character - UInt8(ascii: "A"))
            case UInt8(ascii: "a")...UInt8(ascii: "z"): value = UInt32(character - UInt8(ascii: "a")) + 26
            case UInt8(ascii: "0")...UInt8(ascii: "9"): value = UInt32(character - UInt8(ascii: "0")) + 52
            case UInt8(ascii: "+"): value = 62
            case UInt8(ascii: "/"): value = 63
            case UInt8(ascii: "="), UInt8(ascii: " "), UInt8(ascii: "\n"): continue
            default: preconditionFailure("generated descriptor base64 holds byte \(character)")
            }
            accumulator = accumulator << 6 | value
            bits += 6
            if bits >= 8 {
                bits -= 8
                bytes.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)))
            }
        }
        return bytes
    }
}
