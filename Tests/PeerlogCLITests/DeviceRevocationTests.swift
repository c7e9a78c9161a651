import Foundation
import PeerlogEncoding
import PeerlogEngine
import PeerlogModel
import PeerlogTestSupport
import Testing

/// Issue 16, item 5: three real daemons on loopback. Alice's laptop A and her second laptop B
/// (the same identity), and Carol's C share a group. Revoking B on A cuts B off everywhere:
/// A and C refuse it at the handshake with the reason, it receives nothing new, and a receipt
/// it writes afterwards is rejected at A and C.
@Suite(.serialized)
struct DeviceRevocationTests {
    let dir: String
    init() throws { dir = try TestSupport.temporaryDirectory() }

    @discardableResult
    func ok(_ args: String..., sourceLocation: SourceLocation = #_sourceLocation) throws -> String {
        try expectPeerlog(args, sourceLocation: sourceLocation)
    }

    func text(_ value: JSON?) -> String? { if case .string(let s)? = value { s } else { nil } }

    /// Whether `home`'s status shows a connected peer with this device id.
    func connected(_ home: String, to device: String) -> Bool {
        guard let st = try? peerlogJSON(["status", "--home", home]), case .array(let peers)? = st["peers"] else {
            return false
        }
        return peers.contains { text($0["device"]) == device && $0["state"] == .string("connected") }
    }

    /// An export file (docs/PROTOCOL.md §13) of one `put stolen 4` signed by `device`, written
    /// by `Replica.export` from a replica of the thief's that holds only that receipt.
    func writeStolenExport(to file: String, by device: LocalDevice, group: GroupID) throws {
        let op = GroupOperation.entityPut(key: "stolen", value: .int(4))
        let receipt = try device.sign(
            Receipt.Draft(
                group: group, type: op.receiptType, counter: 1,
                hlc: HLCTimestamp(physical: WallClock.nowMillis(), logical: 0), body: op.body))
        let thief = try Replica(path: dir + "/thief.sqlite", device: device)
        #expect(try thief.ingest(receipts: [receipt]).stored == 1)
        var lines = [String]()
        try thief.export(group: group, partial: true) { lines.append($0) }
        try (lines.joined(separator: "\n") + "\n").write(toFile: file, atomically: true, encoding: .utf8)
    }

