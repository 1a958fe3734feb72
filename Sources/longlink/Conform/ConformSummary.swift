import LongLinkCLISupport
import LongLinkTransport

/// The totals of a `longlink conform` run, as its last line or as one JSON object.
struct ConformSummary {
    let results: [ConformResult]
    let passed: Int
    let failed: Int
    let skipped: Int

    init(_ results: [ConformResult]) {
        self.results = results
        passed = results.count { $0.verdict == .passed }
        failed = results.count { $0.verdict == .failed }
        skipped = results.count { $0.verdict == .skipped }
    }

    /// `N passed, M failed, K skipped`.
    var line: String {
        "\(passed) passed, \(failed) failed, \(skipped) skipped"
    }

    /// `{"endpoint":…,"rules":[{"id","result","description","detail"}…],"passed","failed","skipped"}`.
    func json(endpoint: Endpoint) -> String {
        let rules = results.map { result -> String in
            var object = JSONObject()
            object.add("id", result.id)
            object.add("result", result.verdict.rawValue)
            object.add("description", result.description)
            object.add("detail", result.detail)
            return object.text()
        }
        var object = JSONObject()
        object.add("endpoint", "\(endpoint)")
        object.addRaw("rules", "[" + rules.joined(separator: ",") + "]")
        object.add("passed", passed)
        object.add("failed", failed)
        object.add("skipped", skipped)
        return object.text()
    }
}
