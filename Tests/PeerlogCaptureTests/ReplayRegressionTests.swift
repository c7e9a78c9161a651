import Foundation
import PeerlogCapture
import PeerlogCaptureTools
import PeerlogCrypto
import PeerlogEncoding
import PeerlogEngine
import PeerlogModel
import PeerlogTestSupport
import Testing

/// Captures of real sessions (Tests/Captures) replayed offline must give the recorded state
/// hashes: a replayed capture is a regression test of the sync session and the replica.
@Suite struct ReplayRegressionTests {
    struct Expected {
        let file: String, group: String, committedSeq: UInt64, tentativeCount: UInt64, committed: String,
            tentative: String
    }

    static func expected() throws -> [Expected] {
        let text = try String(contentsOfFile: TestSupport.repoRoot + "/Tests/Captures/expected.json", encoding: .utf8)
        guard case .array(let list)? = try JSON.parse(text)["captures"] else {
            throw TestSupport.ProcessError(description: "no captures listed")
        }
        return list.map { c in
            func s(_ k: String) -> String { if case .string(let v)? = c[k] { v } else { "" } }
            func n(_ k: String) -> UInt64 { if case .number(let v)? = c[k] { UInt64(v) ?? 0 } else { 0 } }
            return Expected(
                file: s("file"), group: s("group"), committedSeq: n("committed_seq"),
                tentativeCount: n("tentative_count"), committed: s("committed"), tentative: s("tentative"))
        }
    }

    func replay(_ file: String) throws -> OfflineReplay.Result {
        let capture = try CaptureFile(path: TestSupport.repoRoot + "/Tests/Captures/" + file)
        let device = try LocalDevice.generate(name: "replay", createdAt: 1)
        let clock = ReplayClock()
        let dir = try TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let replica = try Replica(path: dir + "/replica.sqlite", device: device, clock: { clock.now() })
        return try OfflineReplay.run(capture: capture, connection: nil, into: replica, device: device, clock: clock)
    }

    @Test func recordedSessionsReplayToTheirStateHashes() throws {
        let all = try Self.expected()
        #expect(all.count >= 2)
        for e in all {
            let result = try replay(e.file)
            #expect(result.sessionErrors.isEmpty, "\(e.file): \(result.sessionErrors)")
            let g = try #require(
                result.groups.first { $0.group.string == e.group }, "\(e.file): group \(e.group) missing")
            #expect(g.committed == e.committedSeq, "\(e.file)")
            #expect(g.tentative == e.tentativeCount, "\(e.file)")
            #expect(hexString(g.committedHash) == e.committed, "\(e.file)")
            #expect(hexString(g.tentativeHash) == e.tentative, "\(e.file)")
        }
    }

    @Test func aReplayIsDeterministic() throws {
        let a = try replay("relayed.pcapng")
        let b = try replay("relayed.pcapng")
        #expect(a.groups.map(\.committedHash) == b.groups.map(\.committedHash))
        #expect(a.groups.map(\.tentativeHash) == b.groups.map(\.tentativeHash))
        #expect(a.itemsFed == b.itemsFed)
    }
}
