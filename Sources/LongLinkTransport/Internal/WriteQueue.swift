#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The bytes a connection has been asked to write and the kernel has not taken yet.
///
/// Small writes are copied into the tail chunk (a buffer the queue owns), so a burst of frames becomes a few
/// large chunks; large writes are queued as they are, without a copy. A flush hands up to
/// ``maxChunksPerWrite`` chunks to one vectored write. Fully written owned chunks are kept as one spare, so a
/// steady stream of small frames allocates nothing. Loop thread only.
struct WriteQueue {
    /// Writes up to this size are copied into the tail chunk.
    static let copyThreshold = 1024
    /// An owned chunk stops taking appends once it holds this much.
    static let chunkLimit = 64 * 1024
    /// The capacity a new owned chunk starts with.
    static let initialChunkCapacity = 16 * 1024
    /// At most this many iovecs per system call.
    static let maxChunksPerWrite = 64

    private struct Chunk {
        var bytes: [UInt8]
        /// True when the queue created the array (so appending to it or keeping it as the spare never copies).
        var owned: Bool
    }

    private var chunks: [Chunk] = []
    private var head = 0
    private var headOffset = 0
    private var spare: [UInt8]?

    /// Bytes queued and not yet written.
    private(set) var count = 0

    var isEmpty: Bool { count == 0 }

    /// Queues `bytes` (copied when small, kept as they are when large).
    mutating func append(_ bytes: [UInt8]) {
        guard !bytes.isEmpty else {
            return
        }
        count += bytes.count
        if bytes.count <= Self.copyThreshold {
            if head < chunks.count, chunks[chunks.count - 1].owned,
                chunks[chunks.count - 1].bytes.count + bytes.count <= Self.chunkLimit
            {
                chunks[chunks.count - 1].bytes.append(contentsOf: bytes)
            } else {
                var chunk = makeOwnedChunk()
                chunk.append(contentsOf: bytes)
                chunks.append(Chunk(bytes: chunk, owned: true))
            }
        } else {
            chunks.append(Chunk(bytes: bytes, owned: false))
        }
    }

    /// Lets `body` append to the tail chunk in place. Returns how many bytes it appended.
    @discardableResult
    mutating func append(encoding body: (inout [UInt8]) -> Void) -> Int {
        if head == chunks.count || !chunks[chunks.count - 1].owned
            || chunks[chunks.count - 1].bytes.count >= Self.chunkLimit
        {
            chunks.append(Chunk(bytes: makeOwnedChunk(), owned: true))
        }
        let last = chunks.count - 1
        let before = chunks[last].bytes.count
        body(&chunks[last].bytes)
        let after = chunks[last].bytes.count
        precondition(after >= before, "write(encoding:) may only append bytes")
        if after == 0 {
            // Nothing was written into a fresh chunk: keep the queue free of empty chunks.
            let chunk = chunks.removeLast()
            if spare == nil {
                spare = chunk.bytes
            }
        }
        count += after - before
        return after - before
    }

    /// Drops everything queued.
    mutating func removeAll() {
        chunks.removeAll()
        head = 0
        headOffset = 0
        count = 0
        spare = nil
    }

    /// Calls `body` with iovecs over the oldest queued bytes (at most ``maxChunksPerWrite`` chunks), written
    /// into `iovecs`. The pointers are valid only during the call.
    func withIOVecs<Result>(
        _ iovecs: UnsafeMutablePointer<iovec>,
        _ body: (_ iovecCount: Int, _ byteCount: Int) -> Result
    ) -> Result {
        let limit = min(chunks.count - head, Self.maxChunksPerWrite)
        return fill(iovecs, index: 0, limit: limit, bytes: 0, body)
    }

    /// Nests one `withUnsafeBytes` per chunk so that every pointer handed to the kernel stays valid for the
    /// whole system call (the depth is bounded by ``maxChunksPerWrite``).
    private func fill<Result>(
        _ iovecs: UnsafeMutablePointer<iovec>, index: Int, limit: Int, bytes: Int,
        _ body: (Int, Int) -> Result
    ) -> Result {
        if index == limit {
            return body(index, bytes)
        }
        return chunks[head + index].bytes.withUnsafeBytes { buffer in
            let offset = index == 0 ? headOffset : 0
            let length = buffer.count - offset
            iovecs[index] = iovec(
                iov_base: UnsafeMutableRawPointer(mutating: buffer.baseAddress! + offset), iov_len: length)
            return fill(iovecs, index: index + 1, limit: limit, bytes: bytes + length, body)
        }
    }

    /// Marks the oldest `written` bytes as sent.
    mutating func consume(_ written: Int) {
        precondition(written <= count)
        count -= written
        var remaining = written
        while remaining > 0 {
            let available = chunks[head].bytes.count - headOffset
            if remaining < available {
                headOffset += remaining
                return
            }
            remaining -= available
            releaseHead()
        }
        if count == 0 {
            chunks.removeAll(keepingCapacity: chunks.capacity <= 64)
            head = 0
        }
    }

    private mutating func releaseHead() {
        if chunks[head].owned && spare == nil && chunks[head].bytes.capacity <= 2 * Self.chunkLimit {
            var reusable = chunks[head].bytes
            chunks[head].bytes = []
            reusable.removeAll(keepingCapacity: true)
            spare = reusable
        } else {
            chunks[head].bytes = []
        }
        head += 1
        headOffset = 0
        if head == chunks.count {
            chunks.removeAll(keepingCapacity: chunks.capacity <= 64)
            head = 0
        } else if head >= 32 && head * 2 >= chunks.count {
            chunks.removeFirst(head)
            head = 0
        }
    }

    private mutating func makeOwnedChunk() -> [UInt8] {
        if var reused = spare {
            spare = nil
            reused.removeAll(keepingCapacity: true)
            return reused
        }
        var fresh: [UInt8] = []
        fresh.reserveCapacity(Self.initialChunkCapacity)
        return fresh
    }
}
