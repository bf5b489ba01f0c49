import Foundation
import GatewayFoundation
import Testing

@Suite struct NamedThreadTests {
    /// The kernel knows the thread by its name (what `top -H` and `ps -L` read), from inside the body on.
    @Test func theBodyRunsOnAThreadTheKernelKnowsByItsName() async {
        let comm = await withCheckedContinuation { (continuation: CheckedContinuation<String, Never>) in
            Thread.start(named: "named-test") {
                let name = (try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)) ?? ""
                continuation.resume(returning: name.trimmingCharacters(in: .whitespacesAndNewlines))
            }
        }
        #expect(comm == "named-test")
    }
}
