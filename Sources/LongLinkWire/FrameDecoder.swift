/// Cuts a byte stream into frames, however the stream was split into reads.
///
/// TCP delivers bytes, not frames: one read may hold half a frame, or several frames and the
/// start of the next. The decoder reads each frame's varint length prefix, waits until the whole
/// body is there, and decodes it.
///
/// There are two ways to feed it:
/// - ``decode(_:into:)``, the fast path for a transport's read callback: complete frames are
///   decoded straight from the read buffer and only an incomplete tail is copied.
/// - ``append(_:)`` or ``append(contentsOf:)``, then ``next()`` until it returns nil.
///
/// Limits: a length prefix above ``maxFrameBytes`` is rejected with
/// ``WireFormatError/Kind/frameTooLarge(length:limit:)`` as soon as the prefix is complete, before
/// any of the body is kept; a prefix longer than 10 bytes, or above 2^64 - 1, is
/// ``WireFormatError/Kind/overlongVarint``. With ``decode(_:into:)``, or with ``next()`` called until
/// nil after every append, the decoder never holds more than one incomplete frame, so
/// ``bufferedByteCount`` stays below `maxFrameBytes + 10`.
///
/// Errors carry absolute stream offsets: the number of bytes fed to the decoder before the bad
/// element. After an error the decoder is failed for good: it ignores new bytes and throws the
/// same error again (the connection must be closed).
public struct FrameDecoder: Sendable {
    /// The largest frame body accepted, in bytes (the length prefix is not counted).
    public let maxFrameBytes: Int
    /// Bounds on the repeated fields of each frame, enforced while decoding it.
    public let limits: Frame.DecodingLimits

    /// Bytes received but not yet decoded start at `buffer[readIndex]`.
    private var buffer: [UInt8] = []
    private var readIndex = 0
    /// The stream offset of `buffer[readIndex]`: every byte before it has been decoded.
    private var streamOffset = 0
    /// The first error, thrown again by every later call.
    private var failure: WireFormatError?

    /// A buffer that grew above this many bytes for one large frame is released once it is empty.
    private static let retainedCapacity = 256 * 1024
    /// Consumed bytes at the front of the buffer are discarded once there are this many (or more
    /// than the bytes still pending).
    private static let compactionThreshold = 64 * 1024

    /// Creates a decoder that accepts frames of up to `maxFrameBytes` bytes.
    ///
    /// - Parameters:
    ///   - maxFrameBytes: The largest frame body accepted; values below 0 count as 0.
    ///   - limits: Bounds on the repeated fields of each frame (none by default).
    public init(maxFrameBytes: Int = Frame.defaultMaxFrameBytes, limits: Frame.DecodingLimits = .unlimited) {
        self.maxFrameBytes = Swift.max(0, maxFrameBytes)
        self.limits = limits
    }

    /// The number of bytes received and not yet decoded (at most one incomplete frame when the
    /// decoder is drained after every read).
    public var bufferedByteCount: Int {
        buffer.count - readIndex
    }

    /// The number of bytes decoded so far: the stream offset of the next byte to decode.
    public var consumedByteCount: Int {
        streamOffset
    }

    // MARK: Feeding bytes

    /// Adds received bytes; call ``next()`` until it returns nil to take the frames they complete.
    ///
    /// Bytes that arrive after the decoder failed are dropped.
    public mutating func append(_ bytes: UnsafeRawBufferPointer) {
        guard failure == nil, !bytes.isEmpty else { return }
        compactIfUseful()
        buffer.append(contentsOf: bytes)
        checkPendingPrefix()
    }

    /// Adds received bytes; call ``next()`` until it returns nil to take the frames they complete.
    ///
    /// Bytes that arrive after the decoder failed are dropped.
    public mutating func append(contentsOf bytes: some Sequence<UInt8>) {
        guard failure == nil else { return }
        compactIfUseful()
        buffer.append(contentsOf: bytes)
        checkPendingPrefix()
    }

    /// Returns the next complete frame, or nil when more bytes are needed.
    ///
    /// - Throws: ``WireFormatError`` for a malformed stream; the same error on every later call.
    public mutating func next() throws(WireFormatError) -> Frame? {
        if let failure { throw failure }
        do throws(WireFormatError) {
            return try nextBufferedFrame()
        } catch {
            fail(error)
            throw error
        }
    }

    /// Decodes every complete frame in what was buffered plus `bytes`, appending them to `frames`,
    /// and keeps only the incomplete tail.
    ///
    /// This is the call for a read callback: complete frames are decoded directly from `bytes`
    /// without copying them into the decoder. When it throws, `frames` still holds the frames that
    /// came before the malformed one.
    ///
    /// - Throws: ``WireFormatError`` for a malformed stream; the same error on every later call.
    public mutating func decode(_ bytes: UnsafeRawBufferPointer, into frames: inout [Frame]) throws(WireFormatError) {
        if let failure { throw failure }
        do throws(WireFormatError) {
            try decodeBatch(bytes, into: &frames)
        } catch {
            fail(error)
            throw error
        }
    }

    // MARK: Internals

    /// The length prefix at `bytes[start..<end]`.
    private enum Prefix {
        /// More bytes are needed to finish the prefix.
        case incomplete
        /// The prefix is complete: `size` bytes announcing a body of `length` bytes.
        case complete(length: Int, size: Int)
    }

