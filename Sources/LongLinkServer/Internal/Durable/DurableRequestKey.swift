/// A request's identity in the durable de-dup window, as the bytes the file compares: the
/// principal (`p` then its name; empty for a connection without a login, all of which share one
/// budget), the `client_id` and the `request_id`.
struct DurableRequestKey: Sendable, Hashable {
    let principal: [UInt8]
    let clientID: [UInt8]
    let requestID: [UInt8]

    init(principal: String?, clientID: String, requestID: String) {
        self.principal = principal.map { [UInt8(ascii: "p")] + Array($0.utf8) } ?? []
        self.clientID = Array(clientID.utf8)
        self.requestID = Array(requestID.utf8)
    }

    /// A key as the file holds it.
    init(stored principal: [UInt8], _ clientID: [UInt8], _ requestID: [UInt8]) {
        self.principal = principal
        self.clientID = clientID
        self.requestID = requestID
    }

    /// The bytes an entry is charged before its reply: its three names.
    var charge: Int64 { Int64(principal.count + clientID.count + requestID.count) }
}
