import LongLink
import LongLinkServer
import LongLinkTestSupport
import LongLinkTesting
import Testing

@testable import LongLinkRedis

/// The claims of a fleet's shared de-dup window follow their owner: a stopped server's requests are
/// answered `UNKNOWN` within its lease, a live server's claims outlive their first term, and a
/// stored reply answers only the method it was stored for. Real Redis, real servers, real clients.
@Suite(.enabled(if: RedisServerProcess.testsEnabled), .timeLimit(.minutes(2)))
struct FleetClaimTests {
    /// `slow` with `name` under a 20 s deadline, from `client`; its error code, nil on success.
    private func slowCall(
        _ client: LongLinkClient, _ name: String, idempotent: Bool = false
    ) -> Task<Result<[UInt8], LongLinkError>, any Error> {
        Task {
            try await within(.seconds(25), "the call to end") { () async -> Result<[UInt8], LongLinkError> in
                do {
                    return .success(
                        try await client.request(
                            "slow", payload: bytes(name),
                            options: RequestOptions(timeout: .seconds(20), idempotent: idempotent)))
                } catch {
                    return .failure(error as? LongLinkError ?? LongLinkError(code: .internalError, message: "\(error)"))
                }
            }
        }
    }

    /// The code `call` failed with; nil when it succeeded or threw something else.
    private func code(of call: () async throws -> [UInt8]) async -> LongLinkError.Code? {
        do {
            _ = try await call()
            return nil
        } catch {
            return (error as? LongLinkError)?.code
        }
    }

    /// s0 crashes (``LongLinkTestServer/crash()``: connections reset, handlers cancelled, the lease
    /// no longer renewed, as after `kill -9` of a process) 1 s into a 3 s request with a 20 s
    /// deadline. The resend on s1 finds s0's claim, sees s0's lease end and answers `UNKNOWN`:
    /// the caller has `outcomeUnknown` within 5 s of the crash, and the request ran once.
    @Test func aCrashedServersRequestIsAnsweredOutcomeUnknownWithinFiveSeconds() async throws {
        try await withRedisServer { redis in
            let fleet = try await RedisFleet.start(on: redis, slowFor: .seconds(3))
            try await onFirstServer(fleet, as: "cy") { (client: LongLinkClient) async throws in
                let call = slowCall(client, "crash")
                #expect(try await fleet.events.next(within: .seconds(10)) == "started crash on s0")
                let crashed = ContinuousClock.now
                await fleet.members[0].crash()
                let outcome = try await call.value
                #expect(ContinuousClock.now - crashed < .seconds(5))
                guard case .failure(let error) = outcome else {
                    Issue.record("the call succeeded: \(outcome)")
                    return
                }
                #expect(error.code == .outcomeUnknown)
                #expect(error.message == "the server running this request stopped; it may or may not have taken effect")
                #expect(try await client.request("server") == bytes("s1"))
                #expect(try await fleet.runs("crash") == 1)
                #expect(try fleet.server(1).statistics.outcomesUnknown == 1)
                #expect(try fleet.server(1).statistics.handlersStarted == 1)
            }
            await fleet.stop()
        }
    }

    /// The same crash with a request the caller marked idempotent: the client sends it again under a
    /// new id itself, and s1 runs it.
    @Test func anIdempotentRequestWhoseServerCrashedIsSentAgainUnderANewID() async throws {
        try await withRedisServer { redis in
            let fleet = try await RedisFleet.start(on: redis, slowFor: .seconds(3))
            try await onFirstServer(fleet, as: "ida") { (client: LongLinkClient) async throws in
                let call = slowCall(client, "again", idempotent: true)
                #expect(try await fleet.events.next(within: .seconds(10)) == "started again on s0")
                await fleet.members[0].crash()
                #expect(try await call.value.get() == bytes("s1"))
                #expect(try await fleet.events.next(within: .seconds(1)) == "started again on s1")
                #expect(try await fleet.runs("again") == 2)
                #expect(try fleet.server(1).statistics.outcomesUnknown == 1)
            }
            await fleet.stop()
        }
    }

