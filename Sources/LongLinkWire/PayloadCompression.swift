/// Whether a side offers zlib compression of payloads, and from what size it compresses what it
/// sends.
///
/// Compression is negotiated per connection: the client lists it in `Hello`'s metadata, the server
/// answers with it in `Welcome`'s, and only then does either side compress. Each side compresses a
/// payload it sends when it is at least ``minimumBytes`` long and compressing makes it smaller,
/// and flags it in the frame; every flagged payload is inflated on arrival, bounded by the
/// receiver's maximum frame size (a compression bomb is an error, not an allocation). A peer that
/// does not know the extension never advertises it, so it never receives a compressed payload.
public struct PayloadCompression: Sendable, Hashable {
    /// Whether zlib is offered.
    public var isEnabled: Bool
    /// Payloads shorter than this are sent as they are (compressing small ones costs more time than
    /// it saves bytes).
    public var minimumBytes: Int
    /// zlib's level, from 1 (fastest) to 9 (smallest). The default, 1, deflates several times
    /// faster than zlib's own default (6) for payloads a few percent larger: on a live link the
    /// CPU per message is what the sender pays on every message. Out-of-range values are clamped.
    public var level: Int

    /// Creates a setting.
    public init(isEnabled: Bool, minimumBytes: Int = 1_024, level: Int = 1) {
        self.isEnabled = isEnabled
        self.minimumBytes = minimumBytes
        self.level = min(9, max(1, level))
    }

    /// No compression offered.
    public static let disabled = PayloadCompression(isEnabled: false)

    /// zlib offered, for payloads of at least `minimumBytes`, at `level` (1 fastest, 9 smallest).
    public static func zlib(minimumBytes: Int = 1_024, level: Int = 1) -> PayloadCompression {
        PayloadCompression(isEnabled: true, minimumBytes: minimumBytes, level: level)
    }

    /// `payload` as it is sent on a link where compression was negotiated: compressed when it is
    /// long enough and compressing makes it smaller (then with compression 1), else as it is (0).
    package func outgoing(_ payload: [UInt8]) -> (payload: [UInt8], compression: UInt32) {
        guard isEnabled, payload.count >= minimumBytes, let deflated = PayloadCompressor.deflate(payload, level: level)
        else {
            return (payload, PayloadCompressor.none)
        }
        return (deflated, PayloadCompressor.zlib)
    }

    /// A payload as it arrived, inflated when its frame says it is compressed. `negotiated` is
    /// whether this link agreed to compression; a compressed payload on a link that did not is an
    /// error, as is a compression this version does not know.
    package static func incoming(_ payload: [UInt8], compression: UInt32, negotiated: Bool, limit: Int)
        throws(LongLinkError) -> [UInt8]
    {
        do throws(InflationError) {
            return try incoming(
                payload, compression: compression, negotiated: negotiated,
                within: InflationLimit(bytes: limit, bound: .frame))
        } catch {
            throw error.error
        }
    }

    /// As ``incoming(_:compression:negotiated:limit:)``, bounded by `limit` and telling a payload
    /// past it (``InflationError/exceeded(_:)``) from an invalid one.
    package static func incoming(
        _ payload: [UInt8], compression: UInt32, negotiated: Bool, within limit: InflationLimit
    ) throws(InflationError) -> [UInt8] {
        switch compression {
        case PayloadCompressor.none:
            return payload
        case PayloadCompressor.zlib where negotiated:
            return try PayloadCompressor.inflate(payload, within: limit)
        case PayloadCompressor.zlib:
            throw .invalid(
                LongLinkError(
                    code: .compressionFailed, message: "compressed payload on a link that did not agree to it"))
        default:
            throw .invalid(
                LongLinkError(code: .compressionFailed, message: "unknown payload compression \(compression)"))
        }
    }
}
