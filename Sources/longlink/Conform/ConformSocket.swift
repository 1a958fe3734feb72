import LongLinkCLISupport
import LongLinkTransport
import LongLinkWire

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A plain POSIX stream socket for `longlink conform`: raw bytes out, frames in, and every wait
/// bounded by `poll`, so that a server that stops answering can fail a rule but never hang it.
///
/// Deliberately not LongLink's transport: the checker must send what a conforming client never
/// would (a frame split at a chosen byte, a length prefix without its body, bad field numbers),
/// and must see exactly what the server wrote. One socket per connection of one rule; not shared
/// between tasks.
final class ConformSocket {
    /// What one wait for the server produced.
    enum Event: Equatable {
        /// A whole frame (an empty or unknown one decodes as `.unrecognized`).
        case frame(Frame)
        /// The server closed its side (or reset the connection): no frame will follow.
        case closed(String)
        /// Nothing complete arrived within the wait.
        case timedOut
        /// The server sent bytes that do not decode as frames.
        case malformed(String)
    }

    private let descriptor: Int32
    private var decoder = FrameDecoder()
    private var ended: String?

    private init(descriptor: Int32) {
        self.descriptor = descriptor
    }

    deinit {
        close(descriptor)
    }

    /// Connects to `endpoint` (TCP or a Unix-domain socket) within `timeout`.
    static func connect(to endpoint: Endpoint, within timeout: Duration) throws(ConformFailure) -> ConformSocket {
        switch endpoint {
        case .tcp(let host, let port):
            var hints = addrinfo()
            hints.ai_family = AF_UNSPEC
            #if canImport(Glibc)
                hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
            #else
                hints.ai_socktype = SOCK_STREAM
            #endif
            hints.ai_flags = AI_NUMERICSERV
            var list: UnsafeMutablePointer<addrinfo>?
            let status = getaddrinfo(host, String(port), &hints, &list)
            guard status == 0, let first = list else {
                let reason = gai_strerror(status).map { String(cString: $0) } ?? "error \(status)"
                throw ConformFailure("cannot resolve \(host): \(reason)")
            }
            defer { freeaddrinfo(list) }
            var lastProblem = "no address"
            var entry: UnsafeMutablePointer<addrinfo>? = first
            while let current = entry {
                entry = current.pointee.ai_next
                guard let address = current.pointee.ai_addr else { continue }
                do {
                    return try open(
                        family: current.pointee.ai_family, address: address, length: current.pointee.ai_addrlen,
                        within: timeout)
                } catch {
                    lastProblem = error.message
                }
            }
            throw ConformFailure("cannot connect to \(endpoint): \(lastProblem)")
        case .unix(let path):
            var address = sockaddr_un()
            address.sun_family = sa_family_t(AF_UNIX)
            let bytes = Array(path.utf8)
            let capacity = MemoryLayout.size(ofValue: address.sun_path)
            guard bytes.count < capacity else { throw ConformFailure("socket path too long: \(path)") }
            withUnsafeMutableBytes(of: &address.sun_path) { raw in
                raw.copyBytes(from: bytes)
                raw[bytes.count] = 0
            }
            do {
                return try withUnsafePointer(to: &address) { pointer throws(ConformFailure) in
                    try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { (raw) throws(ConformFailure) in
                        try open(
                            family: AF_UNIX, address: raw, length: socklen_t(MemoryLayout<sockaddr_un>.size),
                            within: timeout)
                    }
                }
            } catch {
                throw ConformFailure("cannot connect to \(endpoint): \(error.message)")
            }
        }
    }

