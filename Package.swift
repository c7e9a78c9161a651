// swift-tools-version:6.1
import PackageDescription

let package = Package(
    name: "Peerlog",
    platforms: [.macOS(.v14)],
    products: [
        .library(name: "PeerlogCrypto", targets: ["PeerlogCrypto"]),
        .library(name: "PeerlogEncoding", targets: ["PeerlogEncoding"]),
        .library(name: "PeerlogModel", targets: ["PeerlogModel"]),
        .executable(name: "peerlog", targets: ["PeerlogCLI"]),
        .executable(name: "peerlog-bench", targets: ["PeerlogBench"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
    ],
    targets: [
        // C layer: libsodium from the system (Debian: libsodium-dev).
        .systemLibrary(
            name: "CSodium",
            pkgConfig: "libsodium",
            providers: [.apt(["libsodium-dev"]), .brew(["libsodium"])]
        ),
        // Base layer.
        .target(name: "PeerlogCrypto", dependencies: ["CSodium"]),
        .target(name: "PeerlogEncoding", dependencies: ["PeerlogCrypto"], linkerSettings: [.linkedLibrary("m")]),
        // Core layer.
        .target(name: "PeerlogModel", dependencies: ["PeerlogCrypto", "PeerlogEncoding"]),
        // App layer.
        .executableTarget(
            name: "PeerlogCLI",
            dependencies: [
                "PeerlogModel",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .executableTarget(name: "PeerlogBench", dependencies: ["PeerlogModel"]),

        .testTarget(name: "PeerlogCryptoTests", dependencies: ["PeerlogCrypto"]),
        .testTarget(name: "PeerlogEncodingTests", dependencies: ["PeerlogEncoding"]),
        .testTarget(name: "PeerlogModelTests", dependencies: ["PeerlogModel"]),
        .testTarget(name: "PeerlogCLITests", dependencies: ["PeerlogModel"]),
    ],
    swiftLanguageModes: [.v6]
)
