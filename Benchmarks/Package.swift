// swift-tools-version: 6.2
// The benchmarks, `longlink-bench`: a package of its own over the main package's products, so that
// `swift test` in the root builds none of it. Build with
// `swift build -c release --package-path Benchmarks`; run `Benchmarks/.build/release/longlink-bench`.
// The bench reaches LongLink through public API and `@_spi(Benchmarks)` only, never `package` seams.
import PackageDescription

let package = Package(
    name: "LongLinkBenchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [.package(name: "LongLink", path: "..")],
    targets: [
        // The tool's command-line support (LongLinkCLISupport), compiled here from the same sources
        // under a name of its own (Sources/BenchCLISupport is a symbolic link to
        // ../Sources/LongLinkCLISupport): its API is `package`, which does not cross packages, and it
        // is no product of the main package on purpose.
        .target(name: "BenchCLISupport"),
        // The transport is no product of its own: the server's product brings it.
        .executableTarget(
            name: "longlink-bench",
            dependencies: [
                "BenchCLISupport",
                .product(name: "LongLink", package: "LongLink"),
                .product(name: "LongLinkServer", package: "LongLink"),
                .product(name: "LongLinkWire", package: "LongLink"),
                .product(name: "LongLinkRedis", package: "LongLink"),
                .product(name: "LongLinkTesting", package: "LongLink"),
            ]
        ),
        // Runs the built `longlink-bench` briefly; unit tests of its statistics and targets.
        .testTarget(name: "LongLinkBenchTests", dependencies: ["longlink-bench", "BenchCLISupport"]),
    ]
)
