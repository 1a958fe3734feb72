#!/usr/bin/env bash
# Checks what `import LongLink`, `import LongLinkServer` and `import LongLinkRedis` put in a user's scope, against the
# modules of the last debug build (`swift build` first):
#   - a snippet using the types a user needs type-checks with the module alone, also under the
#     MemberImportVisibility upcoming feature (members of re-exported types stay visible);
#   - a snippet naming a lower-layer type (EventLoop, Connection, Frame, …) must fail with
#     "cannot find … in scope", so the check fails the day a re-export leaks the layers again.
# The positive snippets run first: a wrong search path cannot pass the negative ones.
#
# Usage: bash Scripts/check-import-surface.sh        (from anywhere inside the repository)
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
modules="$(swift build --show-bin-path)/Modules"
[[ -f "$modules/LongLink.swiftmodule" ]] || {
    echo "check-import-surface: no LongLink.swiftmodule in $modules; run swift build first" >&2
    exit 1
}
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# The system library modules SwiftPM hands to every dependent's compile, and so does this check:
# zlib's module map (the wire module compresses payloads), SQLite's (the server's durable store), and on Linux the transport's OpenSSL and
# its epoll shim. Debug modules are built for testing, so their internal imports must resolve for a
# client too.
clang_modules=(-I "$root/Sources/CZlib" -I "$root/Sources/CSQLite")
if [[ "$(uname -s)" == Linux ]]; then
    clang_modules+=(-Xcc "-fmodule-map-file=$root/Sources/COpenSSL/module.modulemap")
    clang_modules+=(-Xcc "-fmodule-map-file=$root/Sources/CLinuxSystem/module.modulemap")
fi

typecheck() {
    swiftc -typecheck -swift-version 6 -I "$modules" "${clang_modules[@]}" -module-cache-path "$work/cache" "$@"
}

status=0

cat >"$work/client.swift" <<'SWIFT'
import LongLink
var configuration = ClientConfiguration(endpoints: [.tcp(host: "127.0.0.1", port: 7000)])
configuration.connectionOptions.noDelay = true
configuration.codec = JSONPayloadCodec()
var tls = TLSConfiguration.makeClientConfiguration()
tls.trustRoots = .pemFile("ca.pem")
tls.pinnedPublicKeys = TLSPublicKeyPin(base64: "x").map { [$0] } ?? []
configuration.tls = tls
print((LongLinkError(code: .tlsFailure, message: "x").underlying as? TLSFailure)?.reason == .pinMismatch)
configuration.login = { session in _ = session.server.serverID }
let error = LongLinkError(code: .init(status: StatusCode.notFound), message: "x")
print(error.description, error.code, Endpoint(parsing: "a:1")?.description ?? "")
struct Alert: Decodable, Sendable { var text: String }
enum Alerts: LongLinkTopic { typealias Message = Alert; static let name = "alerts"; static let kind = TopicKind.reliable }
struct Hello: LongLinkRequest, Codable { typealias Reply = RawPayload; static let method = "hello" }
func typed(_ client: LongLinkClient) async throws {
    _ = try await client.send(Hello()).bytes
    for await alert in client.pushes(Alerts.self) { print(alert.text, (try? TopicPattern("a.*"))?.isExact ?? false) }
}
func loop(_ client: LongLinkClient) async {
    do throws(LongLinkError) {
        for try await alert in client.throwingPushes(topic: "alerts", as: Alert.self) { print(alert.text) }
    } catch where error.code == .goAway {
        print("signed out:", error.message)
    } catch {
        print(error.code)
    }
}
SWIFT
cat >"$work/server.swift" <<'SWIFT'
import LongLinkServer
var router = Router()
router.register("echo") { payload, context in context.bind(principal: context.clientID); return payload }
struct Hello: LongLinkRequest, Codable { typealias Reply = String; static let method = "hello" }
enum Ticks: LongLinkTopic { typealias Message = String; static let name = "ticks.*"; static let kind = TopicKind.bestEffort }
router.register(Hello.self) { _, context in context.clientID }
var configuration = ServerConfiguration()
configuration.endpoint = .tcp(host: "127.0.0.1", port: 0)
configuration.tls = ServerTLSConfiguration(certificateChain: .file("cert.pem"), privateKey: .file("key.pem"))
configuration.tls?.clientCertificateVerification = .required(.pemFile("ca.pem"))
let server = LongLinkServer(configuration: configuration, router: router)
func address() async throws -> SocketAddress { try await server.localAddress }
func tick() async throws { try await server.publish(Ticks.topic("a"), "x", to: "alice") }
print(LongLinkError(code: .unavailable, message: "x").description, StatusCode.ok)
SWIFT

