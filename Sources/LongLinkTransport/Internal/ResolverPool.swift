import Dispatch
import LongLinkCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The threads that run `getaddrinfo`: started on demand, at most ``maximumThreads``, idle ones wait on a
/// semaphore. A slow lookup holds one thread; others keep going on the rest.
final class ResolverPool: Sendable {
    static let shared = ResolverPool()

    static let maximumThreads = 4

    typealias Completion = @Sendable (Result<[SocketAddress], LongLinkError>) -> Void

    private struct Request: Sendable {
        var host: String
        var port: Int
        var completion: Completion
    }

    private struct State {
        var queue: [Request] = []
        var head = 0
        var threads = 0
        var idle = 0
    }

    private let state = Locked(State())
    private let available = DispatchSemaphore(value: 0)

    /// Resolves `host` on a resolver thread and calls `completion` there.
    func lookup(host: String, port: Int, completion: @escaping Completion) {
        let request = Request(host: host, port: port, completion: completion)
        let startThread = state.withLock { state -> Bool in
            state.queue.append(request)
            guard state.idle == 0, state.threads < Self.maximumThreads else {
                return false
            }
            state.threads += 1
            state.idle += 1
            return true
        }
        if startThread {
            spawnThread(name: "longlink-dns") { [self] in
                work()
            }
        }
        available.signal()
    }

    private func work() {
        while true {
            available.wait()
            let request = state.withLock { state -> Request? in
                guard state.head < state.queue.count else {
                    return nil
                }
                let request = state.queue[state.head]
                state.head += 1
                if state.head == state.queue.count {
                    state.queue.removeAll(keepingCapacity: true)
                    state.head = 0
                }
                state.idle -= 1
                return request
            }
            guard let request else {
                continue
            }
            request.completion(Self.getAddresses(host: request.host, port: request.port))
            state.withLock { $0.idle += 1 }
        }
    }

    /// A blocking `getaddrinfo` for TCP addresses of `host`.
    static func getAddresses(host: String, port: Int) -> Result<[SocketAddress], LongLinkError> {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Sys.streamType
        hints.ai_flags = AI_NUMERICSERV
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &list)
        guard status == 0 else {
            let reason: String
            var cause: (any Error & Sendable)? = nil
            if status == EAI_SYSTEM {
                let code = errno
                reason = Sys.describe(errno: code)
                cause = SystemCallError(errno: code, function: "getaddrinfo")
            } else {
                reason = gai_strerror(status).map { String(cString: $0) } ?? "error \(status)"
            }
            return .failure(
                LongLinkError(
                    code: .addressResolutionFailed, message: "cannot resolve \"\(host)\": \(reason)",
                    underlying: cause))
        }
        defer { freeaddrinfo(list) }
        var addresses: [SocketAddress] = []
        var entry = list
        while let current = entry {
            if let pointer = current.pointee.ai_addr,
                let address = SocketAddress(pointer, length: current.pointee.ai_addrlen),
                !addresses.contains(address)
            {
                addresses.append(address)
            }
            entry = current.pointee.ai_next
        }
        guard !addresses.isEmpty else {
            return .failure(
                LongLinkError(code: .addressResolutionFailed, message: "\"\(host)\" has no IPv4 or IPv6 address"))
        }
        return .success(addresses)
    }
}
