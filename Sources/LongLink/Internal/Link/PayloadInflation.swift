internal import LongLinkWire

/// How a link's compressed payloads become what the app reads: inflated when the frame says they
/// are compressed, bounded by ``ClientConfiguration/maxFrameBytes`` and
/// ``ClientConfiguration/maxInflationRatio``, and only on a link that agreed to compress. A value,
/// so that the machine inflates without asking the core.
struct PayloadInflation {
    /// Both sides agreed to compress payloads on the link.
    var negotiated: Bool
    var maxFrameBytes: Int
    var maxInflationRatio: Int

    /// `payload` inflated; an error for a compressed payload that is corrupt, past a bound once
    /// inflated (inflating stops there), or on a link that did not agree to it.
    func callAsFunction(_ payload: [UInt8], compression: UInt32) -> Result<[UInt8], LongLinkError> {
        let limit = InflationLimit(
            compressedBytes: payload.count, maxFrameBytes: maxFrameBytes, ratio: maxInflationRatio)
        do throws(InflationError) {
            return .success(
                try PayloadCompression.incoming(payload, compression: compression, negotiated: negotiated, within: limit))
        } catch {
            return .failure(error.error)
        }
    }
}
