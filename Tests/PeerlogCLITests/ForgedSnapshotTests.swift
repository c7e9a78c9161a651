import Foundation
import PeerlogCaptureTools
import PeerlogChannel
import PeerlogEncoding
import PeerlogEngine
import PeerlogModel
import PeerlogSync
import PeerlogTestSupport
import Testing

/// The attack of issue 32 with real daemons on loopback: member Mal forges a snapshot (every
/// signature verifies; Mal is made solo sequencer and owner, a balance changed) and sends it as a
/// `snapshot` message, straight to the owner's daemon and to a member's daemon that is behind,
/// which then syncs with the owner. No replica takes it (docs/PROTOCOL.md §23.3).
@Suite(.serialized)
struct ForgedSnapshotTests {
    let dir: String
    init() throws { dir = try TestSupport.temporaryDirectory() }

    /// Sends `bundle` as Mal's device to the daemon at `port`, as the answer it never asked
    /// for; returns the `vector` the daemon answers with once it has installed or refused it.
    func sendSnapshot(_ bundle: SnapshotBundle, group: GroupID, as device: LocalDevice, port: Int) throws -> UInt64? {
        let link = try SecureLink(
            host: "127.0.0.1", port: port, device: device, configuration: ChannelConfiguration(), timeout: 30)
        defer { link.close(reason: "done") }
        try link.send(
            SyncMessage.hello(
                versions: SyncSession.versions, capabilities: ["snapshots", "encrypted_groups"], groups: [group]
            ).encoded())
        try link.send(SyncMessage.credit(8).encoded())
        var sent = false
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline {
            try link.pump(until: min(deadline, Date().addingTimeInterval(1)))
            for bytes in link.take() {
                let m = try SyncMessage.decode(bytes, limits: SyncLimits())
                if case .vector(let g, let committed, _) = m, g == group {
                    if sent { return committed }
                    try link.send(SyncMessage.snapshot(group: group, bundle).encoded())
                    sent = true
                }
                if case .error(let code, let message) = m { Issue.record("the daemon closed: \(code) \(message)") }
            }
            if let why = link.closedReason {
                Issue.record("the connection closed: \(why)")
                return nil
            }
        }
        Issue.record("no answer to the snapshot (sent: \(sent))")
        return nil
    }

    func committedAndAuthority(_ home: String, _ group: String) throws -> String {
        let text = try expectPeerlog(["group", "show", "--home", home, group])
        return text.split(separator: "\n").filter { $0.contains("sequencer") || $0.contains("committed") }
            .joined(separator: " | ")
    }

    func noTentative(_ home: String, _ group: String) -> Bool {
        guard let r = try? TestSupport.peerlog(["log", "--home", home, group, "--json"]), r.status == 0 else {
            return false
        }
        return !r.stdout.contains("\"tentative\"")
    }

    /// Joins `member` to `group` through the owner's running daemon, then stops its daemon.
    func join(
        _ member: (home: String, identity: String), owner: DaemonProcess, ownerIdentity: String, group: String
    )
        throws
    {
        let d = try DaemonProcess(home: member.home, arguments: ["--peer", owner.address, "--allow", ownerIdentity])
        defer { d.stop() }
        #expect(acceptWhenInvited(member.home, group), "no invitation reached \(member.home): \(d.stderr)")
        #expect(
            TestSupport.waitUntil(timeout: 60) { noTentative(member.home, group) && noTentative(owner.home, group) },
            "\(d.stderr)")
    }

    @Test(arguments: [false, true]) func aMembersForgedSnapshotTakesOverNoReplica(encrypted: Bool) throws {
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let ann = try makePerson("ann", in: dir)
        let mal = try makePerson("mal", in: dir)
        let bob = try makePerson("bob", in: dir)
        let group = try createGroup(ann.home, "bank", plaintext: !encrypted)
        for m in [mal, bob] { try expectPeerlog(["group", "add", "--home", ann.home, group, m.identity]) }
        try expectPeerlog(["put", "--home", ann.home, group, "balance", "100"])
        let annDaemon = try DaemonProcess(home: ann.home)
        // Mal joins, then Bob, who goes away; Ann writes on without him.
        try join(mal, owner: annDaemon, ownerIdentity: ann.identity, group: group)
        try join(bob, owner: annDaemon, ownerIdentity: ann.identity, group: group)
        annDaemon.stop()
        try expectPeerlog(["put", "--home", ann.home, group, "note", "\"after bob left\""])
        try expectPeerlog(["group", "snapshot", "--home", mal.home, group])

        // Mal forges: 20 seqs ahead (past Bob's mark), solo sequencer and owner, balance 1,000,000.
        let g = try GroupID(string: group)
        let malDevice = try LocalDevice.load(home: mal.home)
        let genuine = try #require(
            try Replica(path: mal.home + "/replica.sqlite", device: malDevice).bootstrapBundle(
                of: g, for: try IdentityID(string: ann.identity), peerCommitted: 0, peerHoldsNothing: true))
        let forged = try SnapshotForgery.forge(
            genuine, by: malDevice, ahead: 20, key: "balance", value: .int(1_000_000))

        // Directly to the owner's daemon: answered with a vector, nothing installed, logged.
        let annBefore = try committedAndAuthority(ann.home, group)
        let annAgain = try DaemonProcess(home: ann.home)
        let answer = try sendSnapshot(forged, group: g, as: malDevice, port: annAgain.port)
        let forgedSeq = try GroupSnapshot(encoded: forged.snapshot).seq
        #expect(answer != nil && answer! < forgedSeq)
        #expect(try committedAndAuthority(ann.home, group) == annBefore)
        #expect(peerlogValue(ann.home, group, "balance", committed: true) == "100")
        #expect(
            TestSupport.waitUntil(timeout: 30) { annAgain.stderr.contains("snapshot refused") },
            "the owner logged no refusal: \(annAgain.stderr)")
        annAgain.stop()

        // To Bob, who is behind: refused, kept as evidence naming Mal's device.
        let bobBefore = try committedAndAuthority(bob.home, group)
        let bobDaemon = try DaemonProcess(home: bob.home)
        _ = try sendSnapshot(forged, group: g, as: malDevice, port: bobDaemon.port)
        bobDaemon.stop()
        #expect(try committedAndAuthority(bob.home, group) == bobBefore)
        #expect(peerlogValue(bob.home, group, "balance", committed: true) == "100")
        let evidence = try expectPeerlog(["dead-letters", "--home", bob.home, "--json"])
        #expect(evidence.contains(CID(hashing: forged.snapshot).string), "\(evidence)")
        #expect(evidence.contains(malDevice.device.string), "\(evidence)")

        // Bob and Ann meet: Bob takes Ann's log, and Ann's group stays hers.
        let annLast = try DaemonProcess(home: ann.home)
        let bobLast = try DaemonProcess(home: bob.home, arguments: ["--peer", annLast.address])
        defer {
            annLast.stop()
            bobLast.stop()
        }
        #expect(
            TestSupport.waitUntil(timeout: 60) { peerlogValue(bob.home, group, "note", committed: true) != nil },
            "bob did not catch up: \(bobLast.stderr)")
        #expect(peerlogValue(ann.home, group, "balance", committed: true) == "100")
        #expect(peerlogValue(bob.home, group, "balance", committed: true) == "100")
        #expect(try committedAndAuthority(ann.home, group) == annBefore)
        let hashes = try [ann.home, bob.home].map { try expectPeerlog(["state-hash", "--home", $0, group]) }
        #expect(hashes[0] == hashes[1])
    }
}
