/// One HTTP/1.x exchange of a ``MetricsEndpoint``: the request read so far and, once it is whole
/// (or cannot be), the response. A value, tested without sockets.
struct MetricsHTTPExchange {
    /// The most bytes a request's head may have; a longer one is answered 431 and closed.
    static let maxHeadBytes = 8_192

    /// What the bytes read so far call for.
    enum Outcome: Equatable {
        /// The head is not whole yet.
        case incomplete
        /// `GET` (or `HEAD`, without the body) of the metrics page.
        case page(includeBody: Bool)
        /// Anything else, answered with this status line and closed.
        case refuse(status: String)
    }

    private var head: [UInt8] = []

    /// Takes `bytes` and says what to answer, once there is something to answer.
    mutating func received(_ bytes: some Collection<UInt8>) -> Outcome {
        head.append(contentsOf: bytes)
        guard let end = Self.endOfHead(head) else {
            return head.count > Self.maxHeadBytes ? .refuse(status: "431 Request Header Fields Too Large") : .incomplete
        }
        guard end <= Self.maxHeadBytes else { return .refuse(status: "431 Request Header Fields Too Large") }
        let requestLine = head.prefix { $0 != UInt8(ascii: "\r") }
        let parts = requestLine.split(separator: UInt8(ascii: " "), omittingEmptySubsequences: false)
        guard parts.count == 3, parts[2].starts(with: Array("HTTP/1.".utf8)) else {
            return .refuse(status: "400 Bad Request")
        }
        let method = String(decoding: parts[0], as: UTF8.self)
        guard method == "GET" || method == "HEAD" else { return .refuse(status: "405 Method Not Allowed") }
        // The path, without a query string.
        let target = String(decoding: parts[1].prefix { $0 != UInt8(ascii: "?") }, as: UTF8.self)
        guard target == "/metrics" || target == "/" else { return .refuse(status: "404 Not Found") }
        return .page(includeBody: method == "GET")
    }

    /// The response's bytes: a 200 with `body` for a page, the status alone otherwise.
    static func response(to outcome: Outcome, body: String) -> [UInt8] {
        switch outcome {
        case .incomplete:
            return []
        case .page(let includeBody):
            let bytes = Array(body.utf8)
            let head =
                "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\n"
                + "Content-Length: \(bytes.count)\r\nConnection: close\r\n\r\n"
            return Array(head.utf8) + (includeBody ? bytes : [])
        case .refuse(let status):
            return Array("HTTP/1.1 \(status)\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".utf8)
        }
    }

    /// The index just past the blank line that ends the head, if it came.
    private static func endOfHead(_ bytes: [UInt8]) -> Int? {
        guard bytes.count >= 4 else { return nil }
        for index in 3..<bytes.count
        where bytes[index] == 10 && bytes[index - 1] == 13 && bytes[index - 2] == 10 && bytes[index - 3] == 13 {
            return index + 1
        }
        return nil
    }
}
