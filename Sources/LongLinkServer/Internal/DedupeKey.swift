internal import LongLinkWire

/// A request's identity in the de-duplication window: (principal, client_id, request_id), hashed
/// once.
///
/// The principal is part of the key because client ids are chosen by clients and prove nothing:
/// a reply stored for one principal is never found by a connection bound to another, and an id
/// another principal sent first never answers the owner's request.
///
/// All three are compared and hashed by their UTF-8 bytes, as principals are everywhere (see
/// ``PrincipalKey``, whose byte rule serves any name): Swift's `String` equality is canonical
/// equivalence, under which "\u{E9}" and "e\u{301}" would be one client, though the wire, the
/// client and Redis see two.
///
/// The window touches its table several times per request (arrive, finish, evict), so the strings
/// are hashed once, when the key is made (the client's part once per binding, see ``Client``),
/// and the table hashes and compares the stored integer first.
struct DedupeKey: Hashable, Sendable {
    /// A client_id and the principal its connection is bound to, with their hash, computed once
    /// per connection and binding. The unit that owns a share of the window.
    struct Client: Hashable, Sendable {
        let clientID: String
        /// Nil on a connection no login has bound (whose requests the server does not
        /// de-duplicate).
        let principal: String?
        let hash: Int

        init(_ clientID: String, principal: String? = nil) {
            self.clientID = clientID
            self.principal = principal
            var hasher = Hasher()
            hasher.combine(PrincipalKey(clientID))
            hasher.combine(principal.map(PrincipalKey.init))
            self.hash = hasher.finalize()
        }

        static func == (lhs: Client, rhs: Client) -> Bool {
            lhs.hash == rhs.hash && PrincipalKey.same(lhs.clientID, rhs.clientID)
                && PrincipalKey.same(lhs.principal, rhs.principal)
        }

        func hash(into hasher: inout Hasher) {
            hasher.combine(hash)
        }
    }

    let client: Client
    let requestID: String
    /// The client's hash and the request id hashed together, seeded per process by `Hasher`, so
    /// clients cannot choose colliding ids.
    let hash: Int

    var clientID: String { client.clientID }

    init(client: Client, requestID: String) {
        self.client = client
        self.requestID = requestID
        var hasher = Hasher()
        hasher.combine(client.hash)
        hasher.combine(PrincipalKey(requestID))
        self.hash = hasher.finalize()
    }

    init(clientID: String, principal: String? = nil, requestID: String) {
        self.init(client: Client(clientID, principal: principal), requestID: requestID)
    }

    static func == (lhs: DedupeKey, rhs: DedupeKey) -> Bool {
        // The stored hash rejects almost every other key without touching the strings.
        lhs.hash == rhs.hash && PrincipalKey.same(lhs.requestID, rhs.requestID) && lhs.client == rhs.client
    }

    func hash(into hasher: inout Hasher) {
        hasher.combine(hash)
    }
}
