import LongLinkCore
import LongLinkTransport
import LongLinkWire

/// What the connections of one ``BrokenPeer`` share: the de-dup entries (principal, client id,
/// request id), the runs of `count`, and each principal's unacknowledged reliable pushes.
final class BrokenPeerState: Sendable {
    /// A finished request: its method and its response.
    struct Entry: Sendable {
        var method: String
        var response: Frame.Response
    }

    private struct Store: Sendable {
        var entries: [[String]: Entry] = [:]
        var runs: [[String]: Int] = [:]
        var pushes: [String: [Frame.Push]] = [:]
        var lastSeq: UInt64 = 0
    }

    // `Locked`, not `Mutex`: ThreadSanitizer cannot see the futex hand-over of a contended `Mutex`.
    private let store = Locked(Store())

    /// The finished request `requestID` of `clientID` under `principal`, if any.
    func entry(_ principal: String, _ clientID: String, _ requestID: String) -> Entry? {
        store.withLock { $0.entries[[principal, clientID, requestID]] }
    }

    /// Keeps `response` for copies of `request`.
    func remember(_ principal: String, _ clientID: String, _ request: Frame.Request, _ response: Frame.Response) {
        store.withLock {
            $0.entries[[principal, clientID, request.requestID]] = Entry(method: request.method, response: response)
        }
    }

    /// Counts one run of (client id, request id); returns the runs so far.
    func run(_ clientID: String, _ requestID: String) -> Int {
        store.withLock { store in
            store.runs[[clientID, requestID], default: 0] += 1
            return store.runs[[clientID, requestID]]!
        }
    }

    /// Stores `count` reliable pushes on `topic` for `principal`; returns them.
    func store(_ count: Int, on topic: String, for principal: String, epoch: UInt64) -> [Frame.Push] {
        store.withLock { store in
            let pushes = (0..<count).map { index in
                store.lastSeq += 1
                return Frame.Push(seq: store.lastSeq, topic: topic, payload: Array("\(index)".utf8), epoch: epoch)
            }
            store.pushes[principal, default: []] += pushes
            return pushes
        }
    }

    /// `principal`'s pushes not acknowledged yet, in seq order.
    func unacknowledged(_ principal: String) -> [Frame.Push] {
        store.withLock { $0.pushes[principal] ?? [] }
    }

    /// Deletes `seqs` of `principal`'s pushes.
    func acknowledge(_ seqs: [UInt64], of principal: String) {
        let acknowledged = Set(seqs)
        store.withLock { $0.pushes[principal]?.removeAll { acknowledged.contains($0.seq) } }
    }
}
