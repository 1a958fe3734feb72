import LongLinkServer

/// The demo service's rooms, users and watch lists, each held by the connections that made it:
/// a room is forgotten when its last member leaves (by `room.leave` or with the connection that
/// entered it), a user when the last connection that logged in as it or set its watch list
/// closes. Every part is bounded; past a bound the request that would grow it is refused and
/// nothing held is dropped.
///
/// A plain value: ``DemoService`` keeps it under a lock and calls it from handlers and from the
/// server's ``ServerConfiguration/connectionClosed``.
struct DemoDirectory: Sendable {
    /// The bounds, with their defaults.
    struct Limits: Sendable {
        /// The longest user name `room.enter` takes, in UTF-8 bytes.
        var maxNameBytes = 256
        /// Rooms with at least one member.
        var maxRooms = 10_000
        /// (room, user) memberships, over every room.
        var maxMemberships = 100_000
        /// Memberships one connection holds.
        var maxMembershipsPerConnection = 1_000
        /// Users known: logged in, or with a watch list.
        var maxUsers = 10_000
        /// The UTF-8 bytes of every name held: members, users and watched symbols.
        var maxBytes = 16 << 20
    }

    /// A user in a room.
    struct Membership: Hashable, Sendable {
        var room: Int
        var user: String
    }

    private struct User {
        /// Connections logged in as the user.
        var logins = 0
        /// Connections that set its watch list.
        var watchers = 0
        var watchList: [String] = []

        var isHeld: Bool { logins > 0 || watchers > 0 }
    }

    /// What one connection holds.
    private struct Holder {
        var login: String?
        var watching: String?
        var memberships: Set<Membership> = []

        var isEmpty: Bool { login == nil && watching == nil && memberships.isEmpty }
    }

    let limits: Limits
    /// Members of each room, with how many connections hold each membership.
    private var rooms: [Int: [String: Int]] = [:]
    private var users: [String: User] = [:]
    private var holders: [UInt64: Holder] = [:]
    private var membershipCount = 0
    /// The UTF-8 bytes of the names held (see ``Limits/maxBytes``).
    private(set) var bytes = 0

    init(limits: Limits = Limits()) {
        self.limits = limits
    }

    var roomCount: Int { rooms.count }
    var userCount: Int { users.count }
    /// Connections that hold something.
    var holderCount: Int { holders.count }

    /// Members of `room`, sorted.
    func members(ofRoom room: Int) -> [String]? {
        rooms[room].map { $0.keys.sorted() }
    }

    /// Users logged in on some connection, sorted.
    var loggedIn: [String] {
        users.filter { $0.value.logins > 0 }.keys.sorted()
    }

    /// Every logged-in user with a non-empty watch list, sorted by user.
    var watchLists: [(principal: String, symbols: [String])] {
        users.filter { $0.value.logins > 0 && !$0.value.watchList.isEmpty }
            .sorted { $0.key < $1.key }
            .map { (principal: $0.key, symbols: $0.value.watchList) }
    }

    // MARK: Events

    /// `connection` logged in as `user` (replacing its previous login).
    mutating func login(_ user: String, connection: UInt64) throws(LongLinkError) {
        let previous = holders[connection]?.login
        guard previous != user else { return }
        bytes += try growth(adding: user, extraBytes: 0)
        users[user, default: User()].logins += 1
        holders[connection, default: Holder()].login = user
        if let previous { releaseLogin(of: previous) }
    }

    /// `connection` put `user` in `room`; returns the members, sorted.
    mutating func enter(room: Int, user: String, connection: UInt64) throws(LongLinkError) -> [String] {
        guard (1...limits.maxNameBytes).contains(user.utf8.count) else {
            throw LongLinkError(
                code: .invalidArgument, message: "room.enter expects a user of 1 to \(limits.maxNameBytes) bytes")
        }
        let membership = Membership(room: room, user: user)
        if holders[connection]?.memberships.contains(membership) == true {
            return rooms[room]?.keys.sorted() ?? []
        }
        if (holders[connection]?.memberships.count ?? 0) >= limits.maxMembershipsPerConnection {
            throw exhausted("\(limits.maxMembershipsPerConnection) rooms entered per connection")
        }
        if rooms[room]?[user] == nil {
            if rooms[room] == nil, rooms.count >= limits.maxRooms { throw exhausted("\(limits.maxRooms) rooms") }
            if membershipCount >= limits.maxMemberships {
                throw exhausted("\(limits.maxMemberships) room members in all")
            }
            if bytes + user.utf8.count > limits.maxBytes { throw exhausted("\(limits.maxBytes) bytes of names") }
            membershipCount += 1
            bytes += user.utf8.count
        }
        rooms[room, default: [:]][user, default: 0] += 1
        holders[connection, default: Holder()].memberships.insert(membership)
        return rooms[room, default: [:]].keys.sorted()
    }

