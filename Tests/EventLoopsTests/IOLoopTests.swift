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
            #expect(loop.submit { continuation.resume(returning: body()) })
        }
    }

    @Test func theCurrentLoopIsKnownOnItsThreadOnly() async throws {
        let (loop, thread) = try started()
        defer { loop.stop(); thread.join() }
        #expect(IOLoops.current == nil)
        let found = await onLoop(loop) { IOLoops.current === loop }
        #expect(found)
    }

    @Test func aWatchedPipeReportsReadinessUntilUnwatched() async throws {
        let (loop, thread) = try started()
        defer { loop.stop(); thread.join() }
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        defer { close(fds[0]); close(fds[1]) }
        let (readEnd, writeEnd) = (fds[0], fds[1])
        let seen = Flag()
        let watched = await onLoop(loop) {
            loop.watch(fd: readEnd, interest: .readable) { readiness in
                var byte: UInt8 = 0
                if readiness.contains(.readable), read(readEnd, &byte, 1) == 1 { seen.value.add(1, ordering: .relaxed) }
            }
        }
        #expect(watched)
        var byte: UInt8 = 7
        #expect(write(writeEnd, &byte, 1) == 1)
        for _ in 0..<200 where seen.value.load(ordering: .relaxed) == 0 { try await Task.sleep(for: .milliseconds(5)) }
        #expect(seen.value.load(ordering: .relaxed) == 1)
        // Watched again with no interest, then unwatched: later bytes go unseen.
        let rewatched = await onLoop(loop) {
            loop.watch(fd: readEnd, interest: []) { _ in seen.value.add(100, ordering: .relaxed) }
        }
        #expect(rewatched)
        await onLoop(loop) { loop.unwatch(fd: readEnd) }
        #expect(write(writeEnd, &byte, 1) == 1)
        try await Task.sleep(for: .milliseconds(50))
        #expect(seen.value.load(ordering: .relaxed) == 1)
    }

    @Test func timersFireUnlessCancelled() async throws {
        let (loop, thread) = try started()
        defer { loop.stop(); thread.join() }
        let fired = Flag()
        await onLoop(loop) {
            _ = loop.setTimer(after: .zero) { fired.value.add(1, ordering: .relaxed) }
            let cancelled = loop.setTimer(after: .milliseconds(10)) { fired.value.add(100, ordering: .relaxed) }
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
