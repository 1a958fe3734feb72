import LongLinkTransport

/// One direction of a ``ProxyLink``: reads arrive from `source`, pass through the direction's conditions (black
/// hole, latency and jitter, merge window, throttle, split) and are written to `destination`.
///
/// Memory stays bounded: at most `bufferLimit` bytes wait here (plus one read); at that point reading from the
/// source pauses until half of them are gone. Bytes are only written while the destination is writable, and its
/// own write queue is bounded by the same limit (its high watermark), so a stalled destination stalls the source.
///
/// Loop thread only (the link's loop); `@unchecked Sendable` because its timer closures capture it.
final class ForwardingPipe: @unchecked Sendable {
    private struct Chunk {
        var bytes: [UInt8]
        var offset: Int
        let releaseAt: ContinuousClock.Instant

        var remaining: Int { bytes.count - offset }
    }

    let loop: EventLoop
    private let upstream: Bool
    private let linkCounters: TrafficCounters
    private let proxyCounters: TrafficCounters
    private let bufferLimit: Int

    /// Where bytes come from; nil before the upstream connection exists and after the source closed.
    var source: Connection?
    /// Where bytes go; nil before the upstream connection exists and after the destination closed.
    private(set) var destination: Connection?
    private(set) var conditions: DirectionConditions
    /// Keeps the source paused (the client waits while the proxy connects upstream).
    var holdsSource = false
    /// Set for good when the link's NAT forgot its mapping: like a black hole that is never restored.
    private(set) var isSevered = false

    /// True while nothing gets through: a black hole, or a severed link.
    private var dropsEverything: Bool {
        conditions.blackHoled || isSevered
    }

    private var chunks: [Chunk] = []
    private var head = 0
    private var queuedBytes = 0
    private var lastRelease: ContinuousClock.Instant?
    private var throttleReadyAt: ContinuousClock.Instant?
    private var wake: EventLoopTimer?
    private var blockedOnWritable = false
    private var flowPaused = false
    private var sourcePaused = false
    /// The source ended; its destination is closed this way once everything held is written.
    private var pendingEnd: CloseMode?

    init(
        loop: EventLoop, upstream: Bool, conditions: DirectionConditions, bufferLimit: Int,
        linkCounters: TrafficCounters, proxyCounters: TrafficCounters
    ) {
        self.loop = loop
        self.upstream = upstream
        self.conditions = conditions
        self.bufferLimit = bufferLimit
        self.linkCounters = linkCounters
        self.proxyCounters = proxyCounters
    }

    func attach(destination: Connection) {
        self.destination = destination
        pump()
    }

    // MARK: Events

    /// Bytes read from the source.
    func received(_ bytes: UnsafeRawBufferPointer) {
        guard !dropsEverything, let destination, !destination.isClosed else {
            discard(bytes.count)
            return
        }
        if head == chunks.count && conditions.isTransparent && destination.isWritable {
            destination.write { $0.append(contentsOf: bytes) }
            forward(bytes.count)
            return
        }
        chunks.append(Chunk(bytes: Array(bytes), offset: 0, releaseAt: releaseTime()))
        queuedBytes += bytes.count
        updateReading()
        // A pending wake (latency, throttle, split pacing) already covers the new chunk: it cannot be released
        // before the chunks ahead of it.
        if wake == nil {
            pump()
        }
    }

    /// The source closed: pass the close on (as `mode`) once everything held has been written.
    func sourceEnded(_ mode: CloseMode) {
        source = nil
        pendingEnd = mode
        if mode != .graceful && !dropsEverything {
            dropQueue()
        }
        finishIfDrained()
    }

    /// The destination closed: nothing more can be delivered.
    func destinationClosed() {
        destination = nil
        pendingEnd = nil
        dropQueue()
    }

    /// Forwards nothing from now on, closes included, whatever the conditions: what is held is dropped, and what
    /// arrives is discarded (the link's NAT forgot its mapping).
    func sever() {
        isSevered = true
        dropQueue()
    }

    /// Releases the connections and timers (the link is finished).
    func tearDown() {
        dropQueue()
        source = nil
        destination = nil
    }

    func setConditions(_ new: DirectionConditions) {
        let old = conditions
        conditions = new
        if new.blackHoled && !old.blackHoled {
            dropQueue()
        }
        if new.bytesPerSecond == nil {
            throttleReadyAt = nil
        }
        if new.latency == .zero && new.jitter == .zero {
            lastRelease = nil
        }
        updateReading()
        pump()
        if old.blackHoled && !new.blackHoled {
            finishIfDrained()
        }
    }

    // MARK: Writing

