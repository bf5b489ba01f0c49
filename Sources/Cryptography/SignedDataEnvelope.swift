internal import COpenSSL

/// The content of a PKCS#7 / CMS SignedData envelope (RFC 5652), as StoreKit 1 app receipts are: parsed with
/// OpenSSL's CMS parser and returned unverified (the receipt utility only needs an id to ask Apple about).
package enum SignedDataEnvelope {
    /// The encapsulated content of the DER SignedData `der`. Throws `.invalidArgument` for bytes that are not one
    /// DER CMS ContentInfo of type SignedData with embedded content (trailing bytes included).
    package static func content(ofDER der: [UInt8]) throws(CryptographyError) -> [UInt8] {
        let content: [UInt8]? = der.withUnsafeBufferPointer { buffer in
            var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
            // d2i_CMS_ContentInfo returns a new object we own: freed below on every path.
            guard let cms = d2i_CMS_ContentInfo(nil, &cursor, buffer.count) else { return nil }
            defer { CMS_ContentInfo_free(cms) }
            guard cursor == buffer.baseAddress.map({ $0 + buffer.count }),
                OBJ_obj2nid(CMS_get0_type(cms)) == NID_pkcs7_signed,
                // CMS_get0_content borrows: the octet string belongs to `cms`, so it is copied out here.
                let slot = CMS_get0_content(cms), let octets = slot.pointee
            else { return nil }
            let length = Int(ASN1_STRING_length(octets))
            guard length >= 0, let bytes = ASN1_STRING_get0_data(octets) else { return [] }
            return Array(UnsafeBufferPointer(start: bytes, count: length))
        }
        guard let content else {
            throw CryptographyError(.invalidArgument, "not a DER PKCS#7 SignedData with content (\(der.count) bytes)")
        }
        return content
    }
}
