// swift-tools-version:6.1
import PackageDescription

let package = Package(
    name: "Peerlog",
    platforms: [.macOS(.v14)],
    products: [
        // What an app imports: one module, one type (`Peerlog`), a stream of changes. The only
        // stable API: every other library product below is a layer under it, for the benchmarks,
        // the fuzzers and tools, and may change in any release (docs/ARCHITECTURE.md).
        .library(name: "Peerlog", targets: ["Peerlog"]),
        .library(name: "PeerlogCrypto", targets: ["PeerlogCrypto"]),
        .library(name: "PeerlogEncoding", targets: ["PeerlogEncoding"]),
        .library(name: "PeerlogModel", targets: ["PeerlogModel"]),
        .library(name: "PeerlogEngine", targets: ["PeerlogEngine"]),
        .library(name: "PeerlogNode", targets: ["PeerlogNode"]),
        .library(name: "PeerlogPairing", targets: ["PeerlogPairing"]),
        // For the benchmarks (Benchmarks/Package.swift), which measure the layers below the facade.
        .library(name: "PeerlogNoise", targets: ["PeerlogNoise"]),
        .library(name: "PeerlogChannel", targets: ["PeerlogChannel"]),
        .library(name: "PeerlogSync", targets: ["PeerlogSync"]),
        .library(name: "PeerlogFuzzHarness", targets: ["PeerlogFuzzHarness"]),
        // The test fixtures (`TestReplica`, `EntityWriteSchedule`), for the benchmarks' property runs.
        .library(name: "PeerlogTestSupport", targets: ["PeerlogTestSupport"]),
        // `peerlog` is a small launcher that answers `--version` and a plain `put` (handed to a running
        // daemon) by itself and runs `peerlog-full`, beside it, for everything else.
        .executable(name: "peerlog", targets: ["PeerlogLauncher"]),
        .executable(name: "peerlog-full", targets: ["PeerlogCLI"]),
        .executable(name: "peerlog-notes", targets: ["PeerlogNotes"]),
    ],
    // PostgreSQL: the relay's shared store for several relay processes (postgres-nio). Off by
    // default so the common build stays fast: `swift build --traits PostgreSQL`.
    // SwiftCrypto (on by default): SHA-256 through swift-crypto. A build with neither trait
    // (`--disable-default-traits`, or a dependent naming `traits: []`, as Fuzz/ does) compiles
    // no BoringSSL and hashes with libsodium's portable SHA-256 instead: the same digests, about
    // a fifth of the speed on a CPU with SHA extensions.
    traits: [
        .trait(name: "PostgreSQL", description: "peerlog relay run --postgres URL (postgres-nio)"),
        .trait(name: "SwiftCrypto", description: "SHA-256 through swift-crypto (the CPU's SHA extensions)"),
        .default(enabledTraits: ["SwiftCrypto"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.3"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        // SHA-256 with the CPU's SHA extensions (BoringSSL): blob chunk hashes and receipt CIDs.
        .package(url: "https://github.com/apple/swift-crypto", from: "3.12.3"),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
        // The daemon's and relay's --http status page and /metrics (only the CLI links them).
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1", traits: []),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        // `swift package generate-documentation --target Peerlog` (DocC catalog: Sources/Peerlog/Peerlog.docc).
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
    ],
    targets: [
        // C layer: libsodium from the system (Debian: libsodium-dev).
        .systemLibrary(
            name: "CSodium",
            pkgConfig: "libsodium",
            providers: [.apt(["libsodium-dev"]), .brew(["libsodium"])]
        ),
        // avahi's Bonjour compatibility library on Linux (Debian: libavahi-compat-libdnssd-dev), the
        // system's dns_sd on macOS. No pkgConfig: avahi's adds -D_REENTRANT, which SwiftPM refuses.
        .systemLibrary(name: "CDNSSD", providers: [.apt(["libavahi-compat-libdnssd-dev"])]),
        // sqlite3_config for the store (variadic, so C): the statement-journal spill threshold.
        .target(name: "CSQLiteTuning", linkerSettings: [.linkedLibrary("sqlite3")]),
        // Base layer.
        .target(
            name: "PeerlogCrypto",
            dependencies: [
                // postgres-nio builds swift-crypto anyway, so --traits PostgreSQL alone uses it too.
                "CSodium",
                .product(
                    name: "Crypto", package: "swift-crypto", condition: .when(traits: ["SwiftCrypto", "PostgreSQL"])),
            ]),
        .target(name: "PeerlogEncoding", dependencies: ["PeerlogCrypto"], linkerSettings: [.linkedLibrary("m")]),
        // Core layer.
        .target(name: "PeerlogModel", dependencies: ["PeerlogCrypto", "PeerlogEncoding"]),
        .target(
            name: "PeerlogStore",
            dependencies: [
                "PeerlogModel", "PeerlogEncoding", "PeerlogCrypto", "CSQLiteTuning",
                .product(name: "GRDB", package: "GRDB.swift"),
            ]),
        .target(
            name: "PeerlogEngine", dependencies: ["PeerlogStore", "PeerlogModel", "PeerlogEncoding", "PeerlogCrypto"]),
        // Net layer: pure state machines (Noise, secure channel, sync session), then NIO around them.
        .target(name: "PeerlogNoise", dependencies: ["PeerlogCrypto"]),
        .target(name: "PeerlogChannel", dependencies: ["PeerlogNoise", "PeerlogModel", "PeerlogCrypto"]),
        .target(
            name: "PeerlogSync",
            dependencies: [
                "PeerlogEngine", "PeerlogModel", "PeerlogEncoding", "PeerlogCrypto", "PeerlogSequencer",
            ]),
        .target(name: "PeerlogDiscovery", dependencies: ["CDNSSD"]),
        // Pairing by short code: code format, CPace exchange state machines, typed payloads (no I/O).
        .target(name: "PeerlogPairing", dependencies: ["PeerlogCrypto", "PeerlogEncoding", "PeerlogModel"]),
        // Raft leader election restricted to sequence assignment (pure: ticks in, effects out).
        .target(name: "PeerlogSequencer"),
        // What a node needs to capture its traffic: the pcapng writer with rotation, the record
        // format, the Noise key log.
        .target(
            name: "PeerlogCapture",
            dependencies: ["PeerlogChannel", "PeerlogModel", "PeerlogEncoding", "PeerlogCrypto"]),
        // What only the CLI's capture commands need (an app that embeds Peerlog never builds it):
        // reading capture files, transcripts, offline and live replay, raw-capture decryption.
        .target(
            name: "PeerlogCaptureTools",
            dependencies: [
                "PeerlogCapture", "PeerlogChannel", "PeerlogNoise", "PeerlogSync", "PeerlogEngine", "PeerlogModel",
                "PeerlogEncoding", "PeerlogCrypto",
            ]),
        // What the launcher shares with the daemon and the full CLI (the version, the control
        // socket's `put` line): no dependencies, so the launcher links nothing else.
        .target(name: "PeerlogQuickCalls"),
        .target(
            name: "PeerlogNode",
            dependencies: [
                "PeerlogChannel", "PeerlogSync", "PeerlogEngine", "PeerlogModel", "PeerlogEncoding", "PeerlogCrypto",
                "PeerlogDiscovery", "PeerlogCapture", "PeerlogPairing",
                "PeerlogSequencer", "PeerlogQuickCalls",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // `--http`: the status page, /api/status and Prometheus /metrics of a daemon or relay
        // (Hummingbird). Apart from the facade, so an app that embeds Peerlog never builds it.
        .target(
            name: "PeerlogStatusServer",
            dependencies: [
                "PeerlogNode",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // The facade an app embeds: a home, groups, entities, change events, the node as `run()`.
        .target(
            name: "Peerlog",
            dependencies: [
                "PeerlogNode", "PeerlogCapture", "PeerlogEngine", "PeerlogStore", "PeerlogModel", "PeerlogEncoding",
                "PeerlogCrypto", "PeerlogPairing", "PeerlogQuickCalls",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // The example app (Examples/Notes) and the README's embedding example: `import Peerlog` only.
        .executableTarget(name: "PeerlogNotes", dependencies: ["Peerlog"], path: "Examples/Notes"),
        .executableTarget(name: "PeerlogReadmeExample", dependencies: ["Peerlog"], path: "Examples/ReadmeExample"),
        // The relay's PostgreSQL store of record (compiled only with the PostgreSQL trait).
        .target(
            name: "PeerlogRelayPostgres",
            dependencies: [
                "PeerlogEngine", "PeerlogModel", "PeerlogEncoding", "PeerlogCrypto",
                .product(name: "PostgresNIO", package: "postgres-nio", condition: .when(traits: ["PostgreSQL"])),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // Entry points of the fuzz targets (Fuzz/) and of the tests that replay their findings.
        .target(
            name: "PeerlogFuzzHarness",
            dependencies: [
                "PeerlogCaptureTools", "PeerlogChannel", "PeerlogSync", "PeerlogEngine", "PeerlogStore", "PeerlogModel",
                "PeerlogPairing", "PeerlogCrypto",
            ]),
        // App layer.
        // `peerlog`: starts in about a millisecond (the Swift runtime linked in, no Foundation),
        // answers what it can and executes `peerlog-full` for the rest. `swift build` builds both.
        .executableTarget(
            name: "PeerlogLauncher",
            dependencies: ["PeerlogQuickCalls"],
            linkerSettings: [.unsafeFlags(["-static-stdlib"])]
        ),
        .executableTarget(
            name: "PeerlogCLI",
            dependencies: [
                "Peerlog",
                "PeerlogQuickCalls",
                "PeerlogModel",
                "PeerlogEngine",
                "PeerlogNode",
                "PeerlogCapture",
                "PeerlogCaptureTools",
                "PeerlogChannel",
                "PeerlogEncoding",
                "PeerlogCrypto",
                "PeerlogRelayPostgres",
                "PeerlogStatusServer",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),

        // Test helpers (paths, seeded RNG, running Python interop peers and the built binary,
        // the `TestReplica` fixture and its `ManualClock`).
        .target(
            name: "PeerlogTestSupport",
            dependencies: [
                "PeerlogEngine", "PeerlogStore", "PeerlogModel", "PeerlogEncoding", "PeerlogCrypto", "PeerlogSequencer",
            ],
            path: "Sources/PeerlogTestSupport"
        ),
        .testTarget(name: "PeerlogCryptoTests", dependencies: ["PeerlogCrypto", "PeerlogTestSupport"]),
        .testTarget(name: "PeerlogEncodingTests", dependencies: ["PeerlogEncoding", "PeerlogTestSupport"]),
        .testTarget(
            name: "PeerlogModelTests",
            dependencies: ["PeerlogModel", "PeerlogEncoding", "PeerlogCrypto", "PeerlogTestSupport"]),
        .testTarget(
            name: "PeerlogEngineTests",
            dependencies: [
                "PeerlogEngine", "PeerlogStore", "PeerlogModel", "PeerlogEncoding", "PeerlogCrypto",
                "PeerlogTestSupport",
            ]),
        .testTarget(
            name: "PeerlogNoiseTests",
            dependencies: ["PeerlogNoise", "PeerlogChannel", "PeerlogModel", "PeerlogCrypto", "PeerlogTestSupport"]),
        .testTarget(
            name: "PeerlogSyncTests",
            dependencies: [
                "PeerlogSync", "PeerlogEngine", "PeerlogStore", "PeerlogModel", "PeerlogEncoding", "PeerlogCrypto",
                "PeerlogSequencer", "PeerlogTestSupport",
            ]),
        .testTarget(
            name: "PeerlogPairingTests",
            dependencies: ["PeerlogPairing", "PeerlogModel", "PeerlogEncoding", "PeerlogCrypto", "PeerlogTestSupport"]),
        .testTarget(name: "PeerlogDiscoveryTests", dependencies: ["PeerlogDiscovery", "PeerlogTestSupport"]),
        .testTarget(name: "PeerlogSequencerTests", dependencies: ["PeerlogSequencer"]),
        .testTarget(
            name: "PeerlogCaptureTests",
            dependencies: [
                "PeerlogCapture", "PeerlogCaptureTools", "PeerlogEngine", "PeerlogSync", "PeerlogChannel",
                "PeerlogModel",
                "PeerlogEncoding", "PeerlogCrypto", "PeerlogTestSupport",
            ]),
        // Compiled only with the PostgreSQL trait; needs the server tools/postgres.sh starts.
        .testTarget(
            name: "PeerlogRelayPostgresTests",
            dependencies: [
                "PeerlogRelayPostgres", "PeerlogEngine", "PeerlogStore", "PeerlogModel", "PeerlogEncoding",
                "PeerlogTestSupport",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "PeerlogNodeTests",
            dependencies: [
                "PeerlogNode", "PeerlogFuzzHarness", "PeerlogTestSupport", "PeerlogSync", "PeerlogEngine",
                "PeerlogStore", "PeerlogModel", "PeerlogQuickCalls",
                "PeerlogChannel", "PeerlogSequencer", "PeerlogEncoding",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "MetricsTestKit", package: "swift-metrics"),
            ]
        ),
        // The facade, driven as an app would (and, for other-process writes, the CLI binary).
        .testTarget(
            name: "PeerlogTests",
            dependencies: [
                "Peerlog", "PeerlogStore", "PeerlogModel", "PeerlogCLI", "PeerlogNotes", "PeerlogTestSupport",
                "PeerlogEngine", "PeerlogEncoding", "PeerlogCrypto",
            ]),
        // Depends on the executable so `swift test` builds the binary it runs.
        .testTarget(
            name: "PeerlogCLITests",
            dependencies: [
                "PeerlogModel", "PeerlogEngine", "PeerlogEncoding", "PeerlogNode", "PeerlogCLI", "PeerlogTestSupport",
                "PeerlogStatusServer", "PeerlogCaptureTools", "PeerlogChannel", "PeerlogSync",
            ]),
    ],
    swiftLanguageModes: [.v6]
)
