extension FaultProxy {
    /// Counters of a ``FaultProxy`` since it was created.
    public struct Statistics: Sendable, Hashable {
        /// Connections accepted and proxied (refused ones not included).
        public var connectionsAccepted: Int
        /// Connections accepted and closed at once while refusing (see ``NetworkFault/refuseConnections(reset:for:)``).
        public var connectionsRefused: Int
        /// Proxied connections whose upstream connection could not be made (the client was then reset).
        public var upstreamConnectFailures: Int
        /// Pairs open now.
        public var openConnections: Int
        /// Bytes written towards the server.
        public var bytesForwardedUpstream: Int
        /// Bytes written towards the client.
        public var bytesForwardedDownstream: Int
        /// Bytes from clients that were dropped (black hole, cut, or nowhere left to deliver them).
        public var bytesDiscardedUpstream: Int
        /// Bytes from servers that were dropped (black hole, cut, or nowhere left to deliver them).
        public var bytesDiscardedDownstream: Int
        /// Faults applied to the proxy as a whole, counted once in effect on every pair (each
        /// ``FaultTarget/apply(_:)`` call counts once, a timed fault's automatic reversal once more). Faults
        /// applied to single pairs are counted there.
        public var faultsApplied: Int
        /// Pairs whose mapping a NAT forgot (see ``NetworkFault/natIdleTimeout(_:onForgotten:for:)``).
        public var natMappingsForgotten: Int
    }
}
