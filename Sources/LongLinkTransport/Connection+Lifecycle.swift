import LongLinkCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Reading, closing and the loop's events of a ``Connection``.
extension Connection {
    // MARK: - Reading

    /// Stops reading from the socket (the kernel buffers, then the peer's sends stall): for backpressure.
    /// Loop thread only.
    public func pauseReading() {
        assert(eventLoop.inEventLoop)
        readingPaused = true
        updateInterest()
    }

    /// Resumes reading after ``pauseReading()``. Loop thread only.
    public func resumeReading() {
        assert(eventLoop.inEventLoop)
        readingPaused = false
        updateInterest()
        if tls != nil { scheduleTLSRead() }
    }

    var readingEnabled: Bool {
        guard case .open = state else {
            return false
        }
        // A TLS handshake reads before anyone is there to take plaintext.
        return (handler != nil && !readingPaused) || tlsHandshakeCompletion != nil
    }

    func updateInterest() {
        guard fd >= 0 else {
            return
        }
        var wanted: IOEvents = []
        if readingEnabled || isLingering {
            wanted.insert(.readable)
        }
        if awaitingWritable {
            wanted.insert(.writable)
        }
        guard wanted != interest else {
            return
        }
        do {
            try eventLoop.selector.modify(fd: fd, id: resourceID, interest: wanted)
            interest = wanted
        } catch {
            finish(reset: false, reason: error)
        }
    }

    func readFromSocket() {
        let size = options.readChunkSize
        let buffer = eventLoop.readBuffer(size: size)
        // A few reads per readiness event; the level-triggered selector reports the rest next time.
        for _ in 0..<4 {
            guard readingEnabled else {
                return
            }
            let count = read(fd, buffer.baseAddress, size)
            statistics.readCalls += 1
            if count > 0 {
                statistics.bytesRead += count
                if tls != nil {
                    didReadCiphertext(UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
                } else if let handler {
                    callbackDepth += 1
                    handler.connection(self, didRead: UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
                    callbackDepth -= 1
                }
                if count < size {
                    return
                }
            } else if count == 0 {
                finish(reset: false, reason: endOfStreamReason())
                return
            } else {
                let code = errno
                if code == EINTR {
                    continue
                }
                if code != EAGAIN && code != EWOULDBLOCK {
                    finish(reset: false, reason: .system(errno: code, function: "read"))
                }
                return
            }
        }
    }

    // MARK: - Closing

    /// Closes the connection (see ``CloseMode``); `error` is what the handler's `didCloseWith` and waiting sends
    /// receive (nil: a clean close, sends get `connectionClosed`). Any thread; a no-op once closed.
    public func close(_ mode: CloseMode = .graceful, error: LongLinkError? = nil) {
        if eventLoop.inEventLoop {
            closeOnLoop(mode, error: error)
        } else {
            eventLoop.tryExecute { [self] in
                closeOnLoop(mode, error: error)
            }
        }
    }

    func closeOnLoop(_ mode: CloseMode, error: LongLinkError?) {
        switch state {
        case .closed:
            return
        case .closing(let pending), .lingering(let pending):
            if mode != .graceful {
                finish(reset: mode == .reset, reason: error ?? pending)
            }
        case .open:
            if mode == .graceful && tls != nil { prepareTLSClose() }
            guard mode == .graceful else {
                finish(reset: mode == .reset, reason: error)
                return
            }
            state = .closing(error)
            failSendWaiters(error ?? .closedConnection())
            if queuedBytes > 0 {
                flushNow()
            } else {
                linger(error)
            }
            if case .closed = state { return }
            // Writing what is queued and lingering after it are bounded together.
            gracefulTimer = eventLoop.scheduleTimer(after: options.gracefulCloseTimeout) { [self] in
                closeOnLoop(.immediately, error: error)
            }
        }
    }

    var isLingering: Bool {
        if case .lingering = state { return true }
        return false
    }

    /// Everything queued is written: shuts the write side (the peer reads to our end of stream) and
    /// waits for the peer's own end, dropping what it still sends.
    func linger(_ reason: LongLinkError?) {
        guard Sys.shutdownWrite(fd) else {
            finish(reset: false, reason: reason)
            return
        }
        state = .lingering(reason)
        updateInterest()
    }

    /// Reads and drops what a peer sends after our end; its end of stream (or an error) closes.
    func dropLingeringBytes() {
        guard case .lingering(let reason) = state else { return }
        let size = options.readChunkSize
        let buffer = eventLoop.readBuffer(size: size)
        for _ in 0..<4 {
            let count = read(fd, buffer.baseAddress, size)
            if count > 0 {
                if count < size { return }
                continue
            }
            if count < 0 && errno == EINTR { continue }
            if count < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) { return }
            finish(reset: false, reason: reason)
            return
        }
    }

    /// The one place a connection ends.
    func finish(reset: Bool, reason: LongLinkError?) {
        if case .closed = state {
            return
        }
        state = .closed
        if let gracefulTimer {
            eventLoop.cancelTimer(gracefulTimer)
            self.gracefulTimer = nil
        }
        if reset {
            Sys.setResetOnClose(fd)
        }
        eventLoop.selector.remove(fd: fd)
        Sys.close(fd)
        fd = -1
        eventLoop.release(resourceID)
        writeQueue.removeAll()
        cipherQueue.removeAll()
        tls = nil
        if let tlsHandshakeTimer {
            eventLoop.cancelTimer(tlsHandshakeTimer)
            self.tlsHandshakeTimer = nil
        }
        awaitingWritable = false
        interest = []
        closeReason = reason
        failSendWaiters(reason ?? .closedConnection())
        if let completion = tlsHandshakeCompletion {
            tlsHandshakeCompletion = nil
            completion(reason ?? Self.closedDuringHandshake)
        }
        guard handlerInstalled else {
            return
        }
        if callbackDepth > 0 {
            eventLoop.executeLocal { [self] in
                deliverClose()
            }
        } else {
            deliverClose()
        }
    }

}

extension Connection: LoopResource {
    func handleEvents(_ events: IOEvents) {
        if events.contains(.writable) && awaitingWritable {
            awaitingWritable = false
            flushNow()
        }
        if case .closed = state {
            return
        }
        if isLingering {
            dropLingeringBytes()
            return
        }
        if readingEnabled && !events.isDisjoint(with: [.readable, .hangup, .error]) {
            // Read before acting on an error: data that arrived before a reset is still delivered.
            readFromSocket()
            if case .closed = state {
                return
            }
            if !events.contains(.error) {
                return
            }
        }
        if !events.isDisjoint(with: [.hangup, .error]) {
            let code = Sys.pendingError(fd)
            if code != 0 {
                finish(reset: false, reason: .system(errno: code, function: "socket"))
            } else if events.contains(.hangup) && !readingEnabled {
                if case .closing(let reason) = state {
                    finish(reset: false, reason: reason)
                } else {
                    finish(reset: false, reason: nil)
                }
            }
        }
    }

    func closeForShutdown(_ error: LongLinkError) {
        finish(reset: false, reason: error)
    }
}
