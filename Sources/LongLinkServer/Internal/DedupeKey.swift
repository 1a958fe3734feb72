/// A request's identity in the de-duplication window: (client_id, request_id), hashed once.
///
/// The window touches its table several times per request (arrive, finish, evict), so the strings
/// are hashed once, when the key is made (the client's part once per connection, see ``Client``),
/// and the table hashes and compares the stored integer first.
struct DedupeKey: Hashable, Sendable {
    /// A client_id with its hash, computed once per connection.
    struct Client: Sendable {
        let clientID: String
        let hash: Int

        init(_ clientID: String) {
            self.clientID = clientID
            self.hash = clientID.hashValue
        }
    }

    let clientID: String
    let requestID: String
    /// Both ids hashed together, seeded per process by `Hasher`, so clients cannot choose
    /// colliding ids.
    let hash: Int

    init(client: Client, requestID: String) {
        self.clientID = client.clientID
        self.requestID = requestID
        var hasher = Hasher()
        hasher.combine(client.hash)
        hasher.combine(requestID)
        self.hash = hasher.finalize()
    }

    init(clientID: String, requestID: String) {
        self.init(client: Client(clientID), requestID: requestID)
    }

    static func == (lhs: DedupeKey, rhs: DedupeKey) -> Bool {
        // The stored hash rejects almost every other key without touching the strings.
        lhs.hash == rhs.hash && lhs.requestID == rhs.requestID && lhs.clientID == rhs.clientID
    }

    func hash(into hasher: inout Hasher) {
        hasher.combine(hash)
    }
}
