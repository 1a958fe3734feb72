internal import LongLinkTransport
internal import LongLinkWire

/// Payload compression: offered in `Hello`, adopted from `Welcome`, and inflation of what arrives.
extension ClientCore {
    /// A reply's or a push's payload as the app reads it: inflated when the frame says it is
    /// compressed, bounded by ``ClientConfiguration/maxFrameBytes`` and
    /// ``ClientConfiguration/maxInflationRatio``. An error for a compressed payload that is
    /// corrupt, past a bound once inflated (inflating stops there), or on a link that did not
    /// agree to it.
    func inflated(_ payload: [UInt8], compression: UInt32, on link: Link) -> Result<[UInt8], any Error> {
        let limit = InflationLimit(
            compressedBytes: payload.count, maxFrameBytes: configuration.maxFrameBytes,
            ratio: configuration.maxInflationRatio)
        do throws(InflationError) {
            return .success(
                try PayloadCompression.incoming(
                    payload, compression: compression, negotiated: link.compresses, within: limit))
        } catch {
            machine.stats.compressionFailures += 1
            log(.error, "a compressed payload did not inflate: \(error.error.message)")
            return .failure(error.error)
        }
    }
}