    @Test func aRevokedLaptopIsCutOffEverywhere() throws {
        let a = try makePerson("alice", in: dir)
        let c = try makePerson("carol", in: dir)
        // Alice's second laptop: the key files written directly (what `device link` will do).
        let bHome = dir + "/alice-b"
        let laptopB = try LocalDevice.load(home: a.home).additionalDevice(
            name: "laptop-b", createdAt: WallClock.nowMillis())
        try laptopB.save(home: bHome)
        let b = laptopB.device.string
        let deviceA = try #require(text(try peerlogJSON(["id", "--home", a.home])["device"]))
        let deviceC = try #require(text(try peerlogJSON(["id", "--home", c.home])["device"]))

        let group = try #require(text(try peerlogJSON(["group", "create", "--home", a.home, "team"])["id"]))
        try ok("group", "add", "--home", a.home, group, c.identity)
        try ok("put", "--home", a.home, group, "before", "1")

        let da = try DaemonProcess(home: a.home)
        defer { da.stop() }
        let dc = try DaemonProcess(home: c.home, arguments: ["--peer", da.address, "--allow", a.identity])
        defer { dc.stop() }
        let db = try DaemonProcess(home: bHome, arguments: ["--peer", da.address, "--peer", dc.address])
        defer { db.stop() }
        #expect(
            TestSupport.waitUntil(timeout: 30) {
                (try? TestSupport.peerlog(["group", "show", "--home", c.home, group]).status) == 0
            }, "carol never received the group\n\(dc.stderr)")
        try ok("group", "accept", "--home", c.home, group)
        #expect(
            TestSupport.waitUntil(timeout: 30) {
                (try? TestSupport.peerlog(["get", "--home", bHome, group, "before"]).status) == 0
                    && connected(bHome, to: deviceA) && connected(bHome, to: deviceC)
            }, "laptop B never synced with A and C\n\(db.stderr)")

        // A learned of B at the handshake; B is listed, not revoked.
        let listed = try peerlogJSON(["device", "list", "--home", a.home])
        guard case .array(let devices) = listed else {
            Issue.record("device list printed \(listed)")
            return
        }
        #expect(Set(devices.compactMap { text($0["device"]) }) == [deviceA, b], "\(listed)")
        #expect(devices.allSatisfy { $0["revoked"] == .bool(false) && $0["revokedAt"] == .null }, "\(listed)")

        // Revoking the device you are on is refused, and nothing is written.
        let own = try TestSupport.peerlog(["device", "revoke", "--home", a.home, deviceA])
        #expect(own.status != 0 && own.stderr.contains("the device this home runs on"), "\(own)")
        // A typo is refused too (an id no replica saw).
        let unknown = try TestSupport.peerlog(["device", "revoke", "--home", a.home, deviceC])
        #expect(unknown.status != 0 && unknown.stderr.contains("not a known device"), "\(unknown)")

        // Revoke B while every daemon runs.
        let revoked = try peerlogJSON(["device", "revoke", "--home", a.home, b])
        let reason = try #require(text(revoked["reason"]))
        #expect(reason.hasPrefix("device \(b) was revoked by identity \(a.identity) at "), "\(revoked)")
        #expect(revoked["groups"] == .array([.string(group)]), "recorded in the group: \(revoked)")
        let after = try peerlogJSON(["device", "list", "--home", a.home])
        guard case .array(let devicesAfter) = after else { return }
        #expect(devicesAfter.contains { text($0["device"]) == b && $0["revoked"] == .bool(true) }, "\(after)")

        // B is told why and knows it is revoked; A and C drop it and refuse it from then on.
        #expect(
            TestSupport.waitUntil(timeout: 20) {
                db.stderr.contains("this device was revoked: \(reason)")
                    && !connected(a.home, to: b) && !connected(c.home, to: b)
            }, "B was not cut off\nB:\n\(db.stderr)\nA:\n\(da.stderr)\nC:\n\(dc.stderr)")
        #expect(text(try peerlogJSON(["status", "--home", bHome])["revoked"]) == reason)
        #expect(try ok("status", "--home", bHome).contains("REVOKED: \(reason)"))
        #expect(
            TestSupport.waitUntil(timeout: 20) {
                let log = db.stderr
                return log.contains("closed by peer: device \(b): \(reason)")
                    || log.contains("closed by peer: \(reason)")
            }, "B's log does not show the refusal\n\(db.stderr)")
        // B redials both and is refused at the handshake by each (the responder says why).
        #expect(
            TestSupport.waitUntil(timeout: 30) {
                da.stderr.contains("not authorized: device \(b): \(reason)")
                    && dc.stderr.contains("not authorized: device \(b): \(reason)")
            }, "handshakes not refused\nA:\n\(da.stderr)\nC:\n\(dc.stderr)")

        // Nothing new reaches B.
        try ok("put", "--home", a.home, group, "after", "2")
        try ok("put", "--home", c.home, group, "carol-after", "3")
        #expect(
            TestSupport.waitUntil(timeout: 20) {
                (try? TestSupport.peerlog(["get", "--home", c.home, group, "after"]).status) == 0
                    && (try? TestSupport.peerlog(["get", "--home", a.home, group, "carol-after"]).status) == 0
            }, "A and C stopped syncing\n\(da.stderr)\n\(dc.stderr)")
        // The barrier: B has dialled each of them again since both writes were there, and each
        // refused it at the handshake (a refusal logged after the writes), so had anything
        // leaked it would have leaked by now.
        let refusal = "not authorized: device \(b): \(reason)"
        let (refusedByA, refusedByC) = (da.stderr.count(of: refusal), dc.stderr.count(of: refusal))
        #expect(
            // B's redial back-off grows to 30–60 s and a refusal does not reset it.
            TestSupport.waitUntil(timeout: 150) {
                da.stderr.count(of: refusal) > refusedByA && dc.stderr.count(of: refusal) > refusedByC
            }, "B did not dial again\nA:\n\(da.stderr)\nC:\n\(dc.stderr)")
        for key in ["after", "carol-after"] {
            #expect(try TestSupport.peerlog(["get", "--home", bHome, group, key]).status == 1, "\(key) reached B")
        }
        // B keeps redialling, and an initiator counts itself connected from its last handshake
        // message until the responder's refusal arrives (PROTOCOL §14.3): a status read can land
        // in that moment, so B must be found without either connection, not at one instant.
        #expect(
            TestSupport.waitUntil(timeout: 60) { !connected(bHome, to: deviceA) && !connected(bHome, to: deviceC) },
            "B stays connected\n\(db.stderr)")

        // What B writes now is rejected at A and C, even carried by hand.
        let file = dir + "/b-export.jsonl"
        let put = try TestSupport.peerlog(["put", "--home", bHome, group, "stolen", "4"])
        if put.status == 0 {
            try ok("export", "--home", bHome, group, file)
        } else {
            // B held the group's record of its revocation before A and C cut it off (pushed to
            // it with the write that made it), so its own replica refuses the write. A thief's
            // tool need not: the same write signed with B's key, in an export file of its own.
            #expect(put.stderr.contains("was revoked by identity \(a.identity) in this group"), "\(put)")
            try writeStolenExport(to: file, by: laptopB, group: try GroupID(string: group))
        }
        for home in [a.home, c.home] {
            _ = try TestSupport.peerlog(["import", "--home", home, file])
            #expect(try TestSupport.peerlog(["get", "--home", home, group, "stolen"]).status == 1, "\(home)")
            let dead = try ok("dead-letters", "--home", home)
            #expect(dead.contains("was revoked by identity \(a.identity) in this group"), "\(home): \(dead)")
        }
        #expect(da.isRunning && dc.isRunning && db.isRunning)
    }
}

extension String {
    /// How many times `needle` occurs (without overlaps).
    fileprivate func count(of needle: String) -> Int { components(separatedBy: needle).count - 1 }
}
