import LongLinkServer
import LongLinkWire
import Synchronization

/// The demo server's methods and the state behind them, shared by `longlink serve` and (later)
/// `longlink demo`.
///
/// Methods (payloads are UTF-8 text or JSON):
/// - `echo`: replies with the payload.
/// - `sleep`: payload = milliseconds as text (0 to 3,600,000); replies `slept`. Cancelling the
///   request (Cancel, timeout, shutdown) stops the sleep.
/// - `fail`: payload = `CODE:message`, CODE a number or a gRPC name (`NOT_FOUND`); replies with
///   that status. `OK` (0) replies normally with the message as payload.
/// - `login`: payload = user name (1 to 64 bytes, else `UNAUTHENTICATED`); binds the connection
///   to that principal; replies `{"user":"alice"}`.
/// - `room.enter`: `{"room":42,"user":"alice"}` (a user of 1 to 256 bytes); replies
///   `{"room":42,"members":[...]}`. The user stays in the room until `room.leave` or until the
///   connection that entered closes (a LongLink client's subscription enters again after
///   reconnecting); a room with no members left is forgotten.
/// - `room.leave`: `{"room":42,"user":"alice"}`, a membership this connection made; replies the
///   members left.
/// - `room.say`: `{"room":42,"text":"hi"}`; sends `{"room":42,"user":"alice","text":"hi"}` as a
///   reliable push on topic `room.42` to every member; replies `{"room":42,"delivered":N}`. On a
///   server of a fleet the pushes go to the shared store (`UNAVAILABLE` when it is out of reach).
/// - `quotes.subscribe`: a JSON list of symbols (logged-in connections only); replaces the
///   principal's watch list, which ``DemoFeed`` serves; replies `{"symbols":[...]}`.
///
/// State lives in memory (``DemoDirectory``): rooms, watch lists and the users that logged in,
/// each held by the connections that made it and forgotten when they close, within bounds
/// (``DemoDirectory/Limits``; past one a request is refused `RESOURCE_EXHAUSTED`). The server
/// tells the service of closed connections once ``prepare(_:)`` has wired its configuration.
final class DemoService: Sendable {
    /// The most symbols one watch list may hold.
    static let maxWatchedSymbols = 10_000

    private struct State {
        var directory: DemoDirectory
        weak var server: LongLinkServer?
    }

    private let state: Mutex<State>
    private let log: @Sendable (String) -> Void

    /// - Parameters:
    ///   - limits: The bounds of the rooms, users and watch lists held.
    ///   - log: Receives one line per notable event (a login, a room entered).
    init(limits: DemoDirectory.Limits = .init(), log: @escaping @Sendable (String) -> Void = { _ in }) {
        self.state = Mutex(State(directory: DemoDirectory(limits: limits)))
        self.log = log
    }

    /// Makes servers of `configuration` tell the service when a connection closes, so that what
    /// it held is forgotten (a callback set before is still called).
    func prepare(_ configuration: inout ServerConfiguration) {
        let earlier = configuration.connectionClosed
        configuration.connectionClosed = { [self] id in
            earlier?(id)
            connectionClosed(id)
        }
    }

    /// Forgets what connection `id` held (idempotent).
    func connectionClosed(_ id: UInt64) {
        state.withLock { $0.directory.connectionClosed(id) }
    }

    /// A copy of the rooms, users and watch lists held, with their counts and bytes.
    var directory: DemoDirectory {
        state.withLock { $0.directory }
    }

    /// Runs `record` on the directory for the connection of `context`; when that connection has
    /// closed meanwhile (a handler can outlive it), forgets what it held again, since the
    /// server's callback may have run before `record`.
    private func record<Result: Sendable>(
        for context: RequestContext, _ record: (inout DemoDirectory) throws(LongLinkError) -> Result
    ) throws(LongLinkError) -> Result {
        let result = try state.withLock { (state: inout State) throws(LongLinkError) -> Result in
            try record(&state.directory)
        }
        if !context.isConnectionOpen { connectionClosed(context.connectionID) }
        return result
    }

    /// Connects the service to the server its router runs in, for the pushes `room.say` sends.
    func attach(to server: LongLinkServer) {
        state.withLock { $0.server = server }
    }

    /// Principals logged in on an open connection, sorted.
    var loggedInPrincipals: [String] {
        state.withLock { $0.directory.loggedIn }
    }

    /// Members of `room`, sorted.
    func members(ofRoom room: Int) -> [String] {
        state.withLock { $0.directory.members(ofRoom: room) ?? [] }
    }

    /// Every logged-in principal with a non-empty watch list, sorted by principal.
    func watchLists() -> [(principal: String, symbols: [String])] {
        state.withLock { $0.directory.watchLists }
    }

