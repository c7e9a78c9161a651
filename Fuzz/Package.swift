// swift-tools-version:6.1
// libFuzzer targets, kept out of the main package because they need `-sanitize=fuzzer`.
// Build and run with tools/fuzz.sh.
import PackageDescription

let package = Package(
    name: "PeerlogFuzz",
    dependencies: [.package(name: "Peerlog", path: "..")],
    targets: [
        .executableTarget(
            name: "FuzzFrames",
            dependencies: [.product(name: "PeerlogFuzzHarness", package: "Peerlog")],
            swiftSettings: [.unsafeFlags(["-parse-as-library"])]
        ),
        .executableTarget(
            name: "FuzzSyncMessages",
            dependencies: [.product(name: "PeerlogFuzzHarness", package: "Peerlog")],
            swiftSettings: [.unsafeFlags(["-parse-as-library"])]
        ),
    ],
    swiftLanguageModes: [.v6]
)
