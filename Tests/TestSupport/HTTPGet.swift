#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A plain HTTP/1.1 exchange on loopback for tests of pages the project serves (the metrics page,
/// Prometheus's API): sends `request` as it is and reads until the server closes, waiting at most
/// `timeoutSeconds` for each read. Throws on a socket error.
package func httpExchange(port: Int, _ request: String, timeoutSeconds: Int = 10) throws -> String {
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }
    #if canImport(Glibc)
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    #else
        let fd = socket(AF_INET, SOCK_STREAM, 0)
    #endif
    guard fd >= 0 else { throw Failure(description: "socket: errno \(errno)") }
    defer { close(fd) }
    var timeout = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let connected = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
        }
    }
    guard connected == 0 else { throw Failure(description: "connect to port \(port): errno \(errno)") }
    let bytes = Array(request.utf8)
    var sent = 0
    while sent < bytes.count {
        let n = bytes[sent...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, 0) }
        guard n > 0 else { throw Failure(description: "send: errno \(errno)") }
        sent += n
    }
    var received: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65_536)
    while true {
        let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if n == 0 { break }
        guard n > 0 else { throw Failure(description: "recv: errno \(errno) after \(received.count) bytes") }
        received += buffer[0..<n]
    }
    return String(decoding: received, as: UTF8.self)
}

/// `GET path` on loopback `port`: the whole response, head and body.
package func httpGet(port: Int, _ path: String, timeoutSeconds: Int = 10) throws -> String {
    try httpExchange(
        port: port, "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
        timeoutSeconds: timeoutSeconds)
}
