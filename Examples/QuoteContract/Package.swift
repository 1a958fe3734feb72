// swift-tools-version: 6.2
// QuoteContract: the methods and topics QuoteAlerts (the app) and QuoteFeedServer (the backend)
// share, declared once. It depends on the LongLink package two folders up, by path, for
// LongLinkWire only: neither the client nor the server.
import PackageDescription

let package = Package(
    name: "QuoteContract",
    platforms: [.macOS(.v15), .iOS(.v18)],
    products: [.library(name: "QuoteContract", targets: ["QuoteContract"])],
    dependencies: [
        // Named explicitly: a path dependency is otherwise known by its folder's name, which
        // differs between clones (longlink, LongLink-main, ...).
        .package(name: "LongLink", path: "../..")
    ],
    targets: [
        .target(name: "QuoteContract", dependencies: [.product(name: "LongLinkWire", package: "LongLink")])
    ]
)
