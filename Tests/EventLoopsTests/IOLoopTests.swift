import GatewayFoundation
import Synchronization
import Testing

@testable import EventLoops

#if canImport(Glibc)
    import Glibc
#endif

/// The loop as other modules see it (`IOLoop`): the current loop of its thread, descriptors watched, timers,
/// values kept per loop and let go when it stops.
@Suite struct IOLoopTests {
    private final class Flag: Sendable {
        let value = Atomic<Int>(0)
    }

    private final class Kept {
        let released: Flag
        init(_ released: Flag) { self.released = released }
        deinit { released.value.add(1, ordering: .relaxed) }
    }

    private func started() throws -> (EventLoop, LoopThread) {
        let loop = try EventLoop(index: 0)
        return (loop, spawnThread(name: "io-loop-test") { loop.run() })
    }

    private func onLoop<T: Sendable>(_ loop: EventLoop, _ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            #expect(loop.execute { continuation.resume(returning: body()) })
        }
    }

    @Test func theCurrentLoopIsKnownOnItsThreadOnly() async throws {
        let (loop, thread) = try started()
        defer { loop.stop(); thread.join() }
        #expect(IOLoops.current == nil)
        let found = await onLoop(loop) { IOLoops.current === loop }
        #expect(found)
    }

    /// A pipe whose ends close with the test.
    private final class Pipe: Sendable {
        let readEnd: Int32
        let writeEnd: Int32

        init() {
            var fds: [Int32] = [0, 0]
            #expect(pipe(&fds) == 0)
            (readEnd, writeEnd) = (fds[0], fds[1])
        }

        func send() {
            var byte: UInt8 = 7
            #expect(write(writeEnd, &byte, 1) == 1)
        }

        /// Reads one byte if one is there (the read end is not drained otherwise: level-triggered).
        func take() -> Bool {
            var byte: UInt8 = 0
            return read(readEnd, &byte, 1) == 1
        }

        func close() {
            Glibc.close(readEnd)
            Glibc.close(writeEnd)
        }
    }

    private final class Owner: Sendable {}

    private func waitFor(_ flag: Flag, _ value: Int) async throws {
        for _ in 0..<400 where flag.value.load(ordering: .relaxed) != value {
            try await Task.sleep(for: .milliseconds(5))
        }
    }

    @Test func aWatchedPipeReportsReadinessUntilUnwatched() async throws {
        let (loop, thread) = try started()
        defer { loop.stop(); thread.join() }
        let pipe = Pipe()
        defer { pipe.close() }
        let owner = Owner()
        let seen = Flag()
        let watched = await onLoop(loop) {
            loop.watch(fd: pipe.readEnd, interest: .readable, owner: owner) { readiness in
                if readiness.contains(.readable), pipe.take() { seen.value.add(1, ordering: .relaxed) }
            }
        }
        #expect(watched)
        pipe.send()
        try await waitFor(seen, 1)
        #expect(seen.value.load(ordering: .relaxed) == 1)

        // Watched again with no interest and another handler: a byte sent now goes unseen...
        let quiet = await onLoop(loop) {
            loop.watch(fd: pipe.readEnd, interest: [], owner: owner) { _ in seen.value.add(100, ordering: .relaxed) }
        }
        #expect(quiet)
        pipe.send()
        try await Task.sleep(for: .milliseconds(50))
        #expect(seen.value.load(ordering: .relaxed) == 1)
        // ...until the interest comes back, when the newest handler sees it.
        _ = await onLoop(loop) {
            loop.watch(fd: pipe.readEnd, interest: .readable, owner: owner) { _ in
                if pipe.take() { seen.value.add(10, ordering: .relaxed) }
            }
        }
        try await waitFor(seen, 11)
        #expect(seen.value.load(ordering: .relaxed) == 11)

        // Another owner cannot end the watch; its owner can.
        await onLoop(loop) { loop.unwatch(fd: pipe.readEnd, owner: Owner()) }
        pipe.send()
        try await waitFor(seen, 21)
        #expect(seen.value.load(ordering: .relaxed) == 21)
        await onLoop(loop) { loop.unwatch(fd: pipe.readEnd, owner: owner) }
        pipe.send()
        try await Task.sleep(for: .milliseconds(50))
        #expect(seen.value.load(ordering: .relaxed) == 21)
    }

    @Test func aDescriptorClosedWithoutUnwatchCanBeWatchedUnderItsNumberAgain() async throws {
        let (loop, thread) = try started()
        defer { loop.stop(); thread.join() }
        let owner = Owner()
        let first = Pipe()
        let number = first.readEnd
        #expect(await onLoop(loop) { loop.watch(fd: number, interest: .readable, owner: owner) { _ in } })
        first.close()  // the kernel drops it from the epoll set; the loop still has its watch
        let second = Pipe()
        defer { second.close() }
        // The lowest free number is reused: `number`, unless a test running beside this one took it first (then
        // the watch below is simply a new one).
        let seen = Flag()
        let watched = await onLoop(loop) {
            loop.watch(fd: second.readEnd, interest: .readable, owner: owner) { _ in
                if second.take() { seen.value.add(1, ordering: .relaxed) }
            }
        }
        #expect(watched)
        second.send()
        try await waitFor(seen, 1)
        #expect(seen.value.load(ordering: .relaxed) == 1)
        await onLoop(loop) { loop.unwatch(fd: second.readEnd, owner: owner) }
    }

    @Test func timersFireUnlessCancelled() async throws {
        let (loop, thread) = try started()
        defer { loop.stop(); thread.join() }
        let fired = Flag()
        await onLoop(loop) {
            _ = loop.scheduleTimer(after: .zero) { fired.value.add(1, ordering: .relaxed) }
            let cancelled = loop.scheduleTimer(after: .milliseconds(10)) { fired.value.add(100, ordering: .relaxed) }
            loop.cancelTimer(cancelled)
        }
        try await Task.sleep(for: .milliseconds(60))
        #expect(fired.value.load(ordering: .relaxed) == 1)
    }

    @Test func loopLocalValuesAreKeptUntilTheLoopStops() async throws {
        let (loop, thread) = try started()
        let released = Flag()
        final class Key {}
        let key = ObjectIdentifier(Key.self)
        let kept = await onLoop(loop) { () -> Bool in
            loop.setLoopLocal(key, Kept(released))
            return loop.loopLocal(key) is Kept
        }
        #expect(kept)
        #expect(released.value.load(ordering: .relaxed) == 0)
        loop.stop()
        thread.join()
        #expect(released.value.load(ordering: .relaxed) == 1)
    }
}
