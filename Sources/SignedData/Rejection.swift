/// A failed check, carrying the verdict chosen where the check failed and a message a person can act on.
struct Rejection: Error, Sendable {
    let status: VerificationVerdict
    let message: String

    init(_ status: VerificationVerdict, _ message: String) {
        self.status = status
        self.message = message
    }
}
