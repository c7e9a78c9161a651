// swift-tools-version:6.1
// The benchmarks (docs/BENCHMARKS.md), a package of their own beside the main one (as
// swift-nio's Benchmarks/), so the everyday build does not compile them. Build in release:
//   swift build -c release --package-path Benchmarks
//   Benchmarks/.build/release/peerlog-bench [foundation|replica|net|all] ...
// The daemon benchmarks (catchup, elected, relay, noise over processes) run the `peerlog`
// binary from the main package's release build (`swift build -c release`, which builds
// peerlog and peerlog-full; PEERLOG_BIN or the directory of peerlog-bench itself otherwise).
//
// The PostgreSQL trait is on for the dependency although no benchmark runs that relay: a trait is a
// compiler define on every module of the package, so with it the modules compile exactly as in
// tools/test.sh's build (which has the trait) and that build, sharing its scratch directory, reuses
// them instead of compiling them again. postgres-nio is not built: no target here needs it. The
// trait also keeps SHA-256 on swift-crypto (see the main Package.swift), as the blob benchmarks
// assume; with no traits at all it would be libsodium's.
import PackageDescription

let package = Package(
    name: "PeerlogBenchmarks",
    platforms: [.macOS(.v14)],
    products: [.executable(name: "peerlog-bench", targets: ["PeerlogBench"])],
    dependencies: [.package(name: "Peerlog", path: "..", traits: ["PostgreSQL"])],
    targets: [
        .executableTarget(
            name: "PeerlogBench",
            dependencies: [
                .product(name: "Peerlog", package: "Peerlog"),
                .product(name: "PeerlogCrypto", package: "Peerlog"),
                .product(name: "PeerlogEncoding", package: "Peerlog"),
                .product(name: "PeerlogModel", package: "Peerlog"),
                .product(name: "PeerlogEngine", package: "Peerlog"),
                .product(name: "PeerlogChannel", package: "Peerlog"),
                .product(name: "PeerlogSync", package: "Peerlog"),
                .product(name: "PeerlogNode", package: "Peerlog"),
                .product(name: "PeerlogTestSupport", package: "Peerlog"),
            ]
        )
    ],
    swiftLanguageModes: [.v6]
)
