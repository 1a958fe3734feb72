// swift-tools-version: 6.2
// The layers point one way: Core <- Wire, Core <- Transport; Wire and Transport <- LongLink (client) /
// LongLinkServer <- LongLinkTesting <- longlink (the tool). The client never imports the server. The benchmarks,
// longlink-bench, are a package of their own in Benchmarks/ over these products, as the fuzz targets
// in Fuzz/ are: `swift test` here builds neither.
import PackageDescription

let package = Package(
    name: "LongLink",
    platforms: [.macOS(.v15), .iOS(.v18), .tvOS(.v18), .watchOS(.v11)],
    products: [
        .library(name: "LongLink", targets: ["LongLink"]),
        .library(name: "LongLinkServer", targets: ["LongLinkServer"]),
        .library(name: "LongLinkTesting", targets: ["LongLinkTesting"]),
        .library(name: "LongLinkWire", targets: ["LongLinkWire"]),
        .library(name: "LongLinkRedis", targets: ["LongLinkRedis"]),
        .executable(name: "longlink", targets: ["longlink"]),
    ],
    targets: [
        // The error type and status codes every layer speaks in, and the package's duration helpers.
        // No dependencies; the wire module re-exports it.
        .target(name: "LongLinkCore"),
        // Frames, the protobuf codec, the incremental frame decoder, payload compression, and the
        // contract types the client and the server share (requests, topics, payload codecs). No I/O.
        .target(name: "LongLinkWire", dependencies: ["LongLinkCore", "CZlib"]),
        // The system's zlib (zlib1g-dev on Debian and Ubuntu), for payload compression.
        .systemLibrary(
            name: "CZlib", path: "Sources/CZlib", pkgConfig: "zlib", providers: [.apt(["zlib1g-dev"]), .brew(["zlib"])]),
        // Event loop (epoll), sockets, connections, listeners, TLS through the system OpenSSL. Darwin's
        // paths (a poll loop, no OpenSSL, TLS reported unavailable) build on Linux too with
        // `-Xswiftc -DLONGLINK_PORTABLE_SELECTOR -Xswiftc -DLONGLINK_NO_OPENSSL` (CI's portable step).
        .target(
            name: "LongLinkTransport",
            dependencies: [
                "LongLinkCore", .target(name: "COpenSSL", condition: .when(platforms: [.linux])),
                .target(name: "CLinuxSystem", condition: .when(platforms: [.linux])),
            ]
        ),
        // epoll, eventfd, accept4 and pthread_setname_np, which Swift's Glibc module does not expose, with C
        // helpers for `struct epoll_event` (packed on x86_64).
        .systemLibrary(name: "CLinuxSystem", path: "Sources/CLinuxSystem"),
        // The system OpenSSL (libssl-dev 3.x), found with pkg-config.
        .systemLibrary(name: "COpenSSL", pkgConfig: "openssl", providers: [.apt(["libssl-dev"])]),
        // The client.
        .target(name: "LongLink", dependencies: ["LongLinkCore", "LongLinkWire", "LongLinkTransport"]),
        // The server.
        .target(
            name: "LongLinkServer", dependencies: ["LongLinkCore", "LongLinkWire", "LongLinkTransport", "CSQLite"]),
        // The system's SQLite (libsqlite3-dev on Debian and Ubuntu; in the SDK on Darwin), for the
        // server's durable store. Imported `internal`: `import LongLinkServer` does not show it.
        .systemLibrary(
            name: "CSQLite", path: "Sources/CSQLite", pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"]), .brew(["sqlite"])]),
        // The server's stores on Redis (a RESP3 client of its own on the transport's loop), for a
        // fleet of servers that share reliable pushes and the de-dup window.
        .target(name: "LongLinkRedis", dependencies: ["LongLinkWire", "LongLinkTransport", "LongLinkServer"]),
        // Fault-injecting proxy and test-server helpers, shipped for users' own tests.
        .target(
            name: "LongLinkTesting",
            dependencies: ["LongLinkWire", "LongLinkTransport", "LongLink", "LongLinkServer", "CMallocStatistics"]
        ),
        // The command line's parser, terminal output, JSON writer and exit statuses, shared by the
        // executables; child processes (posix_spawn), shared with the tests too. Its API is
        // `package`: no product, nothing added to what users import.
        .target(name: "LongLinkCLISupport"),
        // The command-line tool: demo, serve, request, subscribe, inspect, soak, probe.
        .executableTarget(
            name: "longlink",
            dependencies: [
                "LongLinkWire", "LongLinkTransport", "LongLink", "LongLinkServer", "LongLinkTesting",
                "LongLinkCLISupport", "LongLinkRedis",
            ]
        ),
        // The C heap's statistics (malloc.h), for the soak's memory samples and (through
        // LongLinkTesting's ProcessMemory) the bench's "nothing retained" figure.
        .systemLibrary(name: "CMallocStatistics", path: "Sources/CMallocStatistics"),
        // The one test kit of the test targets (bounded waits, watched values, a seeded generator, a
        // raw frame client, the server handlers tests observe, a child-process runner for the tool);
        // not a product. Every test target but LongLinkAPITests, which imports only the products.
        .target(
            name: "LongLinkTestSupport",
            dependencies: [
                "LongLinkTransport", "LongLinkWire", "LongLink", "LongLinkServer", "LongLinkTesting",
                "LongLinkCLISupport",
            ],
            path: "Tests/TestSupport"
        ),
        .testTarget(name: "LongLinkWireTests", dependencies: ["LongLinkWire", "LongLinkTestSupport"]),
        // OpenSSL directly too: a peer that renegotiates, which LongLink's own sessions never do.
        .testTarget(
            name: "LongLinkTransportTests",
            dependencies: [
                "LongLinkTransport", "LongLinkWire", "LongLinkTestSupport",
                .target(name: "COpenSSL", condition: .when(platforms: [.linux])),
            ]
        ),
        .testTarget(
            name: "LongLinkServerTests",
            dependencies: [
                "LongLinkServer", "LongLinkTransport", "LongLinkWire", "LongLinkTestSupport", "LongLinkTesting",
            ]
        ),
        // Starts its own redis-server (skipped where none is installed, failed so under CI); the
        // fleet's tests run three servers on it and a real client through fault proxies.
        .testTarget(
            name: "LongLinkRedisTests",
            dependencies: [
                "LongLinkRedis", "LongLinkServer", "LongLinkTransport", "LongLinkWire", "LongLinkTestSupport", "LongLink",
                "LongLinkTesting", "LongLinkCLISupport",
            ]
        ),
        .testTarget(
            name: "LongLinkTestingTests",
            dependencies: [
                "LongLinkTesting", "LongLink", "LongLinkTransport", "LongLinkWire", "LongLinkServer", "LongLinkTestSupport",
            ]
        ),
        .testTarget(
            name: "LongLinkTests",
            dependencies: [
                "LongLink", "LongLinkServer", "LongLinkTesting", "LongLinkWire", "LongLinkTestSupport",
                "LongLinkCLISupport",
            ]
        ),
        // Depends on the client and the server products only, and each file imports only what a user
        // would: it compiles only if `import LongLink` (or `import LongLinkServer`) alone is enough.
        .testTarget(name: "LongLinkAPITests", dependencies: ["LongLink", "LongLinkServer"]),
        // Runs the built `longlink` binary as a process; unit tests of its parser and helpers.
        .testTarget(
            name: "LongLinkCLITests",
            dependencies: [
                "longlink", "LongLinkCLISupport", "LongLink", "LongLinkWire", "LongLinkServer", "LongLinkTransport",
                "LongLinkTestSupport",
            ]
        ),
    ]
)
