internal import LongLinkCore
internal import LongLinkTransport
internal import LongLinkWire

/// A ``PushStore`` in process memory, bounded per principal in count and in bytes: the default
/// store of a ``LongLinkServer``.
///
/// Its calls answer at once (the server calls it on its event loop, without a task), and its
/// observers (the servers of this process given it) hear of each push stored for a principal they
/// hold, and of each exclusive login, as it happens; no notice is lost. ``shutdown()`` only stops
/// the reports: the pushes stay, for a server started later with the same store.
///
/// Pushes survive reconnects of the client but not a restart of the server process; each
/// principal's log has a random epoch, so after a restart its numbering starts again in a new seq
/// space and clients deliver the new pushes. A principal with nothing stored is forgotten, so
/// that principals who come and go do not accumulate; when it comes back its log has a new epoch
/// and its seqs go on above every seq the store has given anyone.
public final class InMemoryPushStore: PushStore {
    /// One principal's pushes. Seqs are dense, so slot `i` holds seq `firstSeq + i`; acknowledged
    /// slots become `nil` until the prefix before `head` is compacted away.
    private struct Log {
        /// Random per log: a restarted process, or a principal forgotten and seen again, numbers
        /// in a new seq space. Below 2^32, so it takes at most 5 bytes on the wire.
        let epoch = UInt64.random(in: 1...UInt64(UInt32.max))
        var nextSeq: UInt64
        var items: [StoredPush?] = []
        var head = 0
        var unacknowledged = 0
        /// Topic and payload bytes of the unacknowledged pushes.
        var bytes = 0

        init(nextSeq: UInt64) {
            self.nextSeq = nextSeq
        }

        static func size(topic: String, payload: [UInt8]) -> Int { topic.utf8.count + payload.count }

        var firstSeq: UInt64 { nextSeq - UInt64(items.count) }

        mutating func append(topic: String, payload: [UInt8]) -> StoredPush {
            let push = StoredPush(seq: nextSeq, topic: topic, payload: payload, epoch: epoch)
            nextSeq += 1
            items.append(push)
            unacknowledged += 1
            bytes += Self.size(topic: topic, payload: payload)
            return push
        }

        func pending(after seq: UInt64, limit: Int) -> [StoredPush] {
            var index = head
            if seq >= firstSeq {
                let offset = seq - firstSeq + 1
                index = offset >= UInt64(items.count) ? items.count : max(head, Int(offset))
            }
            var result: [StoredPush] = []
            while index < items.count, result.count < limit {
                if let push = items[index] { result.append(push) }
                index += 1
            }
            return result
        }

        mutating func acknowledge(_ seqs: [UInt64], epoch: UInt64) {
            // Acks of another seq space name other pushes of the same numbers.
            guard epoch == 0 || epoch == self.epoch else { return }
            let first = firstSeq
            for seq in seqs where seq >= first && seq < nextSeq {
                let index = Int(seq - first)
                if let push = items[index] {
                    items[index] = nil
                    unacknowledged -= 1
                    bytes -= Self.size(topic: push.topic, payload: push.payload)
                }
            }
            while head < items.count, items[head] == nil { head += 1 }
            if head > 256, head * 2 > items.count {
                items.removeFirst(head)
                head = 0
            }
        }
    }

    private struct Logs {
        /// Keyed by the name's bytes: two spellings of one name in Unicode are two principals.
        var byPrincipal: [PrincipalKey: Log] = [:]
        /// Above every seq given so far: where the log of a principal seen anew starts.
        var nextFreshSeq: UInt64 = 1
    }

    /// The most unacknowledged pushes kept per principal.
    public let capacityPerPrincipal: Int
    /// The most bytes (topics and payloads) of unacknowledged pushes kept per principal.
    public let bytesPerPrincipal: Int
    private let logs = Locked(Logs())
    private let observers = PushObservers()

    /// Creates a store keeping at most `capacityPerPrincipal` unacknowledged pushes and
    /// `bytesPerPrincipal` bytes of their topics and payloads per principal (16 MiB by default).
    public init(capacityPerPrincipal: Int = 10_000, bytesPerPrincipal: Int = 16 << 20) {
        self.capacityPerPrincipal = max(1, capacityPerPrincipal)
        self.bytesPerPrincipal = max(1, bytesPerPrincipal)
    }

    /// How many principals the store holds pushes for.
    var principalCount: Int { logs.withLock { $0.byPrincipal.count } }

    /// Stores a push under the principal's next seq; throws resource-exhausted when the principal
    /// holds ``capacityPerPrincipal`` pushes or the push would take it past ``bytesPerPrincipal``.
    public func append(_ push: PushAppend) throws(LongLinkError) -> StoredPush {
        let capacity = capacityPerPrincipal
        let byteCapacity = bytesPerPrincipal
        let (topic, payload) = (push.topic, push.payload)
        let size = Log.size(topic: topic, payload: payload)
        let principal = PrincipalKey(push.principal)
        let stored: StoredPush? = logs.withLock { logs in
            // Only the two counts: a copy of the log kept alive here would make the append below
            // copy its whole array.
            let (held, heldBytes) = logs.byPrincipal[principal].map { ($0.unacknowledged, $0.bytes) } ?? (0, 0)
            guard held < capacity, size <= byteCapacity - heldBytes else { return nil }
            // Mutate in place: copying the log out of the dictionary would copy its array.
            let push = logs.byPrincipal[principal, default: Log(nextSeq: logs.nextFreshSeq)].append(
                topic: topic, payload: payload)
            logs.nextFreshSeq = max(logs.nextFreshSeq, push.seq + 1)
            return push
        }
        guard let stored else {
            throw LongLinkError(
                code: .resourceExhausted,
                message:
                    "push store full for this principal (at most \(capacity) unacknowledged pushes and \(byteCapacity) bytes)"
            )
        }
        observers.pushStored(principal: principal.name)
        return stored
    }

    /// The unacknowledged pushes with `seq > after`, in order, at most `limit`.
    public func unacknowledged(_ read: PushRead) -> [StoredPush] {
        logs.withLock {
            $0.byPrincipal[PrincipalKey(read.principal)]?.pending(after: read.after, limit: read.limit) ?? []
        }
    }

    /// Forgets the given pushes if the principal's log is still numbered in their epoch (0:
    /// whatever its epoch); unknown seqs are ignored. A principal left with nothing stored is
    /// forgotten.
    public func acknowledge(_ acks: AcknowledgedPushes) {
        let principal = PrincipalKey(acks.principal)
        return logs.withLock { logs in
            logs.byPrincipal[principal]?.acknowledge(acks.seqs, epoch: acks.epoch)
            if logs.byPrincipal[principal]?.unacknowledged == 0 { logs.byPrincipal[principal] = nil }
        }
    }

    /// How many pushes of `principal` wait for an acknowledgement.
    public func unacknowledgedCount(principal: String) -> Int {
        logs.withLock { $0.byPrincipal[PrincipalKey(principal)]?.unacknowledged ?? 0 }
    }

    // MARK: Observation

    /// Reports to `observer` every push stored from now on for a principal it watches, and every
    /// exclusive login announced.
    public func startObserving(_ observer: PushStoreObserver) async {
        observers.add(observer)
    }

    /// Tells every observer, the announcing server's too, that the announced client logged in as
    /// its principal with an exclusive binding.
    public func announceSession(_ session: SessionAnnouncement) async {
        observers.sessionStarted(principal: session.principal, clientID: session.clientID)
    }

    /// Stops reporting to the observers; the pushes stay, for a server started later with this store.
    public func shutdown() async {
        observers.removeAll()
    }
}
