import LongLinkCLISupport

/// A plain HTTP/1.1 exchange on loopback for tests of pages the project serves (the metrics page,
/// Prometheus's API): sends `request` as it is and reads until the server closes, waiting at most
/// `timeoutSeconds` for each read. Throws on a socket error.
package func httpExchange(port: Int, _ request: String, timeoutSeconds: Int = 10) throws -> String {
    let socket = try BlockingSocket(port: port, timeout: .seconds(timeoutSeconds))
    try socket.write(Array(request.utf8))
    return String(decoding: try socket.readToEnd(), as: UTF8.self)
}

/// `GET path` on loopback `port`: the whole response, head and body.
package func httpGet(port: Int, _ path: String, timeoutSeconds: Int = 10) throws -> String {
    try httpExchange(
        port: port, "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
        timeoutSeconds: timeoutSeconds)
}
