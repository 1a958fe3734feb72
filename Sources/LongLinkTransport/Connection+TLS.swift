import LongLinkCore

/// TLS on a ``Connection``: the handshake, decrypting what is read, encrypting what is queued.
///
/// The socket I/O stays the plain connection's: reads hand ciphertext to the ``TLSSession`` and
/// its plaintext to the handler; writes queue plaintext as before, and the flush (eager or at the
/// end of the loop's iteration) encrypts the queued chunks (many frames per `SSL_write`) into the
/// cipher queue, which one vectored write hands to the kernel. Nothing blocks the loop.
extension Connection {
    /// The most ciphertext one flush prepares ahead of the kernel.
    static let cipherBatchBytes = 256 << 10

    static var closedDuringHandshake: LongLinkError {
        .tls(.closedDuringHandshake, "the peer closed the connection during the TLS handshake")
    }

    /// Starts TLS on a connection just made (loop thread only): a client writes its `ClientHello`
    /// at once, a server waits for one. `completion` is called once on the loop: with nil when the
    /// handshake finished (and the pins matched), otherwise with the error, and the connection then
    /// closes (after writing the alert OpenSSL made, if any). `timeout` bounds the handshake; nil
    /// leaves that to the caller.
    package func startTLS(
        _ context: TLSContext, serverName: String?, timeout: Duration?,
        completion: @escaping (LongLinkError?) -> Void
    ) {
        assert(eventLoop.inEventLoop)
        let session: TLSSession
        do {
            session = try context.makeSession(serverName: serverName)
        } catch {
            finish(reset: false, reason: error)
            completion(error)
            return
        }
        tls = session
        tlsHandshakeCompletion = completion
        if let timeout {
            tlsHandshakeTimer = eventLoop.scheduleTimer(after: timeout) { [self] in
                tlsHandshakeTimer = nil
                finish(
                    reset: false, reason: .tls(.handshakeTimeout, "the TLS handshake took longer than \(timeout)"))
            }
        }
        updateInterest()
        advanceHandshake()
    }

    /// A ``TLSFailure/Reason/truncated`` error: the peer closed the TCP connection without
    /// `close_notify` in the middle of a message.
    package static func truncatedError(peer: String) -> LongLinkError {
        let failure = TLSFailure(reason: .truncated, detail: "TCP closed without close_notify")
        return LongLinkError(code: .tlsFailure, message: message(for: failure, peer: peer), underlying: failure)
    }

    /// What the end of the TCP stream means. During the handshake, a failed handshake; after it,
    /// without `close_notify`, the stream may have been cut short: with part of a TLS record held,
    /// it was (``TLSFailure/Reason/truncated``); between records only the application can tell,
    /// from ``tlsEndedWithoutCloseNotify`` and whether it holds part of a message.
    func endOfStreamReason() -> LongLinkError? {
        guard let tls else { return nil }
        if tlsHandshakeCompletion != nil { return Self.closedDuringHandshake }
        tlsEndedWithoutCloseNotify = true
        return tls.holdsPartialRecord ? Self.truncatedError(peer: tls.isClient ? "server" : "client") : nil
    }

    /// The negotiated TLS version (`TLSv1.3`), nil for a plain connection. Loop thread only.
    package var tlsVersion: String? {
        tls?.protocolVersion
    }

    /// The negotiated ALPN protocol, nil for none or a plain connection. Loop thread only.
    package var tlsApplicationProtocol: String? {
        tls?.applicationProtocol
    }

    func didReadCiphertext(_ bytes: UnsafeRawBufferPointer) {
        guard let tls else { return }
        tls.feed(bytes)
        if tlsHandshakeCompletion != nil {
            advanceHandshake()
            guard tlsHandshakeCompletion == nil, case .open = state else { return }
        }
        readPlaintext()
    }

    private func advanceHandshake() {
        guard let tls else { return }
        let step = tls.handshake()
        queueTLSOutput()
        switch step {
        case .wantMore:
            break
        case .done:
            tlsPeerCertificate = tls.peerCertificate
            endHandshake(nil)
        case .failed(let failure):
            let error = LongLinkError(
                code: .tlsFailure, message: Self.message(for: failure, peer: tls.isClient ? "server" : "client"),
                underlying: failure)
            writeQueue.removeAll()
            endHandshake(error)
            closeOnLoop(.graceful, error: error)
        }
    }