    /// Claims last 1.5 s at first and are renewed every 250 ms. s0 runs a 4.5 s request (three
    /// terms) and becomes unreachable meanwhile; the resend on s1 waits the whole time without
    /// taking the claim over, and replays s0's reply. The request ran once.
    @Test func aHandlerRunningThreeTimesPastItsClaimsFirstTermRunsOnce() async throws {
        try await withRedisServer { redis in
            let fleet = try await RedisFleet.start(
                on: redis, slowFor: .milliseconds(4500), lease: ClaimLease(interval: .milliseconds(250)),
                termLimit: .milliseconds(1500))
            try await onFirstServer(fleet, as: "lu") { (client: LongLinkClient) async throws in
                let call = slowCall(client, "long")
                #expect(try await fleet.events.next(within: .seconds(10)) == "started long on s0")
                await fleet.cutOff(0)
                #expect(try await call.value.get() == bytes("s0"))
                #expect(try await fleet.runs("long") == 1)
                #expect(try fleet.server(1).statistics.requestsReplayed == 1)
                #expect(try fleet.server(0).statistics.claimsLost == 0)
                #expect(fleet.events.count == 0)
            }
            await fleet.stop()
        }
    }

    /// A claim taken from its owner while it runs (as a waiter marks it when the owner's lease
    /// lapsed): the owner's reply still reaches its caller, and the lost claim is counted and logged.
    @Test func aReplyWhoseClaimWasLostIsCountedAndLogged() async throws {
        try await withRedisServer { redis in
            let fleet = try await RedisFleet.start(on: redis)
            try await withLongLinkClient(configuration: .forRedisFleet([fleet.endpoints[0]], user: "fay")) { client in
                let call = slowCall(client, "lost")
                #expect(try await fleet.events.next(within: .seconds(10)) == "started lost on s0")
                let pattern = RedisKeys(prefix: fleet.prefix).tag(principal: "fay") + ":d:*"
                let claims = try await fleet.counter.run(RedisCommand("KEYS", pattern)).elements ?? []
                #expect(claims.count == 1)
                for claim in claims {
                    _ = try await fleet.counter.run(RedisCommand("SET", claim.string ?? "", "U", "KEEPTTL"))
                }
                #expect(try await call.value.get() == bytes("s0"))
                try await eventually("the lost claim is counted") { (try? fleet.server(0).statistics.claimsLost) == 1 }
                let line = try await fleet.logs.next(within: .seconds(5))
                #expect(line.contains("claim of request") && line.contains("lost"))
            }
            await fleet.stop()
        }
    }

    /// Two clients with one client id and no login, each on its own server: the second's first
    /// request (id 1) calls another method than the first's, whose reply is stored in Redis. It is
    /// refused `INVALID_ARGUMENT` (as one server's window refuses it), not given that reply, and
    /// does not run.
    @Test func aReplyStoredForOneMethodIsNotReplayedToAnother() async throws {
        try await withRedisServer { redis in
            let fleet = try await RedisFleet.start(on: redis)
            let first = ClientConfiguration.forRedisFleet([fleet.endpoints[0]], user: nil, clientID: "twin")
            try await withLongLinkClient(configuration: first) { client in
                let reply = try await client.request("server")
                #expect(reply == bytes("s0"))
            }
            let second = ClientConfiguration.forRedisFleet([fleet.endpoints[1]], user: nil, clientID: "twin")
            try await withLongLinkClient(configuration: second) { client in
                #expect(await code(of: { try await client.request("slow", payload: bytes("twin")) }) == .invalidArgument)
            }
            #expect(try await fleet.runs("twin") == 0)
            #expect(try fleet.server(1).statistics.requestsReplayed == 0)
            await fleet.stop()
        }
    }

    /// A client logs in as ann on s0 (request 1, the login, keyed before login by client id; request
    /// 2 keyed by ann). Another connection presenting the same client id without logging in, on s1,
    /// gets neither reply: its request 1 (another method than the login) is refused, and its
    /// request 2 runs on s1.
    @Test func repliesOfALoggedInClientAreNotReplayedToAConnectionWithoutLogin() async throws {
        try await withRedisServer { redis in
            let fleet = try await RedisFleet.start(on: redis)
            let owner = ClientConfiguration.forRedisFleet([fleet.endpoints[0]], user: "ann", clientID: "same")
            try await withLongLinkClient(configuration: owner) { client in
                let reply = try await client.request("server")
                #expect(reply == bytes("s0"))
            }
            let stranger = ClientConfiguration.forRedisFleet([fleet.endpoints[1]], user: nil, clientID: "same")
            try await withLongLinkClient(configuration: stranger) { (client: LongLinkClient) async throws in
                #expect(await code(of: { try await client.request("server") }) == .invalidArgument)
                #expect(try await client.request("server") == bytes("s1"))
            }
            #expect(try fleet.server(1).statistics.requestsReplayed == 0)
            await fleet.stop()
        }
    }
}
