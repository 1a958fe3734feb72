internal import LongLinkTransport
internal import LongLinkWire

/// Payload compression: offered in `Hello`, adopted from `Welcome`, and inflation of what arrives
/// (decided by the machine with the link's ``PayloadInflation``).
extension ClientCore {
    /// How the payloads `link` reads are inflated.
    func inflater(for link: Link) -> PayloadInflation {
        PayloadInflation(
            negotiated: link.compresses, maxFrameBytes: configuration.maxFrameBytes,
            maxInflationRatio: configuration.maxInflationRatio)
    }
}
