internal import LongLinkTransport
internal import LongLinkWire

/// Payload compression on one connection: agreed at `Hello`, then requests inflated once admitted and
/// replies and pushes compressed on the way out.
extension ServerConnection {
    /// Agrees to compression when the client offered it and the server has it on.
    func negotiateCompression(_ hello: Frame.Hello, welcome: inout Frame.Welcome) {
        guard configuration.compression.isEnabled, PayloadCompressor.advertisesZlib(hello.metadata) else { return }
        compresses = true
        welcome.metadata[PayloadCompressor.metadataKey] = PayloadCompressor.zlibName
    }

    /// The admitted request with its payload inflated within `limit`, or nil after answering it:
    /// `RESOURCE_EXHAUSTED` past the limit (inflating stopped there), `INVALID_ARGUMENT` when the
    /// payload is corrupt or compression was not agreed. The link stays either way.
    func inflatedRequest(_ request: Frame.Request, within limit: InflationLimit) -> Frame.Request? {
        let status: Frame.Status
        do throws(InflationError) {
            var request = request
            request.payload = try PayloadCompression.incoming(
                request.payload, compression: request.compression, negotiated: compresses, within: limit)
            request.compression = 0
            return request
        } catch {
            switch error {
            case .exceeded(let limit): status = Frame.Status(code: .resourceExhausted, message: limit.exceededMessage)
            case .invalid(let error): status = Frame.Status(code: .invalidArgument, message: error.message)
            }
        }
        core.counters.requestsRejected.increment()
        sendResponse(Frame.Response(status: status), to: request.requestID)
        return nil
    }

    /// `push` as it goes out on this connection: compressed when agreed and worth it.
    func outgoing(_ push: Frame.Push) -> Frame.Push {
        guard compresses else { return push }
        var push = push
        (push.payload, push.compression) = configuration.compression.outgoing(push.payload)
        return push
    }
}