    /// A non-blocking socket of `family` connected to `address`, or the reason it is not.
    private static func open(
        family: Int32, address: UnsafePointer<sockaddr>, length: socklen_t, within timeout: Duration
    ) throws(ConformFailure) -> ConformSocket {
        #if canImport(Glibc)
            let descriptor = socket(family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        #else
            let descriptor = socket(family, SOCK_STREAM, 0)
        #endif
        guard descriptor >= 0 else { throw ConformFailure("socket: \(Self.errorText())") }
        let socket = ConformSocket(descriptor: descriptor)
        _ = fcntl(descriptor, F_SETFL, fcntl(descriptor, F_GETFL) | O_NONBLOCK)
        #if canImport(Darwin)
            var one: Int32 = 1
            _ = setsockopt(descriptor, SOL_SOCKET, SO_NOSIGPIPE, &one, socklen_t(MemoryLayout<Int32>.size))
        #endif
        if family != AF_UNIX {
            var one: Int32 = 1
            _ = setsockopt(descriptor, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        }
        if systemConnect(descriptor, address, length) != 0 {
            guard errno == EINPROGRESS else { throw ConformFailure(Self.errorText()) }
            guard socket.wait(for: Int16(POLLOUT), until: .now + timeout) else {
                throw ConformFailure("no connection within \(DurationText.format(timeout))")
            }
            var problem: Int32 = 0
            var size = socklen_t(MemoryLayout<Int32>.size)
            _ = getsockopt(descriptor, SOL_SOCKET, SO_ERROR, &problem, &size)
            guard problem == 0 else { throw ConformFailure(String(cString: strerror(problem))) }
        }
        return socket
    }

    /// Writes every byte of `bytes`, waiting for room at most until `deadline`.
    func send(_ bytes: [UInt8], until deadline: ContinuousClock.Instant) throws(ConformFailure) {
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes { raw in
                #if canImport(Glibc)
                    Glibc.send(descriptor, raw.baseAddress! + offset, raw.count - offset, Int32(MSG_NOSIGNAL))
                #else
                    Darwin.send(descriptor, raw.baseAddress! + offset, raw.count - offset, 0)
                #endif
            }
            if written >= 0 {
                offset += written
            } else if errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR {
                guard wait(for: Int16(POLLOUT), until: deadline) else {
                    throw ConformFailure("the server read nothing for too long (a write could not finish)")
                }
            } else {
                throw ConformFailure("write failed: \(Self.errorText())")
            }
        }
    }

    /// Writes `frames` in one write, each with its length prefix.
    func send(_ frames: [Frame], until deadline: ContinuousClock.Instant) throws(ConformFailure) {
        var bytes: [UInt8] = []
        for frame in frames { frame.encodeDelimited(into: &bytes) }
        try send(bytes, until: deadline)
    }

    /// Closes the write side: the server reads end of stream.
    func shutdownWrite() {
        _ = shutdown(descriptor, Int32(SHUT_WR))
    }

    /// The next frame from the server, or why there is none, waiting at most until `deadline`.
    func next(until deadline: ContinuousClock.Instant) -> Event {
        while true {
            do {
                if let frame = try decoder.next() { return .frame(frame) }
            } catch {
                return .malformed("\(error)")
            }
            if let ended { return .closed(ended) }
            guard wait(for: Int16(POLLIN), until: deadline) else { return .timedOut }
            var chunk = [UInt8](repeating: 0, count: 64 * 1024)
            let count = chunk.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
            if count > 0 {
                chunk.withUnsafeBytes { decoder.append(UnsafeRawBufferPointer(rebasing: $0[..<count])) }
            } else if count == 0 {
                ended = decoder.bufferedByteCount > 0 ? "closed in the middle of a frame" : "closed"
            } else if errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR {
                ended = "closed (\(Self.errorText()))"
            }
        }
    }

    /// Waits for `events` on the socket until `deadline`; false when the deadline passed first.
    private func wait(for events: Int16, until deadline: ContinuousClock.Instant) -> Bool {
        while true {
            let left = deadline - .now
            guard left > .zero else { return false }
            let (seconds, attoseconds) = min(left, .seconds(60)).components
            let milliseconds = max(1, Int32(seconds * 1000 + attoseconds / 1_000_000_000_000_000))
            var entry = pollfd(fd: descriptor, events: events, revents: 0)
            let ready = poll(&entry, 1, milliseconds)
            if ready > 0 { return true }
            if ready < 0 && errno != EINTR { return true }
        }
    }

    private static func errorText() -> String {
        String(cString: strerror(errno))
    }
}

/// `connect(2)`, named apart from ``ConformSocket/connect(to:within:)``.
private func systemConnect(_ descriptor: Int32, _ address: UnsafePointer<sockaddr>, _ length: socklen_t)
    -> Int32
{
    #if canImport(Glibc)
        Glibc.connect(descriptor, address, length)
    #else
        Darwin.connect(descriptor, address, length)
    #endif
}
