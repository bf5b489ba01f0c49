import Foundation

extension Thread {
    /// Runs `body` on a new thread named `name` (what `top -H`, `ps -L` and profilers show). The name is set
    /// from the thread itself: only then does Foundation pass it on to the kernel.
    public static func start(named name: String, _ body: @escaping @Sendable () -> Void) {
        Thread {
            Thread.current.name = name
            body()
        }.start()
    }
}
