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

        /// Limits; the defaults bound nothing.
        public init(maxMapEntries: Int = .max, maxRepeatedValues: Int = .max) {
            self.maxMapEntries = maxMapEntries
            self.maxRepeatedValues = maxRepeatedValues
        }

        /// No bound beyond the frame size.
        public static let unlimited = DecodingLimits()
    }
}
