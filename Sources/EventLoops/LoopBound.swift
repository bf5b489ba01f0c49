/// A value confined to one event loop that may travel between threads (into a task, to the loop's
/// thread): it is only ever opened on its own loop, and opening it anywhere else stops the process, so
/// a data race on loop state is caught where it starts instead of being assumed away.
public struct LoopBound<Value>: @unchecked Sendable {
    /// The loop the value belongs to.
    public let eventLoop: EventLoop
    private let wrapped: Value

    /// Binds `value` to `eventLoop`. Binding may happen off the loop (before it runs); using may not.
    public init(_ value: Value, on eventLoop: EventLoop) {
        self.eventLoop = eventLoop
        self.wrapped = value
    }

    /// The value. Only on `eventLoop`'s thread.
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
    /// Stops the process when not called on this loop's thread (debug builds and tests; free in release).
    @inline(__always)
    package func assertInLoop(_ what: StaticString = "loop-confined state") {
        assert(inEventLoop, "\(what) was touched off its event loop")
    }
}
