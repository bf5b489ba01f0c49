import GatewayFoundation

/// The parsed headers of recent JWS, keyed by the header's exact base64url text, so a warm verification
/// neither decodes nor parses the ~4 KB `x5c` header again, nor hashes its chain for the chain cache.
///
/// Apple signs every payload of a period with the same leaf, so nearly every JWS a gateway sees carries one
/// of a handful of headers. Direct-mapped: a slot per fingerprint of the text, each behind its own `Lock`;
/// a hit compares the whole text byte for byte, so the fingerprint only picks the slot (a collision, chosen
/// or not, costs a miss, never a wrong header). Only headers that parsed are kept (an `alg` of ES256 and
/// three `x5c` strings); what is wrong with their certificate texts is part of what is kept.
final class JWSHeaderMemo: Sendable {
    /// Headers longer than this are parsed every time (Apple's are about 4.4 KB).
    static let maximumTextLength = 16 << 10

    private final class Slot: Sendable {
        let header = Lock<JWSHeader?>(nil)
    }
    private let slots: [Slot]

    /// A memo of `slotCount` slots (0 keeps nothing).
    init(slotCount: Int = 64) {
        slots = (0..<max(0, slotCount)).map { _ in Slot() }
    }

    /// The parsed header whose text is exactly `text`, if it is kept.
    func header(for text: UnsafeBufferPointer<UInt8>) -> JWSHeader? {
        guard !slots.isEmpty, text.count <= Self.maximumTextLength else { return nil }
        return slots[slotIndex(text)].header.withLock { kept in
            guard let kept, kept.text.count == text.count,
                kept.text.withUnsafeBufferPointer({ memcmp($0.baseAddress!, text.baseAddress!, text.count) == 0 })
            else { return nil }
            return kept
        }
    }

    /// Keeps `header`, replacing whatever its slot held.
    func keep(_ header: JWSHeader) {
        guard !slots.isEmpty, header.text.count <= Self.maximumTextLength, !header.text.isEmpty else { return }
        let index = header.text.withUnsafeBufferPointer { slotIndex($0) }
        slots[index].header.withLock { $0 = header }
    }

    /// A `WordHash` fingerprint of the length and of at most 65 words of `text`, evenly spaced, the last one
    /// included (a hit is confirmed by comparing the whole texts).
    private func slotIndex(_ text: UnsafeBufferPointer<UInt8>) -> Int {
        let raw = UnsafeRawBufferPointer(text)
        var hash = WordHash(length: raw.count)
        let words = raw.count / 8
        if words == 0 {
            for byte in raw { hash.mix(UInt64(byte)) }
        } else {
            let step = max(1, words / 64)
            for word in stride(from: 0, to: words, by: step) {
                hash.mix(raw.loadUnaligned(fromByteOffset: word * 8, as: UInt64.self))
            }
            hash.mix(raw.loadUnaligned(fromByteOffset: raw.count - 8, as: UInt64.self))
        }
        return Int(truncatingIfNeeded: hash.value % UInt64(slots.count))
    }
}

#if canImport(Glibc)
    import Glibc
#endif
