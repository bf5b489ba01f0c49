/// A failed check, carrying the verdict chosen where the check failed and a message a person can act on.
struct Rejection: Error, Sendable {
    let status: VerificationStatus
    let message: String

    init(_ status: VerificationStatus, _ message: String) {
        self.status = status
        self.message = message
    }
}