    /// `connection` took `user` out of `room`; returns the members left (nil: the room is gone,
    /// or `connection` had not put `user` there).
    mutating func leave(room: Int, user: String, connection: UInt64) -> [String]? {
        let membership = Membership(room: room, user: user)
        guard holders[connection]?.memberships.remove(membership) != nil else { return nil }
        release(membership)
        forgetIfEmpty(connection)
        return rooms[room]?.keys.sorted()
    }

    /// `connection` set the watch list of `principal` (replacing what any connection set before).
    mutating func watch(_ symbols: [String], principal: String, connection: UInt64) throws(LongLinkError) {
        let added = symbols.reduce(0) { $0 + $1.utf8.count }
        let replaced = users[principal]?.watchList.reduce(0) { $0 + $1.utf8.count } ?? 0
        bytes += try growth(adding: principal, extraBytes: added - replaced)
        let previous = holders[connection]?.watching
        if previous != principal {
            users[principal, default: User()].watchers += 1
            holders[connection, default: Holder()].watching = principal
        }
        users[principal, default: User()].watchList = symbols
        if let previous, previous != principal { releaseWatcher(of: previous) }
    }

    /// `connection` closed: what it held goes (idempotent).
    mutating func connectionClosed(_ connection: UInt64) {
        guard let holder = holders.removeValue(forKey: connection) else { return }
        for membership in holder.memberships { release(membership) }
        if let login = holder.login { releaseLogin(of: login) }
        if let watching = holder.watching { releaseWatcher(of: watching) }
    }

    // MARK: Internals

    /// The bytes held grow by this much when `user` gets `extraBytes` more (its name too, when
    /// new); throws past ``Limits/maxUsers`` or ``Limits/maxBytes``, with nothing changed.
    private func growth(adding user: String, extraBytes: Int) throws(LongLinkError) -> Int {
        let isNew = users[user] == nil
        if isNew, users.count >= limits.maxUsers { throw exhausted("\(limits.maxUsers) users") }
        let growth = extraBytes + (isNew ? user.utf8.count : 0)
        if growth > 0, bytes + growth > limits.maxBytes { throw exhausted("\(limits.maxBytes) bytes of names") }
        return growth
    }

    private mutating func release(_ membership: Membership) {
        guard let count = rooms[membership.room]?[membership.user] else { return }
        if count > 1 {
            rooms[membership.room]?[membership.user] = count - 1
            return
        }
        rooms[membership.room]?[membership.user] = nil
        membershipCount -= 1
        bytes -= membership.user.utf8.count
        if rooms[membership.room]?.isEmpty == true { rooms[membership.room] = nil }
    }

    private mutating func releaseLogin(of user: String) {
        users[user]?.logins -= 1
        forgetIfUnheld(user)
    }

    private mutating func releaseWatcher(of user: String) {
        users[user]?.watchers -= 1
        forgetIfUnheld(user)
    }

    private mutating func forgetIfUnheld(_ user: String) {
        guard let held = users[user], !held.isHeld else { return }
        users[user] = nil
        bytes -= user.utf8.count + held.watchList.reduce(0) { $0 + $1.utf8.count }
    }

    private mutating func forgetIfEmpty(_ connection: UInt64) {
        if holders[connection]?.isEmpty == true { holders[connection] = nil }
    }

    private func exhausted(_ bound: String) -> LongLinkError {
        LongLinkError(code: .resourceExhausted, message: "the demo server holds at most \(bound)")
    }
}
