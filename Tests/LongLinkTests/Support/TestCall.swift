@testable import LongLink

/// A request for tests of the core's books (the request book, the link state machine): method
/// "m", no payload or metadata. `login` makes it a login request on that link generation.
func testCall(
    _ id: UInt64, idempotent: Bool = false, login: UInt64? = nil, at deadline: ContinuousClock.Instant = .now
) -> PendingRequest {
    PendingRequest(
        id: id, method: "m", payload: [], deadline: deadline, idempotent: idempotent, bypassesGate: login != nil,
        linkGeneration: login ?? 0)
}