    /// Writes what is due, as far as the conditions and the destination allow, and arranges to be called again
    /// when more becomes due.
    func pump() {
        cancelWake()
        defer {
            updateReading()
            finishIfDrained()
        }
        guard let destination else {
            return
        }
        let now = ContinuousClock.now
        while head < chunks.count {
            if destination.isClosed {
                dropQueue()
                return
            }
            guard destination.isWritable else {
                // A dip below writability can go unreported when the loop's flush empties the queue at once, so
                // look again next iteration; if it is still not writable then, the change back will be reported.
                if !blockedOnWritable {
                    blockedOnWritable = true
                    scheduleWake(after: .zero)
                }
                return
            }
            blockedOnWritable = false
            var due = chunks[head].releaseAt
            if let window = conditions.mergeWindow {
                due = due + window
            }
            if conditions.bytesPerSecond != nil, let ready = throttleReadyAt, ready > due {
                due = ready
            }
            if due > now {
                scheduleWake(after: due - now)
                return
            }
            var allowed = conditions.mergeWindow == nil ? chunks[head].remaining : readyBytes(by: now)
            if let rate = conditions.bytesPerSecond {
                allowed = min(allowed, max(1, rate / 100))
            }
            if let size = conditions.chunkSize {
                allowed = min(allowed, size)
            }
            let piece = take(allowed, readyBy: now)
            destination.write(piece)
            forward(piece.count)
            if let rate = conditions.bytesPerSecond {
                let start = max(throttleReadyAt ?? now, now)
                throttleReadyAt = start + .nanoseconds(Int64(piece.count) * 1_000_000_000 / Int64(rate))
            }
            if conditions.chunkSize != nil {
                // One chunk per loop iteration, each its own system call.
                destination.flush()
                if head < chunks.count {
                    scheduleWake(after: .zero)
                }
                return
            }
        }
    }

    private func releaseTime() -> ContinuousClock.Instant {
        var release = ContinuousClock.now
        if conditions.latency > .zero || conditions.jitter > .zero {
            var delay = conditions.latency
            let jitter = conditions.jitter.wholeNanoseconds
            if jitter > 0 {
                delay += .nanoseconds(Int64.random(in: -jitter...jitter))
            }
            release = release + max(.zero, delay)
        }
        if let lastRelease, release < lastRelease {
            release = lastRelease
        }
        lastRelease = release
        return release
    }

    private func readyBytes(by now: ContinuousClock.Instant) -> Int {
        var total = 0
        var index = head
        while index < chunks.count && chunks[index].releaseAt <= now {
            total += chunks[index].remaining
            index += 1
        }
        return total
    }

    /// Takes up to `limit` bytes of the chunks released by `now`, in order.
    private func take(_ limit: Int, readyBy now: ContinuousClock.Instant) -> [UInt8] {
        var piece: [UInt8] = []
        var wanted = limit
        while wanted > 0 && head < chunks.count && chunks[head].releaseAt <= now {
            let count = min(wanted, chunks[head].remaining)
            if piece.isEmpty && chunks[head].offset == 0 && count == chunks[head].bytes.count && count == wanted {
                // The whole chunk, alone: no copy.
                swap(&piece, &chunks[head].bytes)
            } else {
                let start = chunks[head].offset
                piece.append(contentsOf: chunks[head].bytes[start..<(start + count)])
                chunks[head].offset += count
            }
            wanted -= count
            queuedBytes -= count
            if chunks[head].remaining == 0 {
                chunks[head].bytes = []
                head += 1
            }
        }
        compact()
        return piece
    }

    private func compact() {
        if head == chunks.count {
            chunks.removeAll(keepingCapacity: chunks.count <= 64)
            head = 0
        } else if head >= 32 && head * 2 >= chunks.count {
            chunks.removeFirst(head)
            head = 0
        }
    }

    private func forward(_ count: Int) {
        linkCounters.forwarded(count, upstream: upstream)
        proxyCounters.forwarded(count, upstream: upstream)
    }

    private func discard(_ count: Int) {
        guard count > 0 else {
            return
        }
        linkCounters.discarded(count, upstream: upstream)
        proxyCounters.discarded(count, upstream: upstream)
    }

    private func dropQueue() {
        discard(queuedBytes)
        chunks.removeAll()
        head = 0
        queuedBytes = 0
        lastRelease = nil
        blockedOnWritable = false
        cancelWake()
        updateReading()
    }

    private func finishIfDrained() {
        guard let mode = pendingEnd, !dropsEverything, head == chunks.count else {
            return
        }
        pendingEnd = nil
        destination?.close(mode)
    }

    // MARK: Reading and timers

    /// Pauses or resumes the source: paused while the queue is full (resumed at half), while the direction is
    /// paused by a fault, and while the link waits for its upstream connection.
    func updateReading() {
        guard let source, !source.isClosed else {
            return
        }
        if flowPaused {
            if queuedBytes <= bufferLimit / 2 {
                flowPaused = false
            }
        } else if queuedBytes >= bufferLimit {
            flowPaused = true
        }
        let pause = flowPaused || conditions.paused || holdsSource
        guard pause != sourcePaused else {
            return
        }
        sourcePaused = pause
        if pause {
            source.pauseReading()
        } else {
            source.resumeReading()
        }
    }

    private func scheduleWake(after delay: Duration) {
        cancelWake()
        wake = loop.scheduleTimer(after: max(.zero, delay)) { [self] in
            wake = nil
            pump()
        }
    }

    private func cancelWake() {
        if let wake {
            loop.cancelTimer(wake)
            self.wake = nil
        }
    }
}
