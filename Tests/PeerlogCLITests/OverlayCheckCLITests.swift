import Foundation
import PeerlogEncoding
import PeerlogTestSupport
import Testing

/// `peerlog check` proves the maintained tentative view equals a fold from scratch: it exits 2
/// when the view was tampered with, and reports (without failing) a view another binary changed,
/// which reads then fold from scratch until the next write rebuilds it.
struct OverlayCheckCLITests {
    @Test func checkComparesTheMaintainedTentativeViewWithAFold() throws {
        let dir = try TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let alice = try makePerson("alice", in: dir)
        let relay = try makePerson("relay", in: dir)
        guard
            case .string(let relayKey)? = try JSON.parse(
                try TestSupport.peerlogOK(["id", "--home", relay.home, "--json"]))["device"]
        else {
            Issue.record("peerlog id printed no device")
            return
        }
        try expectPeerlog(["group", "create", "--home", alice.home, "trip"])
        // The relay is out of reach: every write after this stays tentative.
        try expectPeerlog(["group", "sequencer", "--home", alice.home, "trip", "relay", "127.0.0.1:9", relayKey])
        for i in 0..<3 { try expectPeerlog(["put", "--home", alice.home, "trip", "k\(i % 2)", "v\(i)"]) }
        let good = try TestSupport.peerlog(["check", "--home", alice.home])
        #expect(good.status == 0 && good.stdout.contains("tentative view: ok"), "\(good.stdout)\(good.stderr)")

        let db = alice.home + "/replica.sqlite"
        // Tampered: a tentative row no receipt wrote.
        try sql(db, "UPDATE overlay_entities SET value = X'01' WHERE key = 'k0'")
        let bad = try TestSupport.peerlog(["check", "--home", alice.home])
        #expect(bad.status == 2 && bad.stdout.contains("MISMATCH: entities differ: k0"), "\(bad.stdout)\(bad.stderr)")

        // Changed by a binary that does not maintain the view: not used, reads fold from scratch.
        try sql(db, "UPDATE overlay_groups SET changes = changes + 1")
        let stale = try TestSupport.peerlog(["check", "--home", alice.home])
        #expect(
            stale.status == 0 && stale.stdout.contains("tentative view: not maintained"),
            "\(stale.stdout)\(stale.stderr)")
        #expect(try expectPeerlog(["get", "--home", alice.home, "trip", "k0"]).contains("v2"))

        // The next write rebuilds it.
        try expectPeerlog(["put", "--home", alice.home, "trip", "k2", "v3"])
        let rebuilt = try TestSupport.peerlog(["check", "--home", alice.home])
        #expect(
            rebuilt.status == 0 && rebuilt.stdout.contains("tentative view: ok"), "\(rebuilt.stdout)\(rebuilt.stderr)")
    }

    private func sql(_ database: String, _ statement: String) throws {
        let script = "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.execute(sys.argv[2]); c.commit()"
        let r = try TestSupport.run("/usr/bin/env", ["python3", "-c", script, database, statement])
        guard r.status == 0 else { throw TestSupport.ProcessError(description: "sqlite: \(r.stderr)") }
    }
}