cat >"$work/redis.swift" <<'SWIFT'
import LongLinkRedis
import LongLinkServer
func fleet() async throws {
    var redis = try RedisConfiguration(url: "redis://app:secret@127.0.0.1:6379/1")
    redis.keyPrefix = "fleet:"
    redis.commandTimeout = .seconds(1)
    redis.tls = TLSConfiguration.makeClientConfiguration()
    redis.tls?.trustRoots = .pemFile("redis-ca.pem")
    print(redis, redis.debugDescription)
    let pushes = try RedisPushStore(configuration: redis, capacityPerPrincipal: 100)
    let stored: StoredPush = try await pushes.append(PushAppend(principal: "alice", topic: "t", payload: [1]))
    try await pushes.acknowledge(AcknowledgedPushes(principal: "alice", seqs: [stored.seq]))
    let window = try RedisDedupeStore(configuration: redis)
    let claim = DedupeClaimRequest(principal: "alice", clientID: "c", requestID: "1", runningFor: .seconds(5))
    if case .finished(let reply) = try await window.begin(claim) {
        print(reply.count)
    }
    let server = LongLinkServer(configuration: ServerConfiguration(), router: Router(), stores: try .redis(redis))
    _ = try await server.push(to: "alice", topic: "t", message: ["price": 1])
    do { _ = try await pushes.unacknowledgedCount(principal: "alice") } catch let error as LongLinkError {
        print(error.code == .unavailable, (error.underlying as? RedisServerError)?.prefix ?? "")
    }
}
SWIFT

for snippet in client server redis; do
    for feature in "" "MemberImportVisibility"; do
        flags=()
        [[ -n "$feature" ]] && flags=(-enable-upcoming-feature "$feature")
        if typecheck "${flags[@]}" "$work/$snippet.swift" >"$work/out" 2>&1; then
            echo "check-import-surface: the $snippet snippet type-checks${feature:+ with $feature}"
        else
            echo "check-import-surface: the $snippet snippet does not type-check${feature:+ with $feature}:" >&2
            cat "$work/out" >&2
            status=1
        fi
    done
done

# Names of the wire and the transport that must not be visible through any of the modules.
hidden=(EventLoop EventLoopGroup Connection ConnectionHandler Listener Frame FrameDecoder CloseMode Resolver)
for module in LongLink LongLinkServer LongLinkRedis; do
    for name in "${hidden[@]}"; do
        printf 'import %s\nlet hidden: Any.Type = %s.self\n' "$module" "$name" >"$work/hidden.swift"
        if typecheck "$work/hidden.swift" >"$work/out" 2>&1; then
            echo "check-import-surface: import $module makes $name visible" >&2
            status=1
        elif grep -q "cannot find '$name' in scope" "$work/out"; then
            echo "check-import-surface: import $module hides $name"
        else
            echo "check-import-surface: import $module: $name failed for another reason:" >&2
            cat "$work/out" >&2
            status=1
        fi
    done
done
# The server's durable store links SQLite, imported `internal`: none of its C API reaches a user.
printf 'import LongLinkServer\nlet open: Any = sqlite3_open_v2\n' >"$work/sqlite.swift"
if typecheck "$work/sqlite.swift" >"$work/out" 2>&1; then
    echo "check-import-surface: import LongLinkServer makes SQLite's sqlite3_open_v2 visible" >&2
    status=1
elif grep -q "cannot find 'sqlite3_open_v2' in scope" "$work/out"; then
    echo "check-import-surface: import LongLinkServer hides SQLite"
else
    echo "check-import-surface: sqlite3_open_v2 failed for another reason:" >&2
    cat "$work/out" >&2
    status=1
fi
# The transport's I/O tuning inside ConnectionOptions is the package's, not a user's.
for member in readChunkSize eagerFlushBytes; do
    printf 'import LongLink\nvar options = ConnectionOptions()\noptions.%s = 1\n' "$member" >"$work/member.swift"
    if typecheck "$work/member.swift" >"$work/out" 2>&1; then
        echo "check-import-surface: import LongLink makes ConnectionOptions.$member visible" >&2
        status=1
    elif grep -q "'$member' is inaccessible" "$work/out"; then
        echo "check-import-surface: import LongLink hides ConnectionOptions.$member"
    else
        echo "check-import-surface: ConnectionOptions.$member failed for another reason:" >&2
        cat "$work/out" >&2
        status=1
    fi
done
exit $status
