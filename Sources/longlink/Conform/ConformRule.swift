/// One rule of Protocol.md that `longlink conform` checks: an id (`area.name`), the sentence it
/// prints, and the check, which returns when the server kept the rule and throws a
/// ``ConformFailure`` when it broke it or the rule cannot be checked.
struct ConformRule: Sendable {
    /// A stable id such as `handshake.welcome`, for scripts and `--rule`.
    let id: String
    /// What the server must do, as one line.
    let description: String
    /// Runs the check on connections of its own.
    let check: @Sendable (ConformContext) throws(ConformFailure) -> Void

    init(
        _ id: String, _ description: String,
        check: @escaping @Sendable (ConformContext) throws(ConformFailure) -> Void
    ) {
        self.id = id
        self.description = description
        self.check = check
    }

    /// Every rule, in the order they run: the handshake first, so a server that cannot greet
    /// fails there before anything else is tried.
    static var all: [ConformRule] {
        handshake + framing + heartbeat + requests + dedupe + pushes + closing
    }
}

/// The outcome of one rule.
struct ConformResult: Sendable {
    enum Verdict: String, Sendable {
        case passed = "PASS"
        case failed = "FAIL"
        case skipped = "SKIP"
    }

    var id: String
    var description: String
    var verdict: Verdict
    /// What was seen (failed) or why not (skipped); empty on a pass.
    var detail: String

    /// Runs `rule` against the server of `context`.
    static func run(_ rule: ConformRule, in context: ConformContext) -> ConformResult {
        do throws(ConformFailure) {
            try rule.check(context)
            return ConformResult(id: rule.id, description: rule.description, verdict: .passed, detail: "")
        } catch {
            let verdict: Verdict = error.kind == .failed ? .failed : .skipped
            return ConformResult(id: rule.id, description: rule.description, verdict: verdict, detail: error.message)
        }
    }

    /// The line printed for it: `PASS id: description`, `FAIL id: description: seen`, `SKIP id: why`.
    var line: String {
        switch verdict {
        case .passed: "PASS \(id): \(description)"
        case .failed: "FAIL \(id): \(description): \(detail)"
        case .skipped: "SKIP \(id): \(detail)"
        }
    }
}
