/// Why a rule did not pass: it failed (the server broke the rule, with what was seen), or it was
/// skipped (the server lacks what the rule needs, such as a method of the conformance contract).
struct ConformFailure: Error {
    /// Failed or skipped.
    enum Kind: Sendable {
        case failed
        case skipped
    }

    var kind: Kind
    /// What was seen (failed) or why the rule could not run (skipped).
    var message: String

    /// A failure: the server broke the rule.
    init(_ message: String) {
        self.kind = .failed
        self.message = message
    }

    /// A skip: the rule could not be checked against this server.
    static func skip(_ why: String) -> ConformFailure {
        var failure = ConformFailure(why)
        failure.kind = .skipped
        return failure
    }
}
