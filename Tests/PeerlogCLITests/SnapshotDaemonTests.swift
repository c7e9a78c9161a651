import Foundation
import PeerlogEncoding
import PeerlogEngine
import PeerlogModel
import PeerlogTestSupport
import Testing

/// A new member joins a long log through two real daemons on loopback: it starts from Ann's
/// newest snapshot and takes only the tail (docs/PROTOCOL.md §23.3).
@Suite(.serialized)
struct SnapshotDaemonTests {
    @Test func anInviteeStartsFromTheSnapshotOverRealDaemons() throws {
        let dir = try TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let log = try LongLog(dir: dir, writes: 12_000, invitationLast: false, snapshots: true)
        // Snapshots were made at 10,000 as the log was ingested; one more a little before the end.
        let annHome = log.annHome
        let made = try peerlogJSON(["group", "snapshot", log.group.string, "--home", annHome])
        guard case .number(let seqText)? = made["seq"], let seq = Int(seqText) else {
            Issue.record("no snapshot seq")
            return
        }
        // A tail after the snapshot: Ann writes a few more (her daemon is not running yet).
        for i in 0..<5 { try expectPeerlog(["put", log.group.string, "tail\(i)", "\(i)", "--home", annHome]) }
        let ann = try DaemonProcess(home: annHome)
        let bob = try DaemonProcess(
            home: log.bobHome, arguments: ["--peer", ann.address, "--allow", log.ann.identity.string])
        defer {
            ann.stop()
            bob.stop()
        }
        let total = log.total + 5
        #expect(
            TestSupport.waitUntil(timeout: 60) { log.bobCommitted() == total },
            "bob stalled at \(log.bobCommitted() ?? 0) of \(total)\n\(bob.stderr.suffix(3_000))")
        let show = try peerlogJSON(["group", "show", log.group.string, "--home", log.bobHome])
        #expect(show["floor"] == .number(String(seq)), "bob's floor: \(String(describing: show["floor"]))")
        let hashes = try [annHome, log.bobHome].map {
            try expectPeerlog(["state-hash", log.group.string, "--home", $0])
        }
        #expect(hashes[0] == hashes[1])
        // Bob holds the tail and the anchor, not the 12,000 receipts below the snapshot.
        let bobLog = try expectPeerlog(["log", log.group.string, "--committed", "--home", log.bobHome, "--json"])
        guard case .array(let items) = try JSON.parse(bobLog) else {
            Issue.record("bob's log is not an array")
            return
        }
        #expect(items.count < 50, "bob holds \(items.count) committed receipts")
        #expect(try TestSupport.peerlog(["check", "--home", log.bobHome]).status == 0)
    }
}
