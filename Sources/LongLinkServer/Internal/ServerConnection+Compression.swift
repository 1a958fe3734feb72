internal import LongLinkTransport
internal import LongLinkWire

/// Payload compression on one connection: agreed at `Hello`, then requests inflated on arrival and
/// replies and pushes compressed on the way out.
extension ServerConnection {
    /// Agrees to compression when the client offered it and the server has it on.
    func negotiateCompression(_ hello: Frame.Hello, welcome: inout Frame.Welcome) {
        guard configuration.compression.isEnabled, PayloadCompressor.advertisesZlib(hello.metadata) else { return }
        compresses = true
        welcome.metadata[PayloadCompressor.metadataKey] = PayloadCompressor.zlibName
    }

    /// The request's payload inflated, or nil after answering `INVALID_ARGUMENT` (corrupt, larger
    /// than ``ServerConfiguration/maxFrameBytes`` once inflated, or not agreed): the link stays.
    func inflatedRequestPayload(_ request: Frame.Request) -> [UInt8]? {
        do throws(LongLinkError) {
            return try PayloadCompression.incoming(
                request.payload, compression: request.compression, negotiated: compresses,
                limit: configuration.maxFrameBytes)
        } catch {
            core.counters.requestsRejected.increment()
            sendResponse(
                Frame.Response(status: Frame.Status(code: .invalidArgument, message: error.message)),
                to: request.requestID)
            return nil
        }
    }

    /// `push` as it goes out on this connection: compressed when agreed and worth it.
    func outgoing(_ push: Frame.Push) -> Frame.Push {
        guard compresses else { return push }
        var push = push
        (push.payload, push.compression) = configuration.compression.outgoing(push.payload)
        return push
    }
}
