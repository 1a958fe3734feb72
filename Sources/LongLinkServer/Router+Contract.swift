/// Routes declared by the shared contract: a ``LongLinkRequest`` type names its method, and its
/// handler takes the request and returns the reply, decoded and encoded with the server's
/// ``ServerConfiguration/codec``.
extension Router {
    /// Registers `handler` for `R`'s method (``LongLinkRequest/method``), replacing any earlier
    /// route of that name: the payload is decoded as `R` and the reply encoded, both with the
    /// server's ``ServerConfiguration/codec`` (or `R`'s own binary encoding). It runs in a task of its
    /// own, as ``register(_:handler:)-(String,_)`` does.
    ///
    /// ```swift
    /// router.register(EnterRoom.self) { request, context in
    ///     try await rooms.enter(request.room, as: request.user)   // an EnterRoom.Reply
    /// }
    /// ```
    ///
    /// A payload that does not decode is answered ``LongLinkError/Code-swift.struct/invalidArgument``
    /// naming the method and the type (the handler does not run); a reply that does not encode,
    /// ``LongLinkError/Code-swift.struct/internalError``; a type the server cannot read or write (not
    /// `Decodable`, say), ``LongLinkError/Code-swift.struct/unimplemented``.
    public mutating func register<R: LongLinkRequest>(
        _ request: R.Type, handler: @escaping @Sendable (_ request: R, _ context: RequestContext) async throws -> R.Reply
    ) {
        register(R.method, handler: { payload, context in
            let codec = context.codec
            let reply = try await handler(try Self.decodedRequest(R.self, payload, codec), context)
            return try Self.encodedReply(R.self, reply, codec)
        })
    }

    /// Registers `handler` for `R`'s method as ``register(_:handler:)-(R.Type,_)`` does, for a handler
    /// that answers without suspending: it runs inline on the connection's event loop, as
    /// ``register(_:synchronous:)-(String,_)`` does.
    public mutating func register<R: LongLinkRequest>(
        _ request: R.Type,
        synchronous handler: @escaping @Sendable (_ request: R, _ context: RequestContext) throws -> R.Reply
    ) {
        register(R.method, synchronous: { payload, context in
            let codec = context.codec
            return try Self.encodedReply(R.self, try handler(try Self.decodedRequest(R.self, payload, codec), context), codec)
        })
    }

    /// `payload` as an `R`, or the error the caller gets.
    private static func decodedRequest<R: LongLinkRequest>(
        _ type: R.Type, _ payload: [UInt8], _ codec: any PayloadCodec
    ) throws(LongLinkError) -> R
    {
        do {
            return try R.decodePayload(payload, with: codec)
        } catch let error as LongLinkError where error.code == .unimplemented {
            throw error
        } catch {
            // The codec's error may quote the payload: it stays here.
            throw LongLinkError(
                code: .invalidArgument, message: "the payload of \(R.method) does not decode as \(R.self)")
        }
    }

    /// `reply`'s payload, or the error the caller gets.
    private static func encodedReply<R: LongLinkRequest>(_ type: R.Type, _ reply: R.Reply, _ codec: any PayloadCodec)
        throws(LongLinkError) -> [UInt8]
    {
        do {
            return try R.encodeReply(reply, with: codec)
        } catch let error as LongLinkError where error.code == .unimplemented {
            throw error
        } catch {
            throw LongLinkError(code: .internalError, message: "the reply of \(R.method) does not encode")
        }
    }
}

extension RequestContext {
    /// ``ServerConfiguration/codec``: what typed routes decode requests and encode replies with.
    var codec: any PayloadCodec { session.core.configuration.codec }
}
