/// What has been started so far, as the actions that stop it: `unwind` runs them last first, so a start that
/// fails halfway stops exactly what came before it, and a stop undoes the starts in reverse.
struct StopActions {
    private var actions: [() -> Void] = []

    /// Remembers how to stop what was just started.
    mutating func push(_ action: @escaping () -> Void) {
        actions.append(action)
    }

    /// Runs every action, the most recent first, and forgets them.
    mutating func unwind() {
        while let action = actions.popLast() { action() }
    }
}
