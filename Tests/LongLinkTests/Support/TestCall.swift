@testable import LongLink

/// A call for tests of the core's books (the pending table, the deadline index, the inbox and the
/// offline queue): method "m", no payload or metadata, not idempotent.
func testCall(_ id: UInt64, at deadline: ContinuousClock.Instant = .now) -> PendingRequest {
    PendingRequest(id: id, method: "m", payload: [], metadata: [:], deadline: deadline, idempotent: false)
}
