import LongLinkTransport

/// A fault or network condition that a ``FaultProxy`` injects, for all its connections or for one
/// ``ProxiedConnection``.
///
/// Faults are values, so they can be applied at once (``FaultTarget/apply(_:)``) or scripted in a
/// ``FaultSchedule``. Conditions (black hole, latency, throttle, split, merge, paused reading, a NAT's idle timeout)
/// stay in effect until changed; a fault made with a `for:` duration is undone by itself after that duration (see ``reversal``).
///
/// ```swift
/// await proxy.apply(.latency(.milliseconds(80), jitter: .milliseconds(20)))
/// await proxy.apply(.blackHole(.both, for: .seconds(3)))
/// await proxy.apply(.cut)
/// ```
public struct NetworkFault: Sendable, Hashable, CustomStringConvertible {
    enum Kind: Sendable, Hashable {
        case cut
        case reset
        case blackHole(FaultProxy.Direction)
        case restoreForwarding(FaultProxy.Direction)
        case latency(Duration, jitter: Duration, FaultProxy.Direction)
        case throttle(bytesPerSecond: Int?, FaultProxy.Direction)
        case splitWrites(chunkSize: Int?, FaultProxy.Direction)
        case mergeWrites(window: Duration?, FaultProxy.Direction)
        case pauseReading(FaultProxy.Direction)
        case resumeReading(FaultProxy.Direction)
        case refuseConnections(reset: Bool)
        case natIdleTimeout(Duration?, ForgottenMapping)
        case acceptConnections
        case clear
    }

    let kind: Kind

    /// How long the fault lasts before its ``reversal`` is applied; nil when it lasts until changed.
    public let duration: Duration?

    init(_ kind: Kind, for duration: Duration? = nil) {
        self.kind = kind
        self.duration = duration.map { max(.zero, $0) }
    }

    // MARK: Ending connections

    /// Closes both sides of every affected connection with a FIN (`close(.immediately)`): bytes the proxy still
    /// holds are dropped, both peers see the stream end. (The kernel sends a reset instead on a side whose
    /// received bytes the proxy had not read yet, for example while its reading was paused.)
    public static var cut: NetworkFault { NetworkFault(.cut) }

    /// Resets both sides of every affected connection (`SO_LINGER` 0): both peers see `connectionReset`.
    public static var reset: NetworkFault { NetworkFault(.reset) }

    // MARK: Conditions

    /// Forwards nothing in `direction` while the sockets stay open: a half-open link. Bytes that arrive meanwhile
    /// are read and discarded (counted as discarded), and bytes the proxy held but had not forwarded are dropped
    /// too; nothing is delivered later. A close or reset from a peer is held back as well and passed on only when
    /// forwarding is restored.
    public static func blackHole(_ direction: FaultProxy.Direction = .both, for duration: Duration? = nil)
        -> NetworkFault
    {
        NetworkFault(.blackHole(direction), for: duration)
    }

    /// Ends a ``blackHole(_:for:)`` in `direction`: bytes that arrive from now on are forwarded again.
    public static func restoreForwarding(_ direction: FaultProxy.Direction = .both) -> NetworkFault {
        NetworkFault(.restoreForwarding(direction))
    }

    /// Delays every chunk read in `direction` by `latency`, plus or minus a uniformly random `jitter`, never
    /// reordering bytes (a chunk is never released before the one read ahead of it). `.zero` turns it off.
    public static func latency(
        _ latency: Duration, jitter: Duration = .zero, _ direction: FaultProxy.Direction = .both,
        for duration: Duration? = nil
    ) -> NetworkFault {
        NetworkFault(.latency(max(.zero, latency), jitter: max(.zero, jitter), direction), for: duration)
    }

    /// Limits `direction` to `bytesPerSecond` (at least 1), sending at most 10 ms worth of bytes at a time; nil
    /// turns the limit off.
    public static func throttle(
        bytesPerSecond: Int?, _ direction: FaultProxy.Direction = .both, for duration: Duration? = nil
    ) -> NetworkFault {
        NetworkFault(.throttle(bytesPerSecond: bytesPerSecond.map { max(1, $0) }, direction), for: duration)
    }

    /// Writes `direction` in chunks of at most `chunkSize` bytes (at least 1), each its own write and flush, one
    /// chunk per event-loop iteration, so the receiver sees many small reads; nil turns it off.
    public static func splitWrites(
        into chunkSize: Int?, _ direction: FaultProxy.Direction = .both, for duration: Duration? = nil
    ) -> NetworkFault {
        NetworkFault(.splitWrites(chunkSize: chunkSize.map { max(1, $0) }, direction), for: duration)
    }

    /// Holds bytes in `direction` for `window` after the first of them is ready, then sends everything ready in
    /// one write (writes are merged); nil turns it off.
    public static func mergeWrites(
        window: Duration?, _ direction: FaultProxy.Direction = .both, for duration: Duration? = nil
    ) -> NetworkFault {
        NetworkFault(.mergeWrites(window: window.map { max(.zero, $0) }, direction), for: duration)
    }

    /// Stops reading from the sending side of `direction` (the client for upstream, the server for downstream),
    /// so its kernel buffers fill up and its writer eventually blocks: a stalled peer.
    public static func pauseReading(_ direction: FaultProxy.Direction = .both, for duration: Duration? = nil)
        -> NetworkFault
    {
        NetworkFault(.pauseReading(direction), for: duration)
    }

