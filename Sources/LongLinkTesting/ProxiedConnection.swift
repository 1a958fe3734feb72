import LongLinkTransport

/// One client connection through a ``FaultProxy`` together with the proxy's connection to the upstream server.
///
/// Get them from ``FaultProxy/connections``. Faults applied here affect this pair only; faults applied to the
/// proxy affect every pair (and become the defaults of new ones). A handle stays valid after the pair closed;
/// faults applied to a closed pair are ignored.
public struct ProxiedConnection: FaultTarget, Hashable, Identifiable, CustomStringConvertible {
    /// Counters of one proxied pair.
    public struct Statistics: Sendable, Hashable {
        /// Bytes written towards the server.
        public var bytesForwardedUpstream: Int
        /// Bytes written towards the client.
        public var bytesForwardedDownstream: Int
        /// Bytes from the client that were dropped (black hole, cut, or nowhere left to deliver them).
        public var bytesDiscardedUpstream: Int
        /// Bytes from the server that were dropped (black hole, cut, or nowhere left to deliver them).
        public var bytesDiscardedDownstream: Int
        /// Faults applied to this pair (directly or through the proxy).
        public var faultsApplied: Int
        /// True once a NAT forgot this pair's mapping (see ``NetworkFault/natIdleTimeout(_:onForgotten:for:)``).
        public var isNATMappingForgotten: Bool
    }

    let link: ProxyLink

    init(link: ProxyLink) {
        self.link = link
    }

    /// A number unique within its proxy, counting from 1 in the order the proxy registered the pairs (clients
    /// that connect at nearly the same time may be registered in either order; tell them apart by
    /// ``clientAddress``).
    public var id: Int {
        link.id
    }

    /// The client's address (the peer of the accepted connection), when known.
    public var clientAddress: SocketAddress? {
        link.client.remoteAddress
    }

    /// True until both sides of the pair are closed.
    public var isOpen: Bool {
        link.isOpen
    }

    /// The pair's counters now.
    public var statistics: Statistics {
        let counters = link.counters
        return Statistics(
            bytesForwardedUpstream: counters.forwardedUpstream.load(ordering: .relaxed),
            bytesForwardedDownstream: counters.forwardedDownstream.load(ordering: .relaxed),
            bytesDiscardedUpstream: counters.discardedUpstream.load(ordering: .relaxed),
            bytesDiscardedDownstream: counters.discardedDownstream.load(ordering: .relaxed),
            faultsApplied: counters.faultsApplied.load(ordering: .relaxed),
            isNATMappingForgotten: counters.natMappingsForgotten.load(ordering: .relaxed) > 0)
    }

    /// Applies `fault` to this pair only (``NetworkFault/refuseConnections(reset:for:)`` and
    /// ``NetworkFault/acceptConnections`` are ignored here) and returns once it is in effect. A timed fault is
    /// undone by this pair's event loop after its duration.
    public func apply(_ fault: NetworkFault) async {
        await link.apply(fault)
    }

    /// `#id (client address)`.
    public var description: String {
        "#\(id) (\(clientAddress.map { "\($0)" } ?? "?"))"
    }

    /// Identity of the pair.
    public static func == (lhs: ProxiedConnection, rhs: ProxiedConnection) -> Bool {
        lhs.link === rhs.link
    }

    /// Hashes the identity of the pair.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(ObjectIdentifier(link))
    }
}
