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
/// - `room.enter`: `{"room":42,"user":"alice"}`; replies `{"room":42,"members":[...]}`.
/// - `room.say`: `{"room":42,"text":"hi"}`; sends `{"room":42,"user":"alice","text":"hi"}` as a
///   reliable push on topic `room.42` to every member; replies `{"room":42,"delivered":N}`. On a
///   server of a fleet the pushes go to the shared store (`UNAVAILABLE` when it is out of reach).
/// - `quotes.subscribe`: a JSON list of symbols (logged-in connections only); replaces the
///   principal's watch list, which ``DemoFeed`` serves; replies `{"symbols":[...]}`.
///
/// State lives in memory: rooms, watch lists and the principals that logged in. The server has
/// no hook yet for a principal's last connection closing, so nothing is forgotten on disconnect
/// (pushes to a principal with no connection cost a lookup; reliable ones are stored for it).
final class DemoService: Sendable {
    /// The most symbols one watch list may hold.
    static let maxWatchedSymbols = 10_000

    private struct State {
        var loggedIn: Set<String> = []
        var rooms: [Int: Set<String>] = [:]
        var watchLists: [String: [String]] = [:]
        weak var server: LongLinkServer?
    }

    private let state = Mutex(State())
    private let log: @Sendable (String) -> Void

    /// - Parameter log: Receives one line per notable event (a login, a room entered).
    init(log: @escaping @Sendable (String) -> Void = { _ in }) {
        self.log = log
    }

    /// Connects the service to the server its router runs in, for the pushes `room.say` sends.
    func attach(to server: LongLinkServer) {
        state.withLock { $0.server = server }
    }

    /// Principals that logged in, sorted.
    var loggedInPrincipals: [String] {
        state.withLock { $0.loggedIn.sorted() }
    }

    /// Members of `room`, sorted.
    func members(ofRoom room: Int) -> [String] {
        state.withLock { $0.rooms[room]?.sorted() ?? [] }
    }

    /// Every logged-in principal with a non-empty watch list, sorted by principal.
    func watchLists() -> [(principal: String, symbols: [String])] {
        state.withLock { state in
            state.watchLists.filter { state.loggedIn.contains($0.key) && !$0.value.isEmpty }
                .sorted { $0.key < $1.key }
                .map { (principal: $0.key, symbols: $0.value) }
        }
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
            context.bind(principal: user)
            state.withLock { _ = $0.loggedIn.insert(user) }
            log("login \(user) (connection \(context.connectionID))")
            return try JSONPayloadCodec().encode(DemoMessages.LoginReply(user: user))
        }
        router.register("room.enter", request: DemoMessages.EnterRoom.self) { [self] request, _ in
            guard !request.user.isEmpty else {
                throw LongLinkError(code: .invalidArgument, message: "room.enter needs a user")
            }
            let members = state.withLock { state in
                state.rooms[request.room, default: []].insert(request.user)
                return state.rooms[request.room, default: []].sorted()
            }
            log("\(request.user) entered room \(request.room) (\(members.count) members)")
            return DemoMessages.RoomState(room: request.room, members: members)
        }
        router.register("room.say", request: DemoMessages.Say.self) { [self] request, context in
            guard let user = context.principal ?? request.user, !user.isEmpty else {
                throw LongLinkError(code: .unauthenticated, message: "room.say needs a login or a user")
            }
            let (members, server) = state.withLock { ($0.rooms[request.room], $0.server) }
            guard let members else {
                throw LongLinkError(code: .notFound, message: "no room \(request.room)")
            }
            guard let server else {
                throw LongLinkError(code: .unavailable, message: "the demo service is not attached to a server")
            }
            let message = try JSONPayloadCodec().encode(
                DemoMessages.ChatMessage(room: request.room, user: user, text: request.text))
            var delivered = 0
            for member in members.sorted() {
                do throws(LongLinkError) {
                    // publish, not push: on a server of a fleet the message goes to the shared store.
                    try await server.publish(to: member, topic: "room.\(request.room)", payload: message)
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
            state.withLock { $0.watchLists[principal] = sorted }
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
