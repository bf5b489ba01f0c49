/// A value confined to one event loop that may travel between threads (into a task, to the loop's
/// thread): it is made on its loop and only ever opened there. Both are checked in every build (one
/// thread-id compare, `EventLoop.inEventLoop`), and a violation stops the process, so a data race on loop
/// state is caught where it starts instead of being assumed away.
public struct LoopBound<Value>: @unchecked Sendable {
    /// The loop the value belongs to.
    public let eventLoop: EventLoop
    @usableFromInline let wrapped: Value

    /// Binds `value`, made on `eventLoop`'s thread, to that loop. Only on that thread.
    @inlinable
    public init(_ value: Value, on eventLoop: EventLoop) {
        precondition(eventLoop.inEventLoop, "a loop-bound value was made off its event loop")
        self.eventLoop = eventLoop
        self.wrapped = value
    }

    /// Binds `value` to a loop that has not started: no thread has run it yet, so the loop's thread, once
    /// started, is the first to touch the value (its start hands it over). For what a server builds before its
    /// loops run.
    package init(_ value: Value, beforeStartOf eventLoop: EventLoop) {
        precondition(!eventLoop.hasStarted, "a value was bound before the start of a loop already running")
        self.eventLoop = eventLoop
        self.wrapped = value
    }

    /// The value. Only on `eventLoop`'s thread.
    @inlinable
    public var value: Value {
        precondition(eventLoop.inEventLoop, "a loop-bound value was used off its event loop")
        return wrapped
    }

    /// Runs `body` with the value on its loop, soon. Safe from any thread.
    public func execute(_ body: @escaping @Sendable (Value) -> Void) {
        eventLoop.execute { body(self.value) }
    }
}

extension EventLoop {
    /// Stops the process when not called on this loop's thread (debug builds and tests; free in release:
    /// inlinable, so no call remains where it is compiled out).
    @inlinable @inline(__always)
    public func assertInLoop(_ what: StaticString = "loop-confined state") {
        assert(inEventLoop, "\(what) was touched off its event loop")
    }
}
