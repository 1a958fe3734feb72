// swift-tools-version: 6.2
// ChatRoom: a LongLink example app. It depends on the LongLink package two folders up, by path,
// so it builds with nothing from the network.
import PackageDescription

let package = Package(
    name: "ChatRoom",
    platforms: [.macOS(.v15), .iOS(.v18)],
    dependencies: [
        // Named explicitly: a path dependency is otherwise known by its folder's name, which
        // differs between clones (longlink, LongLink-main, ...).
        .package(name: "LongLink", path: "../..")
    ],
    targets: [
        .executableTarget(
            name: "ChatRoom",
            dependencies: [.product(name: "LongLink", package: "LongLink")]
        )
    ]
)
