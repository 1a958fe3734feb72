internal import LongLinkWire

/// Where the link machine sends a new request (see ``LinkStateMachine/route(bypassesGate:generation:)``).
enum RequestRoute {
    case write(generation: UInt64)
    case queue
    case refuse(LongLinkError)
}

/// The client's pending requests, keyed by request id, each with its suspended caller and where
/// it is: waiting in the offline queue, or written on a link.
///
/// A plain value, generic over the caller so that tests drive it with plain numbers. Whatever takes
/// an entry out of the book hands the entry back, and the one who took it resumes its caller; so
/// every close path below returns every request it ends, and none is resumed twice.
struct RequestBook<Caller> {
    struct Entry {
        let request: PendingRequest
        let caller: Caller
        fileprivate(set) var stage: RequestStage
        /// Queued again after the link it was written on ended: its next write is a copy
        /// (`Request.resent`), which a fleet may answer `UNKNOWN` rather than run twice.
        fileprivate(set) var resent = false
    }

    typealias Route = RequestRoute

    /// What to do with a request just admitted.
    enum AdmitAction {
        /// Write it on the link now (it is recorded as written on that generation).
        case write
        /// It waits in the offline queue.
        case queued
        /// Resume its caller with this error; it was not recorded.
        case refuse(LongLinkError)
    }

    /// What a link's end does to the requests written on it.
    struct Settlement {
        /// Removed from the book: their callers get `connectionLost` (the outcome is unknown).
        var failed: [Entry] = []
        /// How many go out again, first in the queue, in the order they were made.
        var resent = 0
    }

    private(set) var entries: [UInt64: Entry] = [:]
    private var queue = OfflineQueue()
    let queueLimit: Int
    /// The most payload bytes the queue takes from new requests (one request is always taken
    /// into an empty queue, so that a large call can still wait for the link).
    let queueByteLimit: Int
    /// Payload bytes of the requests in the queue.
    private(set) var queuedBytes = 0

    init(queueLimit: Int, queueByteLimit: Int = .max) {
        self.queueLimit = queueLimit
        self.queueByteLimit = queueByteLimit
    }

    var count: Int { entries.count }
    var isEmpty: Bool { entries.isEmpty }
    var queuedCount: Int { queue.count }
    var writtenCount: Int { entries.count - queue.count }
    /// The offline queue's slots, live or holes (for tests of its bound).
    var queueSlots: Int { queue.slotCount }

    subscript(id: UInt64) -> Entry? { entries[id] }

    /// True while `id` is pending (cheaper than reading its entry, which copies it).
    func contains(_ id: UInt64) -> Bool { entries.index(forKey: id) != nil }

    /// Records `request` and says what to do with it.
    mutating func admit(_ request: PendingRequest, caller: Caller, route: Route) -> AdmitAction {
        guard entries[request.id] == nil else {
            return .refuse(
                LongLinkError(code: .failedPrecondition, message: "request id \(request.id) is already pending"))
        }
        switch route {
        case .refuse(let error):
            return .refuse(error)
        case .write(let generation):
            entries[request.id] = Entry(request: request, caller: caller, stage: .written(generation))
            return .write
        case .queue:
            guard queue.count < queueLimit else {
                return .refuse(
                    LongLinkError(
                        code: .resourceExhausted,
                        message: "offline queue full (\(queueLimit) requests wait for the link)"))
            }
            guard queue.count == 0 || request.payload.count <= queueByteLimit - queuedBytes else {
                return .refuse(
                    LongLinkError(
                        code: .resourceExhausted,
                        message:
                            "offline queue full (\(queuedBytes) bytes wait for the link, at most \(queueByteLimit))"))
            }
            entries[request.id] = Entry(request: request, caller: caller, stage: .queued)
            queue.append(request.id)
            queuedBytes += request.payload.count
            return .queued
        }
    }

    /// Takes the request out (answered, failed, timed out, cancelled), wherever it was.
    mutating func remove(_ id: UInt64) -> Entry? {
        guard let entry = entries.removeValue(forKey: id) else { return nil }
        if entry.stage == .queued {
            queue.remove(id)
            queuedBytes -= entry.request.payload.count
        }
        return entry
    }

    /// The next queued request, now recorded as written on `generation`, and whether that write is
    /// a copy of one written on an earlier link.
    mutating func dequeue(writingOn generation: UInt64) -> (request: PendingRequest, resent: Bool)? {
        while let id = queue.popFirst() {
            guard entries[id] != nil else { continue }
            entries[id]!.stage = .written(generation)
            queuedBytes -= entries[id]!.request.payload.count
            return (entries[id]!.request, entries[id]!.resent)
        }
        return nil
    }

    /// True while some request written on `generation` waits for its reply.
    func hasWritten(on generation: UInt64) -> Bool {
        entries.values.contains { $0.stage == .written(generation) }
    }

    /// The link of `generation` ended. Its written requests go out again when `resendAllowed`
    /// and a copy cannot run twice: the request is idempotent, or the server de-duplicates it,
    /// which it does only with a window (`serverWindow`, announced in its `Welcome`) for a request
    /// made after a login (`loggedIn`: a request made before any login runs as sent, so a copy
    /// would run it again). Login requests never go again. The rest are handed back to be failed:
    /// they may have run.
    mutating func linkEnded(
        _ generation: UInt64, resendAllowed: Bool, serverWindow: Bool, loggedIn: Bool
    ) -> Settlement {
        var settlement = Settlement()
        var resend: [UInt64] = []
        let serverDeduplicates = serverWindow && loggedIn
        for (id, entry) in entries where entry.stage == .written(generation) {
            let request = entry.request
            if resendAllowed, !request.bypassesGate, serverDeduplicates || request.idempotent {
                resend.append(id)
            } else {
                settlement.failed.append(entry)
            }
        }
        for entry in settlement.failed { entries[entry.request.id] = nil }
        resend.sort()
        for id in resend {
            entries[id]!.stage = .queued
            entries[id]!.resent = true
            queuedBytes += entries[id]!.request.payload.count
        }
        queue.prepend(resend)
        settlement.resent = resend.count
        return settlement
    }

    /// Hands back every request not yet written (a shutdown has begun).
    mutating func removeUnwritten() -> [Entry] {
        let ids = queue.removeAll()
        queuedBytes = 0
        return ids.compactMap { entries.removeValue(forKey: $0) }
    }

    /// Hands back every request.
    mutating func removeAll() -> [Entry] {
        queue.removeAll()
        queuedBytes = 0
        defer { entries.removeAll() }
        return entries.values.sorted { $0.request.id < $1.request.id }
    }
}