    /// The router with every demo method.
    func router() -> Router {
        var router = Router()
        router.register("echo", synchronous: { payload, _ in payload })
        router.register("sleep") { payload, _ in
            let text = String(decoding: payload, as: UTF8.self)
            guard let milliseconds = Int(text), (0...3_600_000).contains(milliseconds) else {
                throw LongLinkError(code: .invalidArgument, message: "sleep expects milliseconds from 0 to 3600000")
            }
            try await Task.sleep(for: .milliseconds(milliseconds))
            return Array("slept".utf8)
        }
        router.register("fail") { payload, _ in
            let (code, message) = try Self.parseFailure(String(decoding: payload, as: UTF8.self))
            if code == .ok { return Array(message.utf8) }
            throw LongLinkError(code: .init(status: code), message: message)
        }
        router.register("login") { [self] payload, context in
            guard let user = String(validating: payload, as: UTF8.self), (1...64).contains(user.utf8.count) else {
                throw LongLinkError(code: .unauthenticated, message: "login expects a user name of 1 to 64 bytes")
            }
            // Recorded first: a login refused at a bound binds nothing.
            try record(for: context) { directory throws(LongLinkError) in
                try directory.login(user, connection: context.connectionID)
            }
            context.bind(principal: user)
            log("login \(user) (connection \(context.connectionID))")
            return try JSONPayloadCodec().encode(DemoMessages.LoginReply(user: user))
        }
        router.register("room.enter", request: DemoMessages.EnterRoom.self) { [self] request, context in
            guard !request.user.isEmpty else {
                throw LongLinkError(code: .invalidArgument, message: "room.enter needs a user")
            }
            let members = try record(for: context) { directory throws(LongLinkError) in
                try directory.enter(room: request.room, user: request.user, connection: context.connectionID)
            }
            log("\(request.user) entered room \(request.room) (\(members.count) members)")
            return DemoMessages.RoomState(room: request.room, members: members)
        }
        router.register("room.leave", request: DemoMessages.EnterRoom.self) { [self] request, context in
            let members = state.withLock { state in
                state.directory.leave(room: request.room, user: request.user, connection: context.connectionID)
            }
            return DemoMessages.RoomState(room: request.room, members: members ?? self.members(ofRoom: request.room))
        }
        router.register("room.say", request: DemoMessages.Say.self) { [self] request, context in
            guard let user = context.principal ?? request.user, !user.isEmpty else {
                throw LongLinkError(code: .unauthenticated, message: "room.say needs a login or a user")
            }
            let (members, server) = state.withLock { ($0.directory.members(ofRoom: request.room), $0.server) }
            guard let members else {
                throw LongLinkError(code: .notFound, message: "no room \(request.room)")
            }
            guard let server else {
                throw LongLinkError(code: .unavailable, message: "the demo service is not attached to a server")
            }
            let message = try JSONPayloadCodec().encode(
                DemoMessages.ChatMessage(room: request.room, user: user, text: request.text))
            var delivered = 0
            for member in members {
                do throws(LongLinkError) {
                    try await server.push(to: member, topic: "room.\(request.room)", payload: message)
                    delivered += 1
                } catch  where error.code == .invalidArgument || error.code == .unavailable {
                    // Too large for any member (JSON doubles every `/`), or the fleet's store is
                    // unreachable (every member would miss it): the speaker is told.
                    throw error
                } catch {
                    // A member whose store is full misses this message; the others still get it.
                }
            }
            return DemoMessages.SayReply(room: request.room, delivered: delivered)
        }
        router.register("quotes.subscribe", request: [String].self) { [self] symbols, context in
            guard let principal = context.principal else {
                throw LongLinkError(code: .unauthenticated, message: "log in before quotes.subscribe")
            }
            let unique = Set(symbols)
            guard unique.count <= Self.maxWatchedSymbols, unique.allSatisfy({ (1...32).contains($0.utf8.count) })
            else {
                throw LongLinkError(
                    code: .invalidArgument,
                    message: "quotes.subscribe expects at most \(Self.maxWatchedSymbols) symbols of 1 to 32 bytes")
            }
            let sorted = unique.sorted()
            try record(for: context) { directory throws(LongLinkError) in
                try directory.watch(sorted, principal: principal, connection: context.connectionID)
            }
            return DemoMessages.WatchList(symbols: sorted)
        }
        return router
    }

    /// Reads `CODE:message` (or just `CODE`), CODE a number or a gRPC name in any case.
    static func parseFailure(_ text: String) throws(LongLinkError) -> (StatusCode, String) {
        let parts = text.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
        let codeText = parts[0].trimmingWhitespace()
        let message = parts.count > 1 ? String(parts[1]) : ""
        if let number = UInt32(codeText) {
            return (StatusCode(rawValue: number), message)
        }
        let name = codeText.uppercased()
        if let code = (0...16).lazy.map({ StatusCode(rawValue: $0) }).first(where: { $0.description == name }) {
            return (code, message)
        }
        throw LongLinkError(
            code: .invalidArgument, message: "fail expects CODE:message, CODE a number or a name like NOT_FOUND")
    }
}

extension Substring {
    fileprivate func trimmingWhitespace() -> String {
        String(drop { $0.isWhitespace }.reversed().drop { $0.isWhitespace }.reversed())
    }
}
