// swift-tools-version: 6.2
// The layers point one way: Wire <- Transport <- LongLink (client) / LongLinkServer
// <- LongLinkTesting <- longlink (the tool). The client never imports the server. The benchmarks,
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
        // Frames, the protobuf codec, the incremental frame decoder, the shared error type, payload
        // compression. No I/O.
        .target(name: "LongLinkWire", dependencies: ["CZlib"]),
        // The system's zlib (libz on Darwin, zlib1g-dev on Debian and Ubuntu), for payload compression.
        .systemLibrary(
            name: "CZlib", path: "Sources/CZlib", pkgConfig: "zlib", providers: [.apt(["zlib1g-dev"]), .brew(["zlib"])]),
        // Event loop (epoll; poll on Darwin), sockets, connections, listeners, TLS. TLS goes through
        // the system OpenSSL on Linux only: an Apple build needs no OpenSSL and reports TLS as
        // unavailable.
        .target(
            name: "LongLinkTransport",
            dependencies: ["LongLinkWire", .target(name: "COpenSSL", condition: .when(platforms: [.linux]))]
        ),
        // The system OpenSSL (libssl-dev 3.x), found with pkg-config.
        .systemLibrary(name: "COpenSSL", pkgConfig: "openssl", providers: [.apt(["libssl-dev"])]),
        // The client.
        .target(name: "LongLink", dependencies: ["LongLinkWire", "LongLinkTransport"]),
        // The server.
        .target(name: "LongLinkServer", dependencies: ["LongLinkWire", "LongLinkTransport"]),
        // The server's stores on Redis (a RESP3 client of its own on the transport's loop), for a
        // fleet of servers that share reliable pushes and the de-dup window.
        .target(name: "LongLinkRedis", dependencies: ["LongLinkWire", "LongLinkTransport", "LongLinkServer"]),
        // Fault-injecting proxy and test-server helpers, shipped for users' own tests.
        .target(
            name: "LongLinkTesting",
            dependencies: ["LongLinkWire", "LongLinkTransport", "LongLink", "LongLinkServer", "CMallocStatistics"]
        ),
        // The command line's parser, terminal output, JSON writer and exit statuses, shared by the
        // executables. Its API is `package`: no product, nothing added to what users import.
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
            dependencies: ["LongLinkTransport", "LongLinkWire", "LongLink", "LongLinkServer", "LongLinkTesting"],
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
            dependencies: ["LongLinkServer", "LongLinkTransport", "LongLinkWire", "LongLinkTestSupport"]
        ),
        // Starts its own redis-server (skipped where none is installed, failed so under CI); the
        // fleet's tests run three servers on it and a real client through fault proxies.
        .testTarget(
            name: "LongLinkRedisTests",
            dependencies: [
                "LongLinkRedis", "LongLinkServer", "LongLinkTransport", "LongLinkWire", "LongLinkTestSupport", "LongLink",
                "LongLinkTesting",
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
            dependencies: ["LongLink", "LongLinkServer", "LongLinkTesting", "LongLinkWire", "LongLinkTestSupport"]
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
