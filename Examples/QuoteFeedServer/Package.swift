// swift-tools-version: 6.2
// QuoteFeedServer: a backend built on LongLinkServer. It depends on the LongLink package two
// folders up, by path, so it builds with nothing from the network.
import PackageDescription

let package = Package(
    name: "QuoteFeedServer",
    platforms: [.macOS(.v15)],
    dependencies: [
        // Named explicitly: a path dependency is otherwise known by its folder's name, which
        // differs between clones (longlink, LongLink-main, ...).
        .package(name: "LongLink", path: "../.."),
        // The methods and topics this server shares with the QuoteAlerts app.
        .package(path: "../QuoteContract"),
    ],
    targets: [
        .executableTarget(
            name: "QuoteFeedServer",
            dependencies: [
                .product(name: "LongLinkServer", package: "LongLink"),
                .product(name: "QuoteContract", package: "QuoteContract"),
                .product(name: "LongLinkRedis", package: "LongLink"),
            ]
        )
    ]
)
