import Foundation
import PeerlogEncoding
import PeerlogModel
import PeerlogTestSupport
import Testing

/// Issue 32, item 6: a person's new laptop reads its own history. In a group without
/// `--history` that lost a member (its key rotated), a device linked to the owner's identity
/// afterwards gets every key its sibling holds, reads the values written under the retired key,
/// and its state hash is its sibling's.
@Suite(.serialized)
struct LinkedDeviceKeysTests {
    let dir: String
    init() throws { dir = try TestSupport.temporaryDirectory() }

    @Test func aLinkedLaptopReadsValuesWrittenUnderRetiredKeys() throws {
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let a = try makePerson("alice", in: dir)
        let c = try makePerson("carol", in: dir)
        let group = try createGroup(a.home, "diary")
        try expectPeerlog(["group", "add", "--home", a.home, group, c.identity])
        for i in 0..<5 { try expectPeerlog(["put", "--home", a.home, group, "old\(i)", "\(i)"]) }
        let da = try DaemonProcess(home: a.home)
        defer { da.stop() }
        do {
            let dc = try DaemonProcess(home: c.home, arguments: ["--peer", da.address, "--allow", a.identity])
            defer { dc.stop() }
            #expect(acceptWhenInvited(c.home, group), "carol never received the group\n\(dc.stderr)")
            #expect(TestSupport.waitUntil(timeout: 60) { peerlogValue(c.home, group, "old4") == "4" }, "\(dc.stderr)")
        }
        // Carol is removed: the key the old values are sealed under is retired.
        try expectPeerlog(["group", "remove", "--home", a.home, group, c.identity])
        try expectPeerlog(["put", "--home", a.home, group, "new", "\"after\""])

        // Alice links a laptop afterwards (its key files written as `device link` does).
        let bHome = dir + "/alice-b"
        let laptop = try LocalDevice.load(home: a.home).additionalDevice(
            name: "laptop-b", createdAt: WallClock.nowMillis())
        try laptop.save(home: bHome)
        let db = try DaemonProcess(home: bHome, arguments: ["--peer", da.address])
        defer { db.stop() }
        #expect(
            TestSupport.waitUntil(timeout: 60) { peerlogValue(bHome, group, "new") == "\"after\"" },
            "the laptop never read the current value\n\(db.stderr)")
        #expect(
            TestSupport.waitUntil(timeout: 60) {
                (0..<5).allSatisfy { peerlogValue(bHome, group, "old\($0)") == "\($0)" }
            },
            "the laptop cannot read values under the retired key\n\(db.stderr)")
        let hashes = try [a.home, bHome].map { try expectPeerlog(["state-hash", "--home", $0, group]) }
        #expect(hashes[0] == hashes[1], "\(hashes)")
    }
}
