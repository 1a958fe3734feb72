// swift-tools-version:5.4
// The fuzz targets: libFuzzer executables over the frame decoder, over the client's and the
// server's inbound state machines, over the Redis client's RESP3 parser and the push store's
// reading of its replies, over the server's TLS session, and over the inflation of compressed
// payloads. A package of its own, below tools-version 5.5, because only
// there does SwiftPM leave an executable's `main` to libFuzzer. Scripts/fuzz.sh builds it with
// -sanitize=fuzzer,address and -enable-testing for every module, so `@testable import` reaches
// the internal state machines of the very code that ships, instrumented for coverage.
import PackageDescription

// Swift 6 language mode, as the main package; tools-version 5.4 cannot say so otherwise.
let swift6: [SwiftSetting] = [.unsafeFlags(["-swift-version", "6"])]
// No top-level code: libFuzzer's `main` calls LLVMFuzzerTestOneInput.
let fuzzTargetSettings: [SwiftSetting] = swift6 + [.unsafeFlags(["-parse-as-library"])]

/// A libFuzzer executable over the main package's `products`.
func fuzzTarget(_ name: String, using products: [String]) -> Target {
    .executableTarget(
        name: name,
        dependencies: ["FuzzKit"] + products.map { .product(name: $0, package: "LongLink") },
        swiftSettings: fuzzTargetSettings)
}

let package = Package(
    name: "LongLinkFuzz",
    dependencies: [.package(name: "LongLink", path: "..")],
    targets: [
        // The script format the targets read and the seed generator writes, and the invariant check.
        .target(
            name: "FuzzKit", dependencies: [.product(name: "LongLinkWire", package: "LongLink")],
            swiftSettings: swift6),
        fuzzTarget("FrameDecoderFuzz", using: ["LongLinkWire"]),
        fuzzTarget("ClientInboundFuzz", using: ["LongLink", "LongLinkWire"]),
        fuzzTarget("ServerInboundFuzz", using: ["LongLinkServer", "LongLinkWire"]),
        fuzzTarget("RESPParserFuzz", using: ["LongLinkRedis"]),
        // The transport is no product of its own: the server's product brings it (and OpenSSL).
        fuzzTarget("TLSRecordFuzz", using: ["LongLinkServer"]),
        fuzzTarget("InflationFuzz", using: ["LongLinkWire"]),
        fuzzTarget("PushStoreRepliesFuzz", using: ["LongLinkRedis", "LongLinkServer"]),
        // Writes the seed corpora from valid traffic (built without the fuzzer: it has its own main).
        .executableTarget(
            name: "FuzzSeeds",
            dependencies: ["FuzzKit", .product(name: "LongLinkWire", package: "LongLink")],
            swiftSettings: swift6),
    ]
)
