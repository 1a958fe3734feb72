internal import LongLinkServer

/// What the store answers a tenant over its ``RedisDedupeBudgets``.
extension RedisDedupeStore {
    /// A claim refused by ``DedupeScripts/claimAll``: `detail` is `<scope> <ms>` (scope `tn`,
    /// `tb`, `cn` or `cb`: the tag's or the client's entries or bytes; ms until the tag's oldest
    /// entry expires).
    static func overBudget(_ detail: some Collection<UInt8>, anonymous: Bool) -> LongLinkError {
        let text = String(decoding: detail, as: UTF8.self)
        let parts = text.split(separator: " ")
        let milliseconds = parts.count == 2 ? Int64(parts[1]) ?? 1000 : 1000
        let owner = anonymous ? "connections without a login" : "this principal"
        let scope =
            switch parts.first {
            case "tn": "\(owner) holds as many stored requests as the fleet keeps"
            case "tb": "\(owner) holds as many bytes of stored replies as the fleet keeps"
            case "cn": "this client holds as many stored requests as the fleet keeps"
            default: "this client holds as many bytes of stored replies as the fleet keeps"
            }
        let retryAfter = Duration.milliseconds(milliseconds)
        return LongLinkError(
            code: .resourceExhausted,
            message: "\(scope); the request did not run. Retry after \(milliseconds) ms",
            underlying: DedupeRefusal(retryAfter: retryAfter))
    }

    /// What a copy of a request is answered when its reply was over the budgets (its entry is `N`).
    static let replyNotKept = LongLinkError(
        code: .resourceExhausted,
        message:
            "this request ran, but its reply was over the fleet's stored-reply budget and was not kept; it is not run"
            + " again",
        underlying: DedupeRefusal(retryAfter: nil, ran: true))
}
