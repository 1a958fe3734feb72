internal import CZlib

/// Payload compression with zlib (RFC 1950: a zlib header, DEFLATE data, an Adler-32 checksum), as
/// wire protocol v1's compression extension defines it (see the protocol document).
///
/// Inflating is bounded: it stops with an error as soon as the output would pass the limit, so a
/// small payload that inflates to gigabytes (a compression bomb) costs at most the limit in memory.
package enum PayloadCompressor {
    /// The `compression` value of an uncompressed payload.
    package static let none: UInt32 = 0
    /// The `compression` value of a zlib-compressed payload.
    package static let zlib: UInt32 = 1
    /// The metadata key of `Hello` and `Welcome` that advertises the compressions a side reads.
    package static let metadataKey = "longlink-compression"
    /// The value of ``metadataKey`` that advertises zlib.
    package static let zlibName = "zlib"

    /// True when a `Hello` or `Welcome` metadata value lists zlib (a comma-separated list).
    package static func advertisesZlib(_ metadata: [String: String]) -> Bool {
        guard let value = metadata[metadataKey] else { return false }
        return value.split(separator: ",").contains { $0.filter { $0 != " " } == zlibName }
    }

    /// `payload` compressed with zlib at `level` (1 to 9), or nil when compressing does not make it
    /// smaller (or zlib fails, which it does only without memory).
    package static func deflate(_ payload: [UInt8], level: Int = 1) -> [UInt8]? {
        var bound = compressBound(uLong(payload.count))
        var output = [UInt8](repeating: 0, count: Int(bound))
        let status = output.withUnsafeMutableBufferPointer { out in
            payload.withUnsafeBufferPointer { input in
                compress2(out.baseAddress, &bound, input.baseAddress, uLong(input.count), Int32(min(9, max(1, level))))
            }
        }
        guard status == Z_OK, Int(bound) < payload.count else { return nil }
        output.removeSubrange(Int(bound)...)
        return output
    }

    /// Inflates a zlib payload of at most `limit` bytes once inflated.
    ///
    /// - Throws: ``LongLinkError/Code-swift.struct/compressionFailed`` when the data is corrupt,
    ///   truncated, followed by extra bytes, or inflates to more than `limit` bytes.
    package static func inflate(_ payload: [UInt8], limit: Int) throws(LongLinkError) -> [UInt8] {
        do throws(InflationError) {
            return try inflate(payload, within: InflationLimit(bytes: limit, bound: .frame))
        } catch {
            throw error.error
        }
    }

    /// Inflates a zlib payload in chunks, and stops as soon as the output passes `limit`: a bomb
    /// costs the work of `limit` bytes, never of what it would inflate to.
    package static func inflate(_ payload: [UInt8], within limit: InflationLimit) throws(InflationError) -> [UInt8] {
        func invalid(_ message: String) -> InflationError {
            .invalid(LongLinkError(code: .compressionFailed, message: message))
        }
        var stream = z_stream()
        guard inflateInit_(&stream, ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size)) == Z_OK else {
            throw invalid("zlib could not start inflating")
        }
        defer { inflateEnd(&stream) }
        // Grown as needed, never past the limit + 1 (one byte over says the limit was passed).
        let cap = limit.bytes == .max ? Int.max : limit.bytes + 1
        var output: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: min(max(payload.count * 4, 4096), cap, 1 << 20))
        var status: Int32 = Z_OK
        var consumed = 0
        while status != Z_STREAM_END {
            let room = min(chunk.count, cap - output.count)
            let (result, read, written) = payload.withUnsafeBufferPointer { input in
                chunk.withUnsafeMutableBufferPointer { out in
                    stream.next_in = UnsafeMutablePointer(mutating: input.baseAddress.map { $0 + consumed })
                    stream.avail_in = uInt(input.count - consumed)
                    stream.next_out = out.baseAddress
                    stream.avail_out = uInt(room)
                    let result = CZlib.inflate(&stream, Z_NO_FLUSH)
                    return (result, input.count - consumed - Int(stream.avail_in), room - Int(stream.avail_out))
                }
            }
            status = result
            consumed += read
            output.append(contentsOf: chunk[0..<written])
            if output.count > limit.bytes { throw .exceeded(limit) }
            switch status {
            case Z_OK, Z_STREAM_END:
                continue
            case Z_BUF_ERROR where read == 0 && written == 0:
                throw invalid("compressed payload is truncated")
            case Z_BUF_ERROR:
                continue
            default:
                throw invalid("compressed payload is corrupt")
            }
        }
        guard consumed == payload.count else { throw invalid("compressed payload has bytes after its end") }
        return output
    }
}
