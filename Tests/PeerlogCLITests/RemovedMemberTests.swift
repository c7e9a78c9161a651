import Foundation
import PeerlogEncoding
import PeerlogTestSupport
import Testing

/// Issue 33, item 2: a member removed while its daemon is connected is told, with the signed
/// removal itself, before the link closes: its own view says it was removed, and its daemon
/// then redials the owner, which refuses it, with a growing backoff, not every second.
@Suite(.serialized)
struct RemovedMemberTests {
    let dir: String
    init() throws { dir = try TestSupport.temporaryDirectory() }

    func status(of identity: String, in home: String, _ group: String) -> String? {
        guard case .array(let members)? = try? peerlogJSON(["group", "show", "--home", home, group])["members"]
        else { return nil }
        for m in members where m["identity"] == .string(identity) {
            if case .string(let s)? = m["status"] { return s }
        }
        return nil
    }

    @Test func aRemovedMemberKnowsItAndStopsCallingEverySecond() throws {
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let a = try makePerson("alice", in: dir)
        let b = try makePerson("bob", in: dir)
        let group = try makeSharedGroup(owner: a, others: [b])
        let da = try DaemonProcess(home: a.home)
        defer { da.stop() }
        let db = try DaemonProcess(home: b.home, arguments: ["--peer", da.address, "--allow", a.identity])
        defer { db.stop() }
        #expect(acceptWhenInvited(b.home, group), "bob never received the group\n\(db.stderr)")
        #expect(
            TestSupport.waitUntil(timeout: 60) { status(of: b.identity, in: a.home, group) == "active" },
            "bob's acceptance never reached alice\n\(da.stderr)")

        try expectPeerlog(["group", "remove", "--home", a.home, group, b.identity])
        // Bob's own committed view says he was removed: he received the removal, signed.
        #expect(
            TestSupport.waitUntil(timeout: 60) { status(of: b.identity, in: b.home, group) == "removed" },
            "bob was never told\n\(db.stderr)\n\(da.stderr)")
        let removedAt = Date()
        // Over the next 20 s he redials with a growing backoff (1, 2, 4, 8 s, with jitter): a few
        // refusals in alice's log, not one a second.
        Thread.sleep(forTimeInterval: max(0, 20 - Date().timeIntervalSince(removedAt)))
        let refusals = da.stderr.components(separatedBy: "not authorized").count - 1
        #expect(refusals <= 8, "alice refused bob \(refusals) times in 20 s\n\(da.stderr.suffix(3_000))")
        #expect(db.stderr.contains("retrying in"), "\(db.stderr.suffix(2_000))")
    }
}
