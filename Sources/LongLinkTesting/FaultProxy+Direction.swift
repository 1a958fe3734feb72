extension FaultProxy {
    /// Which way bytes travel through a ``FaultProxy``: a set, so a fault can apply to one direction or both.
    ///
    /// *Upstream* is from the client (whoever connected to the proxy) to the server behind it; *downstream* is
    /// from the server back to the client.
    public struct Direction: OptionSet, Sendable, Hashable, CustomStringConvertible {
        /// The bit pattern of the set.
        public let rawValue: UInt8

        /// Creates a set from its bit pattern.
        public init(rawValue: UInt8) {
            self.rawValue = rawValue
        }

        /// Client to server.
        public static let upstream = Direction(rawValue: 1 << 0)
        /// Server to client.
        public static let downstream = Direction(rawValue: 1 << 1)
        /// Both ways.
        public static let both: Direction = [.upstream, .downstream]

        /// `upstream`, `downstream`, `both`, or `none`.
        public var description: String {
            switch self {
            case .both: "both"
            case .upstream: "upstream"
            case .downstream: "downstream"
            default: "none"
            }
        }
    }
}
