internal import LongLinkWire

/// The routing of one command through a cluster, as a value: where to send it, and what each reply
/// means (deliver it, follow a redirection, wait and retry, fail). The client actor performs the
/// I/O; this decides, so every decision is tested without sockets.
///
/// A command is retried only on replies that say it did not run (`MOVED`, `ASK`, `TRYAGAIN`,
/// `CLUSTERDOWN`), within its deadline; once the deadline is near it fails `unavailable`. After
/// ``maximumRedirections`` redirections in a row it waits and reloads the map before going on.
struct ClusterRoute: Sendable {
    /// What the client does next.
    enum Action: Sendable {
        /// The reply is the command's answer (a value or an error reply for the caller).
        case deliver
        /// The slot lives at `address` now: record it in the map (or reload the map when it names
        /// a node the map does not know), then send again, there.
        case moved(slot: Int, to: ClusterTopology.Address)
        /// Send again: to the `ASK` target, once, after `ASKING`, leaving the map as it is.
        case resend
        /// Wait, reload the topology, and send again.
        case refreshAfter(Duration)
        /// Give up with this error.
        case fail(LongLinkError)
    }

    /// Where the command goes next.
    enum Target: Equatable, Sendable {
        /// To the node at this address, after `ASKING` when `asking`.
        case node(ClusterTopology.Address, asking: Bool)
        /// Nowhere: the map has no primary for the slot.
        case unserved
    }

    /// More redirections in a row than this mean the cluster's nodes disagree (for now): the
    /// command waits its backoff and the map is reloaded.
    static let maximumRedirections = 5

    /// The command's slot; nil for a command without keys (sent to any primary).
    let slot: Int?
    let name: String
    let deadline: ContinuousClock.Instant
    private let backoff: ReconnectBackoff
    private var redirections = 0
    private var waits = 0
    /// Where the last reply redirected the command, and whether it said `ASK`.
    private var redirection: (address: ClusterTopology.Address, asking: Bool)?

    /// Throws `invalidArgument` when the command's keys lie in different slots: no single node
    /// can run it.
    init(
        _ command: RedisCommand, deadline: ContinuousClock.Instant,
        backoff: ReconnectBackoff = ReconnectBackoff(initial: .milliseconds(10), maximum: .milliseconds(200))
    ) throws(LongLinkError) {
        self.slot = try Self.slot(of: command)
        self.name = command.name
        self.deadline = deadline
        self.backoff = backoff
    }

    /// The slot all of the command's keys hash to; nil without keys.
    static func slot(of command: RedisCommand) throws(LongLinkError) -> Int? {
        var slot: Int?
        for key in command.arguments[command.keys] {
            let keySlot = ClusterSlot.of(key)
            if let slot, slot != keySlot {
                throw LongLinkError(
                    code: .invalidArgument,
                    message: "the keys of \(command.name) lie in different cluster slots (\(slot) and \(keySlot))")
            }
            slot = keySlot
        }
        return slot
    }

    /// Where to send the command with the map `topology`.
    func target(in topology: ClusterTopology) -> Target {
        if let redirection { return .node(redirection.address, asking: redirection.asking) }
        guard let slot else { return topology.primaries.first.map { .node($0, asking: false) } ?? .unserved }
        return topology.primary(forSlot: slot).map { .node($0.address, asking: false) } ?? .unserved
    }

    /// The map has no primary for the slot: wait and reload it, or fail when the deadline is near.
    mutating func unserved(at now: ContinuousClock.Instant) -> Action {
        wait(at: now, because: "no primary serves slot \(slot.map(String.init) ?? "-")", cause: nil)
    }

    /// What `reply`, from the node at `address`, means.
    mutating func received(
        _ reply: RESPValue, from address: ClusterTopology.Address, at now: ContinuousClock.Instant
    ) -> Action {
        redirection = nil
        guard let text = reply.errorText else { return .deliver }
        let words = text.split(separator: UInt8(ascii: " "), maxSplits: 2).map { String(decoding: $0, as: UTF8.self) }
        switch words.first {
        case "MOVED", "ASK":
            guard words.count == 3, let slot = Int(words[1]), (0..<ClusterSlot.count).contains(slot),
                let target = Self.address(words[2], default: address.host)
            else { return .fail(.redisReply(text, command: name)) }
            redirections += 1
            guard redirections <= Self.maximumRedirections else {
                // The nodes disagree for now (a slot being moved, its new owner not yet told):
                // wait and reload the map, within the deadline.
                redirections = 0
                return wait(
                    at: now, because: "\(name) was redirected more than \(Self.maximumRedirections) times in a row",
                    cause: reply.checkedError(name))
            }
            // Sent to the named node whatever the map says: the map may lag until it is reloaded.
            redirection = (target, words[0] == "ASK")
            return words[0] == "ASK" ? .resend : .moved(slot: slot, to: target)
        case "TRYAGAIN", "CLUSTERDOWN":
            return wait(at: now, because: "Redis answered \(name) with \(words[0])", cause: reply.checkedError(name))
        default:
            return .deliver
        }
    }

    private mutating func wait(at now: ContinuousClock.Instant, because reason: String, cause: LongLinkError?) -> Action
    {
        waits += 1
        let delay = backoff.delay(afterFailures: waits)
        guard now + delay < deadline else {
            return .fail(.redisUnavailable("\(reason) until the command's deadline", cause: cause))
        }
        return .refreshAfter(delay)
    }

    /// `host:port` of a redirection; an empty host means the node that answered (the spec's
    /// "unknown endpoint"). IPv6 hosts keep their colons: the port follows the last one.
    static func address(_ text: String, default host: String) -> ClusterTopology.Address? {
        guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]),
            (1...65535).contains(port)
        else { return nil }
        let named = String(text[..<colon])
        return ClusterTopology.Address(host: named.isEmpty ? host : named, port: port)
    }
}

extension RESPValue {
    /// The error reply as a typed error; nil for any other value.
    func checkedError(_ command: String) -> LongLinkError? {
        errorText.map { LongLinkError.redisReply($0, command: command) }
    }
}
