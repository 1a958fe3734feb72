import LongLinkCore

/// Resolves host names to addresses.
///
/// Numeric hosts are parsed on the spot; names go to `getaddrinfo` on the resolver's own threads (a few,
/// started on demand), never on the Swift cooperative pool or Dispatch's global queues, since `getaddrinfo`
/// blocks.
public enum Resolver {
    /// The addresses of `host` (a name or a numeric IPv4/IPv6 address) for TCP, in the order the system
    /// prefers them, without duplicates.
    ///
    /// Throws ``LongLinkCore/LongLinkError/Code-swift.struct/addressResolutionFailed`` when the name does not
    /// resolve, ``LongLinkCore/LongLinkError/Code-swift.struct/invalidConfiguration`` for a port outside
    /// `0...65535`, and ``LongLinkCore/LongLinkError/Code-swift.struct/cancelled`` when the calling task is
    /// cancelled (the lookup itself runs to its end in the background).
    public static func resolve(host: String, port: Int) async throws(LongLinkError) -> [SocketAddress] {
        guard (0...65535).contains(port) else {
            throw LongLinkError(code: .invalidConfiguration, message: "port \(port) is outside 0...65535")
        }
        if let literal = SocketAddress(ipAddress: host, port: port) {
            return [literal]
        }
        let result = OneShot<Result<[SocketAddress], LongLinkError>>()
        let addresses = await withTaskCancellationHandler {
            ResolverPool.shared.lookup(host: host, port: port) { result.resume($0) }
            return await result.value()
        } onCancel: {
            result.resume(.failure(.taskCancelled("resolving \(host)")))
        }
        return try addresses.get()
    }
}
