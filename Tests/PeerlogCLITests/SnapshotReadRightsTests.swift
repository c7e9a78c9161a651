import Foundation
import PeerlogEncoding
import PeerlogTestSupport
import Testing

/// Issue 32, item 5: a snapshot hands a new member only what it may read. In a group without
/// `--history`, values sealed under a key retired by a removal are not in the snapshot a member
/// invited afterwards starts from, as the log would never open them for it; values under the
/// key in use are, and read once it accepts.
@Suite(.serialized)
struct SnapshotReadRightsTests {
    let dir: String
    init() throws { dir = try TestSupport.temporaryDirectory() }

    @Test func aMemberInvitedAfterARemovalGetsNoValueUnderTheRetiredKeyFromASnapshot() throws {
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let ann = try makePerson("ann", in: dir)
        let carol = try makePerson("carol", in: dir)
        let dave = try makePerson("dave", in: dir)
        let group = try createGroup(ann.home, "diary")
        try expectPeerlog(["group", "add", "--home", ann.home, group, carol.identity])
        let batch = dir + "/old.jsonl"
        try (0..<50).map { "{\"key\": \"old\($0)\", \"value\": \($0)}" }.joined(separator: "\n")
            .write(toFile: batch, atomically: true, encoding: .utf8)
        try expectPeerlog(["put", "--home", ann.home, group, "--batch", batch])
        let da = try DaemonProcess(home: ann.home)
        defer { da.stop() }
        do {
            let dc = try DaemonProcess(home: carol.home, arguments: ["--peer", da.address, "--allow", ann.identity])
            defer { dc.stop() }
            #expect(acceptWhenInvited(carol.home, group), "carol never received the group\n\(dc.stderr)")
            #expect(
                TestSupport.waitUntil(timeout: 60) { peerlogValue(carol.home, group, "old49") == "49" }, "\(dc.stderr)")
        }
        // Carol, an active member, is removed: the key the 50 values are sealed under is retired.
        try expectPeerlog(["group", "remove", "--home", ann.home, group, carol.identity])
        try expectPeerlog(["put", "--home", ann.home, group, "new", "\"after the removal\""])
        try expectPeerlog(["group", "add", "--home", ann.home, group, dave.identity])
        try expectPeerlog(["group", "snapshot", "--home", ann.home, group])

        let dd = try DaemonProcess(home: dave.home, arguments: ["--peer", da.address, "--allow", ann.identity])
        defer { dd.stop() }
        #expect(
            TestSupport.waitUntil(timeout: 60) {
                (try? TestSupport.peerlog(["group", "show", "--home", dave.home, group]).status) == 0
            }, "dave never received the group\n\(dd.stderr)")
        // He started from the snapshot (a floor), and before accepting reads none of the old values.
        let show = try peerlogJSON(["group", "show", "--home", dave.home, group])
        #expect(show["floor"] != nil && show["floor"] != .null, "\(show)")
        #expect((0..<50).allSatisfy { peerlogValue(dave.home, group, "old\($0)") == nil })
        try expectPeerlog(["group", "accept", "--home", dave.home, group])
        #expect(
            TestSupport.waitUntil(timeout: 60) { peerlogValue(dave.home, group, "new") == "\"after the removal\"" },
            "dave cannot read the value under the key in use\n\(dd.stderr)")
        // Accepted, with the key in use: still none of the 50 under the retired key, as by the log.
        #expect((0..<50).allSatisfy { peerlogValue(dave.home, group, "old\($0)") == nil })
    }
}