    /// Reads and checks the length prefix at `start`, whose stream offset is `offset`.
    @inline(__always)
    private func readPrefix(_ bytes: UnsafeRawBufferPointer, at start: Int, end: Int, offset: Int)
        throws(WireFormatError) -> Prefix
    {
        switch ProtobufReader.scanVarint(bytes, at: start, end: end) {
        case .truncated:
            // A run of 10 or more continuation bytes can never end well.
            if end - start >= 10 {
                throw WireFormatError(.overlongVarint, field: "frame", offset: offset)
            }
            return .incomplete
        case .overlong:
            throw WireFormatError(.overlongVarint, field: "frame", offset: offset)
        case .complete(let length, let size):
            guard length <= UInt64(maxFrameBytes) else {
                throw WireFormatError(
                    .frameTooLarge(length: length, limit: maxFrameBytes), field: "frame", offset: offset)
            }
            return .complete(length: Int(length), size: size)
        }
    }

    /// Decodes the frame body at `bytes[range]`, whose first byte is at stream offset `offset`.
    @inline(__always)
    private func decodeBody(_ bytes: UnsafeRawBufferPointer, _ range: Range<Int>, offset: Int)
        throws(WireFormatError) -> Frame
    {
        var reader = ProtobufReader(
            UnsafeRawBufferPointer(rebasing: bytes[range]), streamOffset: offset, limits: limits)
        return try Frame(reading: &reader)
    }

    /// Decodes the first buffered frame if it is complete.
    private mutating func nextBufferedFrame() throws(WireFormatError) -> Frame? {
        guard readIndex < buffer.count else { return nil }
        let start = readIndex
        let offset = streamOffset
        let result = buffer.withUnsafeBytes { bytes -> Result<(Frame, Int)?, WireFormatError> in
            do throws(WireFormatError) {
                let prefix = try readPrefix(bytes, at: start, end: bytes.count, offset: offset)
                guard case .complete(let length, let size) = prefix else { return .success(nil) }
                let bodyStart = start + size
                guard bytes.count - bodyStart >= length else { return .success(nil) }
                let frame = try decodeBody(bytes, bodyStart..<bodyStart + length, offset: offset + size)
                return .success((frame, size + length))
            } catch {
                return .failure(error)
            }
        }
        guard let (frame, consumed) = try result.get() else { return nil }
        consume(consumed)
        return frame
    }

    /// Marks `count` buffered bytes as decoded.
    private mutating func consume(_ count: Int) {
        readIndex += count
        streamOffset += count
        if readIndex == buffer.count {
            resetBuffer()
        }
    }

    private mutating func resetBuffer() {
        if buffer.capacity > Self.retainedCapacity {
            buffer = []
        } else {
            buffer.removeAll(keepingCapacity: true)
        }
        readIndex = 0
    }

    /// Drops decoded bytes from the front of the buffer when that is worth a move.
    private mutating func compactIfUseful() {
        guard readIndex > 0 else { return }
        if readIndex == buffer.count {
            resetBuffer()
        } else if readIndex >= Self.compactionThreshold || readIndex >= buffer.count - readIndex {
            buffer.removeSubrange(0..<readIndex)
            readIndex = 0
        }
    }

    /// After an append: fails at once when the pending frame's prefix is already known to be bad,
    /// so that its body is never kept.
    private mutating func checkPendingPrefix() {
        let start = readIndex
        let offset = streamOffset
        let error = buffer.withUnsafeBytes { bytes -> WireFormatError? in
            do throws(WireFormatError) {
                _ = try readPrefix(bytes, at: start, end: bytes.count, offset: offset)
                return nil
            } catch {
                return error
            }
        }
        if let error {
            fail(error)
        }
    }

    private mutating func fail(_ error: WireFormatError) {
        failure = error
        buffer = []
        readIndex = 0
    }

    private mutating func decodeBatch(_ bytes: UnsafeRawBufferPointer, into frames: inout [Frame])
        throws(WireFormatError)
    {
        // Frames completed by earlier appends come first.
        while let frame = try nextBufferedFrame() {
            frames.append(frame)
        }
        var index = 0
        if bufferedByteCount > 0 {
            // Finish the pending frame with as few bytes as it needs, so the buffer never holds more
            // than one frame; whatever follows is decoded in place.
            index = try completePendingFrame(from: bytes, into: &frames)
            if bufferedByteCount > 0 {
                return
            }
        }
        // `bytes[i]` is at stream offset `base + i`.
        let base = streamOffset - index
        let end = bytes.count
        while index < end {
            let prefix = try readPrefix(bytes, at: index, end: end, offset: base + index)
            guard case .complete(let length, let size) = prefix, end - index - size >= length else { break }
            let bodyStart = index + size
            frames.append(try decodeBody(bytes, bodyStart..<bodyStart + length, offset: base + bodyStart))
            index = bodyStart + length
        }
        streamOffset = base + index
        if index < end {
            compactIfUseful()
            buffer.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[index...]))
        }
    }

    /// Moves bytes from `bytes` into the buffer until the pending frame is complete (then decodes
    /// it) or `bytes` runs out. Returns how many bytes of `bytes` it used.
    private mutating func completePendingFrame(from bytes: UnsafeRawBufferPointer, into frames: inout [Frame])
        throws(WireFormatError) -> Int
    {
        compactIfUseful()
        var index = 0
        while true {
            let start = readIndex
            let offset = streamOffset
            let prefix = try buffer.withUnsafeBytes { buffered in
                Result { () throws(WireFormatError) -> Prefix in
                    try readPrefix(buffered, at: start, end: buffered.count, offset: offset)
                }
            }.get()
            switch prefix {
            case .incomplete:
                // The prefix itself is split: take one more byte (at most 10 in all).
                guard index < bytes.count else { return index }
                buffer.append(bytes[index])
                index += 1
            case .complete(let length, let size):
                let missing = size + length - bufferedByteCount
                let available = Swift.min(missing, bytes.count - index)
                buffer.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[index..<index + available]))
                index += available
                if available == missing, let frame = try nextBufferedFrame() {
                    frames.append(frame)
                }
                return index
            }
        }
    }
}
