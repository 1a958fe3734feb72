/// What the benchmarks measure of zlib on its own and read off the wire, without a client: the
/// codec below ``PayloadCompression``, which stays `package` for the rest of the library.
@_spi(Benchmarks)
extension PayloadCompression {
    /// The `Hello` metadata that offers zlib, as a client with compression on sends it.
    public static var zlibOfferMetadata: [String: String] {
        [PayloadCompressor.metadataKey: PayloadCompressor.zlibName]
    }

    /// The `compression` value of a payload sent as it is.
    public static var uncompressedWireValue: UInt32 { PayloadCompressor.none }

    /// The `compression` value of a zlib-compressed payload.
    public static var zlibWireValue: UInt32 { PayloadCompressor.zlib }

    /// `payload` compressed with zlib at `level`, or nil when that does not make it smaller.
    public static func deflate(_ payload: [UInt8], level: Int = 1) -> [UInt8]? {
        PayloadCompressor.deflate(payload, level: level)
    }

    /// A zlib payload inflated, failing past `limit` bytes.
    public static func inflate(_ payload: [UInt8], limit: Int) throws(LongLinkError) -> [UInt8] {
        try PayloadCompressor.inflate(payload, limit: limit)
    }
}
