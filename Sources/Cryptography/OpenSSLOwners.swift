internal import COpenSSL

/// Owns one `EVP_PKEY` (reference-counted by OpenSSL) and frees its reference in `deinit`.
///
/// Keys are only read after construction; OpenSSL 3 allows one `EVP_PKEY` to be used by several threads
/// at once for signing and verifying (each operation creates its own `EVP_PKEY_CTX`), hence `Sendable`.
final class EVPKey: @unchecked Sendable {
    let pointer: OpaquePointer

    /// Takes over the caller's reference to `pointer`.
    init(takingOwnershipOf pointer: OpaquePointer) {
        self.pointer = pointer
    }

    deinit { EVP_PKEY_free(pointer) }
}

/// Owns a memory `BIO` used to read or write PEM and text.
final class MemoryBIO {
    let pointer: OpaquePointer

    /// A read-only BIO over a copy of `bytes` (BIO_new_mem_buf borrows, so the copy lives here).
    init(reading bytes: [UInt8]) throws(CryptographyError) {
        guard bytes.count <= Int(Int32.max) else {
            throw CryptographyError(.invalidArgument, "input of \(bytes.count) bytes is too large for a memory BIO")
        }
        let storage = UnsafeMutableRawBufferPointer.allocate(byteCount: max(bytes.count, 1), alignment: 1)
        storage.copyBytes(from: bytes)
        guard let bio = BIO_new_mem_buf(storage.baseAddress, Int32(bytes.count)) else {
            storage.deallocate()
            throw CryptographyError(.internalFailure, "BIO_new_mem_buf failed")
        }
        self.pointer = bio
        self.storage = storage
    }

    /// An empty, growable BIO to write into.
    init() throws(CryptographyError) {
        guard let bio = BIO_new(BIO_s_mem()) else {
            throw CryptographyError(.internalFailure, "BIO_new(BIO_s_mem()) failed")
        }
        self.pointer = bio
        self.storage = nil
    }

    private let storage: UnsafeMutableRawBufferPointer?

    /// Everything written so far (BIO_get_mem_data returns a pointer the BIO keeps owning).
    var contents: [UInt8] {
        var data: UnsafeMutablePointer<CChar>?
        let length = copenssl_BIO_get_mem_data(pointer, &data)
        guard length > 0, let data else { return [] }
        return data.withMemoryRebound(to: UInt8.self, capacity: length) {
            Array(UnsafeBufferPointer(start: $0, count: length))
        }
    }

    deinit {
        BIO_free(pointer)
        storage?.deallocate()
    }
}

/// Returns the bytes of an `i2d_*`-style encoder, freeing OpenSSL's allocation (`OPENSSL_free`).
func derEncode(_ encoder: (UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>) -> Int32) -> [UInt8]? {
    var output: UnsafeMutablePointer<UInt8>?
    let length = encoder(&output)
    guard length > 0, let output else { return nil }
    defer { copenssl_free(output) }
    return Array(UnsafeBufferPointer(start: output, count: Int(length)))
}