    /// Ends ``pauseReading(_:for:)`` in `direction`.
    public static func resumeReading(_ direction: FaultProxy.Direction = .both) -> NetworkFault {
        NetworkFault(.resumeReading(direction))
    }

    // MARK: A NAT

    /// What a NAT does with packets that arrive for a mapping it has forgotten (see
    /// ``natIdleTimeout(_:onForgotten:for:)``).
    public struct ForgottenMapping: Sendable, Hashable, CustomStringConvertible {
        private enum Wrapped: Sendable, Hashable {
            case drop
            case reset
        }

        private let wrapped: Wrapped

        /// Drops them silently, as most NATs do: both peers keep a half-open connection and see nothing.
        public static let drop = ForgottenMapping(wrapped: .drop)
        /// Answers each with a reset, as some NATs do: a peer that sends sees `connectionReset`.
        public static let reset = ForgottenMapping(wrapped: .reset)

        var resets: Bool { wrapped == .reset }

        /// `drop` or `reset`.
        public var description: String {
            resets ? "reset" : "drop"
        }
    }

    /// A NAT between client and server that forgets a connection's mapping after `timeout` without traffic in
    /// either direction (bytes from either peer reaching the proxy keep it alive; the idle time counts from the
    /// last of them, or from when the fault was applied if that is later). nil turns the NAT off.
    ///
    /// A forgotten mapping stays forgotten for the life of that connection (turning the NAT off or ``clear``
    /// does not bring it back): nothing is forwarded any more, closes included, and bytes that arrive from
    /// either peer are discarded (``FaultProxy/Statistics/natMappingsForgotten`` counts the forgetting). With
    /// `.drop` the peers see nothing at all, the half-open link a real NAT leaves behind, which only a
    /// heartbeat notices; with `.reset` each peer is reset when it next sends. New connections get new mappings.
    public static func natIdleTimeout(
        _ timeout: Duration?, onForgotten: ForgottenMapping = .drop, for duration: Duration? = nil
    ) -> NetworkFault {
        NetworkFault(.natIdleTimeout(timeout.map { max(.zero, $0) }, onForgotten), for: duration)
    }

    // MARK: New connections

    /// Accepts new connections and closes them at once (with a FIN, or a reset when `reset` is true), so clients
    /// connect and are dropped before any byte. Connections already proxied are not affected. Ignored by a single
    /// ``ProxiedConnection``.
    public static func refuseConnections(reset: Bool = false, for duration: Duration? = nil) -> NetworkFault {
        NetworkFault(.refuseConnections(reset: reset), for: duration)
    }

    /// Ends ``refuseConnections(reset:for:)``: new connections are proxied again.
    public static var acceptConnections: NetworkFault { NetworkFault(.acceptConnections) }

    /// Turns every condition off in both directions (forwarding restored, no latency, throttle, split or merge,
    /// reading resumed, no NAT) and accepts new connections again.
    public static var clear: NetworkFault { NetworkFault(.clear) }

    // MARK: Properties

    /// The fault that undoes this one (for example ``restoreForwarding(_:)`` for a black hole), applied after
    /// ``duration``; nil for faults that cannot be undone (a cut, a reset) or that are themselves an undo.
    public var reversal: NetworkFault? {
        switch kind {
        case .blackHole(let direction): .restoreForwarding(direction)
        case .latency(_, _, let direction): .latency(.zero, direction)
        case .throttle(_, let direction): .throttle(bytesPerSecond: nil, direction)
        case .splitWrites(_, let direction): .splitWrites(into: nil, direction)
        case .mergeWrites(_, let direction): .mergeWrites(window: nil, direction)
        case .pauseReading(let direction): .resumeReading(direction)
        case .refuseConnections: .acceptConnections
        case .natIdleTimeout(_, let forgotten): .natIdleTimeout(nil, onForgotten: forgotten)
        case .cut, .reset, .restoreForwarding, .resumeReading, .acceptConnections, .clear: nil
        }
    }

    /// The same fault without a duration: applied, it lasts until changed.
    public var withoutDuration: NetworkFault {
        NetworkFault(kind)
    }

    /// A readable form, for example `blackHole(both) for 3.0 seconds`.
    public var description: String {
        let text =
            switch kind {
            case .cut: "cut"
            case .reset: "reset"
            case .blackHole(let direction): "blackHole(\(direction))"
            case .restoreForwarding(let direction): "restoreForwarding(\(direction))"
            case .latency(let latency, let jitter, let direction):
                jitter == .zero ? "latency(\(latency), \(direction))" : "latency(\(latency) ± \(jitter), \(direction))"
            case .throttle(let rate, let direction):
                "throttle(\(rate.map { "\($0) B/s" } ?? "off"), \(direction))"
            case .splitWrites(let size, let direction):
                "splitWrites(\(size.map { "\($0) B" } ?? "off"), \(direction))"
            case .mergeWrites(let window, let direction):
                "mergeWrites(\(window.map { "\($0)" } ?? "off"), \(direction))"
            case .pauseReading(let direction): "pauseReading(\(direction))"
            case .resumeReading(let direction): "resumeReading(\(direction))"
            case .refuseConnections(let reset): reset ? "refuseConnections(reset)" : "refuseConnections"
            case .acceptConnections: "acceptConnections"
            case .natIdleTimeout(let timeout, let forgotten):
                "natIdleTimeout(\(timeout.map { "\($0)" } ?? "off"), \(forgotten))"
            case .clear: "clear"
            }
        guard let duration else {
            return text
        }
        return "\(text) for \(duration)"
    }
}
