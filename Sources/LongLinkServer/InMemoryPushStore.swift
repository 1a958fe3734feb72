internal import LongLinkTransport
internal import LongLinkWire

/// A ``PushStore`` in process memory, bounded per principal.
///
/// Pushes survive reconnects of the client but not a restart of the server process.
public final class InMemoryPushStore: PushStore {
    /// One principal's pushes. Seqs are dense, so slot `i` holds seq `firstSeq + i`; acknowledged
    /// slots become `nil` until the prefix before `head` is compacted away.
    private struct Log {
        var nextSeq: UInt64 = 1
        var items: [StoredPush?] = []
        var head = 0
        var unacknowledged = 0

        var firstSeq: UInt64 { nextSeq - UInt64(items.count) }

        mutating func append(topic: String, payload: [UInt8]) -> StoredPush {
            let push = StoredPush(seq: nextSeq, topic: topic, payload: payload)
            nextSeq += 1
            items.append(push)
            unacknowledged += 1
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

        mutating func acknowledge(_ seqs: [UInt64]) {
            let first = firstSeq
            for seq in seqs where seq >= first && seq < nextSeq {
                let index = Int(seq - first)
                if items[index] != nil {
                    items[index] = nil
                    unacknowledged -= 1
                }
            }
            while head < items.count, items[head] == nil { head += 1 }
            if head > 256, head * 2 > items.count {
                items.removeFirst(head)
                head = 0
            }
        }
    }

    /// The most unacknowledged pushes kept per principal.
    public let capacityPerPrincipal: Int
    private let logs = Locked<[String: Log]>([:])

    /// Creates a store keeping at most `capacityPerPrincipal` unacknowledged pushes per principal.
    public init(capacityPerPrincipal: Int = 10_000) {
        self.capacityPerPrincipal = max(1, capacityPerPrincipal)
    }

    /// Stores a push under the principal's next seq; throws resource-exhausted when full.
    public func append(principal: String, topic: String, payload: [UInt8]) throws(LongLinkError) -> StoredPush {
        let capacity = capacityPerPrincipal
        let stored: StoredPush? = logs.withLock { logs in
            // Mutate in place: copying the log out of the dictionary would copy its array.
            guard (logs[principal]?.unacknowledged ?? 0) < capacity else { return nil }
            return logs[principal, default: Log()].append(topic: topic, payload: payload)
        }
        guard let stored else {
            throw LongLinkError(
                code: .resourceExhausted,
                message: "push store full for this principal (\(capacity) unacknowledged pushes)")
        }
        return stored
    }

    /// The unacknowledged pushes with `seq > after`, in order, at most `limit`.
    public func unacknowledged(principal: String, after seq: UInt64, limit: Int) -> [StoredPush] {
        logs.withLock { $0[principal]?.pending(after: seq, limit: limit) ?? [] }
    }

    /// Forgets the given pushes; unknown seqs are ignored.
    public func acknowledge(principal: String, seqs: [UInt64]) {
        logs.withLock { $0[principal]?.acknowledge(seqs) }
    }

    /// How many pushes of `principal` wait for an acknowledgement.
    public func unacknowledgedCount(principal: String) -> Int {
        logs.withLock { $0[principal]?.unacknowledged ?? 0 }
    }
}
