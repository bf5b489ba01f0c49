import Foundation
import GatewayFoundation

#if canImport(Glibc)
    import Glibc
#endif

/// Log lines for one file descriptor, written by a thread of their own: a caller (an event loop above
/// all) only copies its line into a buffer under a lock and never waits for stdout or stderr, however slow
/// the reader (a blocked pipe, a full disk, a paused log shipper). The writer takes the whole buffer at
/// once, so lines go out in batches of one `write(2)`.
///
/// Bounded: past `maxBufferedBytes` lines are dropped and counted, and the count is written as its own
/// line when there is room again. `flush()` waits until everything queued is written; it runs at process
/// exit, and after a critical line.
public final class LogLineWriter: @unchecked Sendable {
    /// The process's standard error, flushed at exit.
    public static let standardError: LogLineWriter = {
        let writer = LogLineWriter(fd: 2)
        atexit { LogLineWriter.standardError.flush() }
        return writer
    }()

    /// How long the writer lets lines gather after the first of a batch woke it, unless `batchBytes` are
    /// queued sooner or `flush()` asks for them.
    static let gatherSeconds: TimeInterval = 0.010
    static let batchBytes = 256 << 10

    private let fd: Int32
    private let maxBufferedBytes: Int
    private let condition = NSCondition()
    // Guarded by `condition`.
    private var pending: [UInt8] = []
    private var spare: [UInt8] = []
    private var dropped = 0
    private var writing = false
    private var writerWaiting = false
    private var gathering = false
    private var flushRequested = false
    private var started = false

    /// A writer for `fd` holding at most `maxBufferedBytes` of lines not yet written.
    public init(fd: Int32, maxBufferedBytes: Int = 8 << 20) {
        self.fd = fd
        self.maxBufferedBytes = maxBufferedBytes
    }

    /// Queues `line` (newline included). Never blocks on the file descriptor.
    public func enqueue(_ line: String) {
        var line = line
        line.withUTF8 { enqueue(UnsafeRawBufferPointer($0)) }
    }

    /// Queues the bytes of one line (newline included).
    public func enqueue(_ line: UnsafeRawBufferPointer) {
        condition.lock()
        if pending.count + line.count > maxBufferedBytes {
            dropped += 1
        } else {
            pending.append(contentsOf: line)
        }
        if !started { start() }
        // Only the first line after the writer went idle wakes it (with any flush() waiting), and a full
        // batch ends its gathering early; the other lines join the batch without a system call.
        if writerWaiting || (gathering && pending.count >= Self.batchBytes) {
            writerWaiting = false
            gathering = false
            condition.broadcast()
        }
        condition.unlock()
    }

    /// Lines dropped so far because the buffer was full.
    public var droppedLines: Int {
        condition.lock()
        defer { condition.unlock() }
        return dropped
    }

    /// Waits until every line queued so far has been written.
    public func flush() {
        condition.lock()
        flushRequested = true
        condition.broadcast()
        while !pending.isEmpty || writing { condition.wait() }
        condition.unlock()
    }

    /// Called with `condition` held.
    private func start() {
        started = true
        Thread.start(named: "log-writer") { [self] in run() }
    }

    private func run() {
        var reportedDrops = 0
        while true {
            condition.lock()
            while pending.isEmpty && dropped == reportedDrops {
                writerWaiting = true
                condition.wait()
            }
            writerWaiting = false
            // Let the lines of the next few milliseconds gather: one write for many, and at most ~100
            // wake-ups a second, which on a shared core would otherwise cost the event loops a context
            // switch every few calls.
            gathering = true
            let gatherUntil = Date(timeIntervalSinceNow: Self.gatherSeconds)
            while gathering && !flushRequested && condition.wait(until: gatherUntil) {}
            gathering = false
            flushRequested = false
            // Swapped, not assigned: each buffer stays uniquely referenced, so neither is reallocated (an
            // assigned copy would share storage, and clearing it would allocate a new one every batch).
            var batch: [UInt8] = []
            swap(&batch, &pending)
            swap(&pending, &spare)
            let drops = dropped
            writing = true
            condition.unlock()

            if drops != reportedDrops {
                let line =
                    "{\"level\":\"warning\",\"message\":\"log lines dropped: the log reader is too slow\","
                    + "\"dropped_total\":\(drops)}\n"
                batch.append(contentsOf: line.utf8)
                reportedDrops = drops
            }
            writeAll(batch)
            batch.removeAll(keepingCapacity: batch.capacity <= 1 << 20)

            condition.lock()
            spare = batch
            writing = false
            condition.broadcast()
            condition.unlock()
        }
    }

    private func writeAll(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let written = write(fd, buffer.baseAddress! + offset, buffer.count - offset)
                if written > 0 {
                    offset += written
                } else if written < 0 && errno == EINTR {
                    continue
                } else {
                    return  // the reader is gone: nothing more can be done for these lines
                }
            }
        }
    }
}
