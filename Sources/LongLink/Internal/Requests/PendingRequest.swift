internal import LongLinkWire
import Synchronization

/// One request from the moment its caller makes it until it is answered, fails or is given up.
///
/// The caller's thread creates it and hands it to ``ClientCore``, which keeps it in its table
/// keyed by request id together with the caller's `CheckedContinuation`. Everything mutable lives
/// in the core (on its event loop) except two flags the caller's side reads or sets without a hop:
/// ``isFinished`` (so the timeout side of the race knows the reply already won) and
/// ``isAbandoned`` (so a caller that gives up before the core has seen the request is not
/// registered afterwards).
final class PendingRequest: Sendable {
    /// The caller suspended on the outcome.
    typealias Caller = CheckedContinuation<[UInt8], any Error>

    let id: UInt64
    let method: String
    let payload: [UInt8]
    /// `payload` compressed, made by the caller when compression is on, the payload long enough and
    /// the link agreed; written instead of `payload` on a link that agreed to compression.
    let compressedPayload: [UInt8]?
    let metadata: [String: String]
    let deadline: ContinuousClock.Instant
    let idempotent: Bool
    /// Login and subscription calls: sent on `linkGeneration` before the queue opens, never queued.
    let bypassesGate: Bool
    let linkGeneration: UInt64
    /// The session the app made the call in (``ClientCore/session``), refused once another began;
    /// nil for calls bound to a link (login, subscription sends), which end with their link.
    let session: UInt64?

    private let finished = Atomic<Bool>(false)
    private let abandoned = Atomic<Bool>(false)

    init(
        id: UInt64, method: String, payload: [UInt8], compressedPayload: [UInt8]? = nil,
        metadata: [String: String] = [:],
        deadline: ContinuousClock.Instant, idempotent: Bool, bypassesGate: Bool = false, linkGeneration: UInt64 = 0,
        session: UInt64? = nil
    ) {
        self.id = id
        self.method = method
        self.payload = payload
        self.compressedPayload = compressedPayload
        self.metadata = metadata
        self.deadline = deadline
        self.idempotent = idempotent
        self.bypassesGate = bypassesGate
        self.linkGeneration = linkGeneration
        self.session = session
    }

    /// True once the core has resumed (or refused) the caller.
    var isFinished: Bool { finished.load(ordering: .acquiring) }

    /// Marks the request finished; true for the first caller only, so the caller is resumed once.
    func markFinished() -> Bool {
        !finished.exchange(true, ordering: .acquiringAndReleasing)
    }

    /// True once the caller gave up (cancelled).
    var isAbandoned: Bool { abandoned.load(ordering: .acquiring) }

    /// The caller gave up. Set before the core is told, so that a request the core has not seen
    /// yet is refused when it arrives.
    func abandon() {
        abandoned.store(true, ordering: .releasing)
    }

    /// The request as it goes on the wire at `now`: its budget is what is left before the
    /// deadline, in whole milliseconds rounded up and at least 1 (0 would mean "no timeout").
    /// With `compressed`, the compressed payload goes out when there is one; `resent` marks a copy
    /// of a request already written on an earlier link.
    func frame(at now: ContinuousClock.Instant, compressed: Bool = false, resent: Bool = false) -> Frame {
        let remaining = (deadline - now).nanoseconds(clampedTo: .max)
        let milliseconds = max(1, remaining / 1_000_000 + (remaining % 1_000_000 > 0 ? 1 : 0))
        var request = Frame.Request(
            requestID: String(id), method: method, payload: payload,
            timeoutMilliseconds: UInt32(clamping: milliseconds), metadata: metadata)
        request.resent = resent
        if compressed, let compressedPayload {
            request.payload = compressedPayload
            request.compression = PayloadCompressor.zlib
        }
        return .request(request)
    }

    static func timeoutError() -> LongLinkError {
        LongLinkError(code: .deadlineExceeded, message: "no reply within the request's timeout")
    }
}

/// Where a registered request is in its life.
enum RequestStage: Equatable, Sendable {
    /// Waiting in the offline queue for a logged-in link.
    case queued
    /// Written on the link of this generation, waiting for its reply.
    case written(UInt64)
}
