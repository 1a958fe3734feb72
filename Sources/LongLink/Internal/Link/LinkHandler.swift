internal import LongLinkTransport
internal import LongLinkWire

/// The transport's view of one link: decodes what arrives and hands it, on the event loop the core
/// runs on and without a hop, to the ``PendingLink`` that shakes hands and then to the core.
final class LinkHandler: ConnectionHandler {
    private enum Sink {
        case pending(PendingLink)
        case core(ClientCore, generation: UInt64)
    }

    private var sink: Sink
    private var decoder: FrameDecoder

    /// The only map a client decodes is `Welcome.metadata`, which carries a few short values: a
    /// server sending more is broken or hostile, and its frame is a protocol violation.
    static let decodingLimits = Frame.DecodingLimits(maxMapEntries: 128, maxMapBytes: 64 << 10)

    init(pending: PendingLink, maxFrameBytes: Int) {
        self.sink = .pending(pending)
        self.decoder = FrameDecoder(maxFrameBytes: maxFrameBytes, limits: Self.decodingLimits)
    }

    /// The core took the link: what arrives from now on is its.
    func attach(core: ClientCore, generation: UInt64) {
        sink = .core(core, generation: generation)
    }

    func connection(_ connection: Connection, didRead bytes: UnsafeRawBufferPointer) {
        var frames: [Frame] = []
        var failure: WireFormatError?
        do {
            try decoder.decode(bytes, into: &frames)
        } catch {
            failure = error
        }
        switch sink {
        case .pending(let pending):
            pending.assumeIsolated { $0.received(frames, failure: failure) }
        case .core(let core, let generation):
            core.assumeIsolated { core in
                // The frames decoded before a malformed one still count.
                core.linkReceived(generation, frames)
                if let failure { core.linkViolated(generation, failure) }
            }
        }
    }

    func connectionWritabilityChanged(_ connection: Connection) {
        guard case .core(let core, let generation) = sink else { return }
        core.assumeIsolated { $0.linkWritabilityChanged(generation) }
    }

    func connection(_ connection: Connection, didCloseWith error: LongLinkError?) {
        var error = error
        // Without close_notify, an end between frames reads as a clean close (servers that exit
        // often skip it); in the middle of a frame, the frame was cut short.
        if error == nil, connection.tlsEndedWithoutCloseNotify, decoder.bufferedByteCount > 0 {
            error = Connection.truncatedError(peer: "server")
        }
        switch sink {
        case .pending(let pending):
            pending.assumeIsolated { $0.closed(error) }
        case .core(let core, let generation):
            core.assumeIsolated { $0.linkClosed(generation, error) }
        }
    }
}
