internal import CHiredis

/// Commands in RESP, as hiredis formats them: an array of binary-safe bulk strings.
package enum RedisCommandEncoding {
    /// `command`'s bytes on the wire; nil when hiredis cannot format it (out of memory).
    package static func encode(_ command: [String]) -> [UInt8]? {
        // One buffer holds every argument, so one set of pointers stays valid for the call; the extra byte
        // keeps its address non-nil when every argument is empty.
        var flat: [UInt8] = []
        var lengths: [Int] = []
        lengths.reserveCapacity(command.count)
        for argument in command {
            flat += argument.utf8
            lengths.append(argument.utf8.count)
        }
        flat.append(0)
        return flat.withUnsafeBufferPointer { buffer -> [UInt8]? in
            guard let base = UnsafeRawPointer(buffer.baseAddress) else { return nil }
            var offset = 0
            var argv: [UnsafePointer<CChar>?] = lengths.map { length in
                defer { offset += length }
                return (base + offset).assumingMemoryBound(to: CChar.self)
            }
            var target: UnsafeMutablePointer<CChar>?
            let length = redisFormatCommandArgv(&target, Int32(clamping: argv.count), &argv, lengths)
            guard length > 0, let target else { return nil }
            defer { redisFreeCommand(target) }
            return Array(UnsafeRawBufferPointer(start: target, count: Int(length)))
        }
    }
}
