internal import CLinux
import Foundation

extension Thread {
    /// Runs `body` on a new thread named `name` (what `top -H`, `ps -L` and profilers show; the kernel keeps 15
    /// bytes). The name is given to the kernel by the thread itself with `pthread_setname_np`: Foundation's
    /// `Thread.name` passes it on only when it takes the thread for the current one, which it did not always do
    /// this early (the name was sometimes missing under load).
    public static func start(named name: String, _ body: @escaping @Sendable () -> Void) {
        Thread {
            _ = pthread_setname_np(pthread_self(), String(name.utf8.prefix(15)) ?? "")
            Thread.current.name = name
            body()
        }.start()
    }
}
