// ChatRoom: a live-room client in one file. `enterRoom` and `say` read like HTTP calls; room
// messages are reliable pushes, so a message sent while this app was away is delivered when it
// comes back. Restart the server while it runs: the client reconnects, logs in, enters the room
// again, and messages typed meanwhile wait in its queue and go out once the link is back.
//
//   swift run longlink serve --port 7000        (repository root, another terminal)
//   swift run ChatRoom --user alice --room 42   (this folder; type lines, Ctrl-D to leave)

import Foundation
import LongLink

// MARK: - Messages (the demo server's JSON)

/// `room.enter`: join a room. Its reply is the room with its members.
struct EnterRoom: LongLinkRequest, Encodable {
    typealias Reply = Room
    static let method = "room.enter"

    var room: Int
    var user: String
}

/// A room and who is in it.
struct Room: Decodable, Sendable {
    var room: Int
    var members: [String]
}

/// `room.say`: send a message to everyone in the room (the sender included).
struct Say: LongLinkRequest, Encodable {
    typealias Reply = SayReceipt
    static let method = "room.say"

    var room: Int
    var text: String
}

/// How many members the server stored the message for.
struct SayReceipt: Decodable, Sendable {
    var room: Int
    var delivered: Int
}

/// A message in a room: a reliable push on topic `room.<id>`.
struct ChatMessage: Decodable, Sendable {
    var room: Int
    var user: String
    var text: String
}

// MARK: - The app's API, written once on top of the client

extension LongLinkClient {
    /// Enters a room; suspends until the server's reply for this very request (or its timeout).
    /// The room stays entered: the client sends the request again after every reconnect,
    /// failover or migration (before queued messages), and each new reply arrives in `replays`.
    func enterRoom(_ request: EnterRoom) async throws -> LongLinkSubscription<Room> {
        try await subscribe(request)
    }

    /// Sends a message; while offline it waits in the client's queue, within its timeout.
    func say(_ text: String, in room: Int) async throws -> SayReceipt {
        try await send(Say(room: room, text: text), options: RequestOptions(timeout: .seconds(30)))
    }

    /// The room's messages, in order, each once; acknowledged after the loop has taken it.
    func messages(in room: Int) -> some AsyncSequence<ChatMessage, Never> {
        pushes(topic: "room.\(room)", as: ChatMessage.self)
    }
}

// MARK: - The program

@main
struct ChatRoom {
    static func main() async {
        var endpoint = Endpoint.tcp(host: "127.0.0.1", port: 7000)
        var user = "alice"
        var room = 42
        var arguments = CommandLine.arguments.dropFirst()
        func value<T>(_ parse: (String) -> T?) -> T {
            guard let text = arguments.popFirst(), let value = parse(text) else { usage() }
            return value
        }
        while let argument = arguments.popFirst() {
            switch argument {
            case "--endpoint": endpoint = value(Endpoint.init(parsing:))
            case "--user": user = value { $0 }
            case "--room": room = value { Int($0) }
            default: usage()
            }
        }
        do {
            try await run(endpoint: endpoint, user: user, room: room)
        } catch {
            print("ChatRoom stopped: \(error)")
            exit(1)
        }
    }

    /// Enters the room and relays messages both ways until standard input ends. `withLongLinkClient`
    /// runs its closure in the caller's isolation (its `isolation:` parameter), so main-actor code
    /// may call it too.
    static func run(endpoint: Endpoint, user: String, room: Int) async throws {
        var configuration = ClientConfiguration(endpoints: [endpoint])
        configuration.clientID = "chat-room-\(user)"
        // After every connect, before queued messages go out: log in (the room is entered again
        // right after, in case the server restarted and forgot its members).
        configuration.login = { session in
            _ = try await session.request("login", payload: Array(user.utf8))
        }

        try await withLongLinkClient(configuration: configuration) { client in
            let joined = try await client.enterRoom(EnterRoom(room: room, user: user))
            print("in room \(joined.room) with \(joined.members.joined(separator: ", ")); type a message")

            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    for await message in client.messages(in: room) { print("[\(message.user)] \(message.text)") }
                }
                group.addTask {
                    for await state in client.connectionStates where state.phase != .connected {
                        print("(link: \(state))")
                    }
                }
                group.addTask {
                    for await replay in joined.replays {
                        if case .success(let now) = replay { print("(back in the room with \(now.members.count))") }
                    }
                }
                for await line in standardInputLines() where !line.isEmpty {
                    do {
                        _ = try await client.say(line, in: room)
                    } catch let error as LongLinkError {
                        // A timeout, or `connectionLost`: the message may or may not have arrived.
                        print("(not sent: \(error))")
                    }
                }
                // Input ended: give our last messages a moment to come back as pushes, then leave.
                try await Task.sleep(for: .seconds(1))
                group.cancelAll()
            }
        }
    }

    /// Lines typed on standard input. `readLine()` blocks, so it runs on a thread of its own.
    static func standardInputLines() -> AsyncStream<String> {
        AsyncStream { continuation in
            Thread.detachNewThread {
                while let line = readLine() { continuation.yield(line) }
                continuation.finish()
            }
        }
    }

    static func usage() -> Never {
        print("usage: ChatRoom [--endpoint HOST:PORT] [--user NAME] [--room ID]")
        exit(2)
    }
}
