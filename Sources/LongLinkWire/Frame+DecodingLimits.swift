extension Frame {
    /// Bounds on the repeated fields of one frame, enforced while it is decoded, so that a frame
    /// within the size limit cannot still cost a receiver hundreds of thousands of allocations
    /// (a 4 MiB `Hello` holds about 600,000 metadata entries). Exceeding one is
    /// ``WireFormatError/Kind/tooManyElements(limit:)``. The default is no bound beyond the frame size.
    public struct DecodingLimits: Sendable, Hashable {
        /// The most entries in one `map<string, string>` field (`Hello.metadata`, `Request.metadata`).
        public var maxMapEntries: Int
        /// The most values in one repeated scalar field (`Ack.seqs`).
        public var maxRepeatedValues: Int
        /// The most bytes of keys and values, together, in one `map<string, string>` field. Past
        /// it the error is also ``WireFormatError/Kind/tooManyElements(limit:)``, with this limit.
        public var maxMapBytes: Int = .max

        /// Limits; the defaults bound nothing.
        public init(maxMapEntries: Int = .max, maxRepeatedValues: Int = .max) {
            self.maxMapEntries = maxMapEntries
            self.maxRepeatedValues = maxRepeatedValues
        }

        /// Limits, with a bound on the bytes of each map; the defaults bound nothing.
        public init(maxMapEntries: Int = .max, maxMapBytes: Int, maxRepeatedValues: Int = .max) {
            self.maxMapEntries = maxMapEntries
            self.maxMapBytes = maxMapBytes
            self.maxRepeatedValues = maxRepeatedValues
        }

        /// No bound beyond the frame size.
        public static let unlimited = DecodingLimits()
    }
}
