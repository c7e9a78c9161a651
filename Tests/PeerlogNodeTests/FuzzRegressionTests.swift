import Foundation
import PeerlogFuzzHarness
import PeerlogTestSupport
import Testing

/// Every input the fuzzers were seeded with or ever crashed on (Fuzz/Seeds, Fuzz/Regressions)
/// runs through the same entry points on every test run.
struct FuzzRegressionTests {
    static func inputs(_ target: String) -> [String] {
        ["Seeds", "Regressions"].flatMap { kind -> [String] in
            let dir = TestSupport.repoRoot + "/Fuzz/\(kind)/\(target)"
            let names = (try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []
            return names.filter { !$0.hasPrefix(".") }.sorted().map { dir + "/" + $0 }
        }
    }

    /// The check every fuzz target runs first (their build hashes with libsodium), here with
    /// swift-crypto: both give FIPS 180-2's digests.
    @Test func sha256KnownAnswers() {
        #expect(FuzzHarness.sha256KnownAnswers() == nil)
    }

    @Test func frameInputsReturn() throws {
        let files = Self.inputs("frames")
        #expect(!files.isEmpty, "no seeds in Fuzz/Seeds/frames")
        for file in files { FuzzHarness.frames(Array(try Data(contentsOf: URL(fileURLWithPath: file)))) }
    }

    @Test func syncInputsReturn() throws {
        let files = Self.inputs("sync")
        #expect(!files.isEmpty, "no seeds in Fuzz/Seeds/sync")
        for file in files { FuzzHarness.syncMessage(Array(try Data(contentsOf: URL(fileURLWithPath: file)))) }
    }

    @Test func captureInputsReturn() throws {
        let files = Self.inputs("capture")
        #expect(files.count >= 2, "seeds in Fuzz/Seeds/capture")
        for file in files { FuzzHarness.captureFile(Array(try Data(contentsOf: URL(fileURLWithPath: file)))) }
    }

    @Test func pairingInputsReturn() throws {
        let files = Self.inputs("pairing")
        #expect(files.count >= 5, "no seeds in Fuzz/Seeds/pairing")
        for file in files { FuzzHarness.pairingMessage(Array(try Data(contentsOf: URL(fileURLWithPath: file)))) }
    }

    /// The pairing seeds are real messages of every mode, as `FuzzHarness.pairingSeeds()` makes
    /// them now (so a format change that outdates them is noticed): same modes and message types.
    @Test func pairingSeedsAreCurrent() throws {
        let seeds = FuzzHarness.pairingSeeds()
        #expect(seeds.count == 5)
        let dir = TestSupport.repoRoot + "/Fuzz/Seeds/pairing/"
        // PEERLOG_WRITE_PAIRING_SEEDS=1 swift test --filter pairingSeedsAreCurrent regenerates them.
        if ProcessInfo.processInfo.environment["PEERLOG_WRITE_PAIRING_SEEDS"] == "1" {
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
            for (name, bytes) in seeds { try Data(bytes).write(to: URL(fileURLWithPath: dir + name)) }
        }
        for (name, bytes) in seeds {
            let path = dir + name
            let kept = try Array(Data(contentsOf: URL(fileURLWithPath: path)))
            // Randomness (shares, sids, nonces) differs; mode byte and length must not.
            #expect(kept.first == bytes.first && kept.count == bytes.count, "\(name): regenerate Fuzz/Seeds/pairing")
        }
    }

    /// The harness itself reaches deep states: an established channel and a decodable message.
    @Test func harnessReachesEstablishedChannelAndSession() {
        #expect(FuzzHarness.establishedForTesting)
        FuzzHarness.syncMessage([0xa1, 0x61, 0x74, 0x65, 0x68, 0x65, 0x6c, 0x6c, 0x6f])
    }
}
