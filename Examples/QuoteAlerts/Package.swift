// swift-tools-version: 6.2
// QuoteAlerts: a LongLink example app. It depends on the LongLink package two folders up, by path,
// so it builds with nothing from the network.
import PackageDescription

let package = Package(
    name: "QuoteAlerts",
    platforms: [.macOS(.v15), .iOS(.v18)],
    dependencies: [
        // Named explicitly: a path dependency is otherwise known by its folder's name, which
        // differs between clones (longlink, LongLink-main, ...).
        .package(name: "LongLink", path: "../.."),
        // The methods and topics this app shares with QuoteFeedServer.
        .package(path: "../QuoteContract"),
    ],
    targets: [
        .executableTarget(
            name: "QuoteAlerts",
            dependencies: [
                .product(name: "LongLink", package: "LongLink"),
                .product(name: "QuoteContract", package: "QuoteContract"),
            ]
        )
    ]
)
