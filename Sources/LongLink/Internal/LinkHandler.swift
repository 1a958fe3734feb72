internal import LongLinkTransport
internal import LongLinkWire

/// The transport's view of one link: decodes what arrives and hands it to the core, on the event
/// loop the core runs on, without a hop.
final class LinkHandler: ConnectionHandler {
    private let core: ClientCore
    private let generation: UInt64
    private var decoder: FrameDecoder

    init(core: ClientCore, generation: UInt64, maxFrameBytes: Int) {
        self.core = core
        self.generation = generation
        self.decoder = FrameDecoder(maxFrameBytes: maxFrameBytes)
    }

    func connection(_ connection: Connection, didRead bytes: UnsafeRawBufferPointer) {
        var frames: [Frame] = []
        var failure: WireFormatError?
        do {
            try decoder.decode(bytes, into: &frames)
        } catch {
            failure = error
        }
        let generation = self.generation
        core.assumeIsolated { core in
            // The frames decoded before a malformed one still count.
            core.linkReceived(generation, frames)
            if let failure { core.linkViolated(generation, failure) }
        }
    }

    func connectionWritabilityChanged(_ connection: Connection) {
        let generation = self.generation
        core.assumeIsolated { $0.linkWritabilityChanged(generation) }
    }

    func connection(_ connection: Connection, didCloseWith error: LongLinkError?) {
        let generation = self.generation
        core.assumeIsolated { $0.linkClosed(generation, error) }
    }
}
