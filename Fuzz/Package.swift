// swift-tools-version:6.1
// libFuzzer targets, kept out of the main package because they need `-sanitize=fuzzer`.
// Build and run with tools/fuzz.sh.
//
// SwiftPM links executables with `main` aliased to `<Target>_main`, which would hide
// libFuzzer's own `main`; so each target defines `<Target>_main` and starts libFuzzer through
// `LLVMFuzzerRunDriver`.
import PackageDescription

let package = Package(
    name: "PeerlogFuzz",
    // No traits: SHA-256 from libsodium, so this build (every module again, with the fuzzer's
    // instrumentation) compiles no BoringSSL: two thirds of its time otherwise.
    dependencies: [.package(name: "Peerlog", path: "..", traits: [])],
    targets: [
        .target(name: "CFuzzDriver"),
        .executableTarget(
            name: "FuzzFrames",
            dependencies: ["CFuzzDriver", .product(name: "PeerlogFuzzHarness", package: "Peerlog")],
            swiftSettings: [.unsafeFlags(["-parse-as-library"])]
        ),
        .executableTarget(
            name: "FuzzCaptureFiles",
            dependencies: ["CFuzzDriver", .product(name: "PeerlogFuzzHarness", package: "Peerlog")],
            swiftSettings: [.unsafeFlags(["-parse-as-library"])]
        ),
        .executableTarget(
            name: "FuzzPairingMessages",
            dependencies: ["CFuzzDriver", .product(name: "PeerlogFuzzHarness", package: "Peerlog")],
            swiftSettings: [.unsafeFlags(["-parse-as-library"])]
        ),
        .executableTarget(
            name: "FuzzSyncMessages",
            dependencies: ["CFuzzDriver", .product(name: "PeerlogFuzzHarness", package: "Peerlog")],
            swiftSettings: [.unsafeFlags(["-parse-as-library"])]
        ),
    ],
    swiftLanguageModes: [.v6]
)
