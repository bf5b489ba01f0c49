extension SubscriptionEventFacts {
    /// The form a store keeps: `version(1)=1 | kind(1) | flags(1: entitled, autoRenew, inBillingRetry,
    /// familyShared, hasExpires, hasRevoked) | status(i32) | priceIncrease(i32) | renewalPrice(i64) | expiresAt(i64)
    /// | revokedAt(i64) | productId | transactionId | autoRenewProductId | count(u16) × entitlement`, integers
    /// big-endian, each string a u16 length and UTF-8.
    package var encoded: [UInt8] {
        var bytes: [UInt8] = [1, kind.rawValue]
        var flags: UInt8 = 0
        for (bit, on) in [entitled, autoRenew, inBillingRetry, familyShared, expiresAt != nil, revokedAt != nil]
            .enumerated() where on
        {
            flags |= 1 << bit
        }
        bytes.append(flags)
        Self.put(UInt64(UInt32(bitPattern: status)), 4, &bytes)
        Self.put(UInt64(UInt32(bitPattern: priceIncrease)), 4, &bytes)
        for value in [renewalPrice, expiresAt ?? 0, revokedAt ?? 0] { Self.put(UInt64(bitPattern: value), 8, &bytes) }
        for text in [productId, transactionId, autoRenewProductId] { Self.put(text, &bytes) }
        Self.put(UInt64(entitlements.count), 2, &bytes)
        for name in entitlements { Self.put(name, &bytes) }
        return bytes
    }

    /// The facts `encoded` wrote; nil for bytes it did not write (another version, truncated, trailing bytes).
    package init?(encoded bytes: [UInt8]) {
        var reader = Reader(bytes: bytes)
        guard reader.integer(1) == 1, let rawKind = reader.integer(1), let kind = Kind(rawValue: UInt8(rawKind)),
            let flags = reader.integer(1), let status = reader.integer(4), let priceIncrease = reader.integer(4),
            let renewalPrice = reader.integer(8), let expires = reader.integer(8), let revoked = reader.integer(8),
            let productId = reader.text(), let transactionId = reader.text(), let autoRenewProductId = reader.text(),
            let count = reader.integer(2)
        else { return nil }
        var entitlements: [String] = []
        for _ in 0..<count {
            guard let name = reader.text() else { return nil }
            entitlements.append(name)
        }
        guard reader.offset == bytes.count else { return nil }
        self.kind = kind
        entitled = flags & 1 != 0
        autoRenew = flags & 2 != 0
        inBillingRetry = flags & 4 != 0
        familyShared = flags & 8 != 0
        expiresAt = flags & 16 != 0 ? Int64(bitPattern: expires) : nil
        revokedAt = flags & 32 != 0 ? Int64(bitPattern: revoked) : nil
        self.status = Int32(bitPattern: UInt32(truncatingIfNeeded: status))
        self.priceIncrease = Int32(bitPattern: UInt32(truncatingIfNeeded: priceIncrease))
        self.renewalPrice = Int64(bitPattern: renewalPrice)
        self.productId = productId
        self.transactionId = transactionId
        self.autoRenewProductId = autoRenewProductId
        self.entitlements = entitlements
    }

    private static func put(_ value: UInt64, _ width: Int, _ bytes: inout [UInt8]) {
        for shift in stride(from: (width - 1) * 8, through: 0, by: -8) {
            bytes.append(UInt8(truncatingIfNeeded: value >> shift))
        }
    }

    private static func put(_ text: String, _ bytes: inout [UInt8]) {
        let utf8 = Array(text.utf8.prefix(Int(UInt16.max)))
        put(UInt64(utf8.count), 2, &bytes)
        bytes += utf8
    }

    private struct Reader {
        let bytes: [UInt8]
        var offset = 0

        mutating func integer(_ width: Int) -> UInt64? {
            guard bytes.count - offset >= width else { return nil }
            var value: UInt64 = 0
            for byte in bytes[offset..<offset + width] { value = value << 8 | UInt64(byte) }
            offset += width
            return value
        }

        mutating func text() -> String? {
            guard let length = integer(2), bytes.count - offset >= Int(length) else { return nil }
            defer { offset += Int(length) }
            return String(validating: bytes[offset..<offset + Int(length)], as: UTF8.self)
        }
    }
}