    private func endHandshake(_ error: LongLinkError?) {
        if let tlsHandshakeTimer {
            eventLoop.cancelTimer(tlsHandshakeTimer)
            self.tlsHandshakeTimer = nil
        }
        let completion = tlsHandshakeCompletion
        tlsHandshakeCompletion = nil
        // Without a handler yet, reading stops here until one is installed.
        updateInterest()
        completion?(error)
    }

    /// Hands the handler what the session can decrypt now.
    func readPlaintext() {
        guard let tls, tls.isEstablished else { return }
        let buffer = eventLoop.readBuffer(size: options.readChunkSize)
        while case .open = state, let handler, !readingPaused {
            switch tls.read(into: buffer) {
            case .bytes(let count):
                callbackDepth += 1
                handler.connection(self, didRead: UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
                callbackDepth -= 1
            case .wantMore:
                queueTLSOutput()
                return
            case .closed:
                finish(reset: false, reason: nil)
                return
            case .failed(let failure):
                finish(
                    reset: false,
                    reason: LongLinkError(
                        code: .tlsFailure, message: "a TLS record could not be read: \(failure.detail)",
                        underlying: failure))
                return
            }
        }
        queueTLSOutput()
    }

    /// Plaintext may wait inside the session while there was no handler or reading was paused:
    /// deliver it soon, since the socket may have nothing more to say.
    func scheduleTLSRead() {
        eventLoop.executeLocal { [self] in
            if tls?.hasBufferedInput == true { readPlaintext() }
        }
    }

    /// Moves the session's output to the cipher queue.
    func queueTLSOutput() {
        guard let tls, tls.outputCount > 0 else { return }
        cipherQueue.append(tls.takeOutput())
        scheduleFlush()
    }

    /// Encrypts queued plaintext, a batch at a time, until the cipher queue holds `limit` bytes.
    func encryptQueued(limit: Int = Connection.cipherBatchBytes) {
        guard let tls, tls.isEstablished else { return }
        let iovecs = eventLoop.iovecs
        while !writeQueue.isEmpty && cipherQueue.count < limit {
            let (taken, failure) = writeQueue.withIOVecs(iovecs) { count, _ -> (Int, TLSFailure?) in
                var taken = 0
                for index in 0..<count {
                    let chunk = UnsafeRawBufferPointer(start: iovecs[index].iov_base, count: iovecs[index].iov_len)
                    if let failure = tls.write(chunk) { return (taken, failure) }
                    taken += chunk.count
                }
                return (taken, nil)
            }
            writeQueue.consume(taken)
            queueTLSOutput()
            if let failure {
                finish(
                    reset: false,
                    reason: LongLinkError(
                        code: .tlsFailure, message: "TLS could not encrypt: \(failure.detail)", underlying: failure))
                return
            }
        }
    }

    /// A graceful close: everything queued is encrypted, then `close_notify`.
    func prepareTLSClose() {
        guard let tls else { return }
        guard tls.isEstablished else {
            writeQueue.removeAll()
            return
        }
        encryptQueued(limit: .max)
        guard case .open = state else { return }
        tls.shutdown()
        queueTLSOutput()
    }

    static func message(for failure: TLSFailure, peer: String) -> String {
        switch failure.reason {
        case .certificateExpired: "the \(peer)'s certificate has expired"
        case .certificateNotYetValid: "the \(peer)'s certificate is not valid yet"
        case .hostnameMismatch: "the server's certificate does not name the host connected to"
        case .untrustedCertificate: "the \(peer)'s certificate is not issued by a trusted authority"
        case .invalidCertificate: "the \(peer)'s certificate is invalid: \(failure.detail)"
        case .pinMismatch: "the server's public key is not one of the pinned keys: \(failure.detail)"
        case .handshakeTimeout: "the TLS handshake timed out"
        case .plaintextPeer: "the \(peer) does not speak TLS (it answered in plain TCP)"
        case .rejectedByPeer: "the \(peer) refused the TLS handshake: \(failure.detail)"
        case .certificateRequired: "a client certificate is required and none was sent"
        case .protocolMismatch: "no TLS version or ALPN protocol both sides accept: \(failure.detail)"
        case .closedDuringHandshake: "the \(peer) closed the connection during the TLS handshake"
        case .handshakeFailed: "the TLS handshake failed: \(failure.detail)"
        case .truncated: "the \(peer) closed the connection without TLS close_notify, cutting a message short"
        case .unavailable: "TLS is not available on this platform"
        }
    }
}
