import Foundation
import PeerlogEncoding
import PeerlogTestSupport
import Testing

/// A real `peerlog relay` process between real daemons that are never online together; and a
/// removed member's receipt, carried to the relay by another member, refused there (with an
/// error to that member) and rejected the same way by every replica.
/// Plaintext groups: the relay's mechanics are the subject (EncryptedGroupCLITests runs an
/// encrypted group through a relay).
@Suite(.serialized)
struct RelayTests {
    let dir: String
    init() throws { dir = try TestSupport.temporaryDirectory() }

    struct Person {
        let home: String
        let identity: String
    }

    func string(_ j: JSON?) -> String? { if case .string(let s)? = j { s } else { nil } }

    func log(_ home: String, _ group: String) throws -> [JSON] {
        guard case .array(let items) = try peerlogJSON(["log", "--home", home, group]) else { return [] }
        return items
    }

    /// seq → CID of the committed log.
    func committed(_ home: String, _ group: String) throws -> [String: String] {
        var out = [String: String]()
        for item in try log(home, group) where item["status"] == .string("committed") {
            if case .number(let seq)? = item["seq"], let cid = string(item["cid"]) { out[seq] = cid }
        }
        return out
    }

    func tentativeCount(_ home: String, _ group: String) -> Int {
        ((try? log(home, group)) ?? []).count { $0["status"] == .string("tentative") }
    }

    /// A relay home, its key and identity, and a free port that stays its address.
    func makeRelay() throws -> (home: String, key: String, identity: String, port: Int) {
        let home = dir + "/relay"
        try expectPeerlog(["relay", "init", "--home", home, "--name", "test-relay"])
        let key = try expectPeerlog(["relay", "key", "--home", home]).trimmingCharacters(in: .whitespacesAndNewlines)
        let identity = string(try peerlogJSON(["id", "--home", home])["identity"]) ?? ""
        return (home, key, identity, try TestSupport.freePort())
    }

    func startRelay(
        _ relay: (home: String, key: String, identity: String, port: Int), allow: [String]
    ) throws -> DaemonProcess {
        try DaemonProcess(
            home: relay.home, listenPort: relay.port, arguments: allow.flatMap { ["--allow", $0] },
            command: ["relay", "run"])
    }

    /// Alice creates the group, invites Bob (and Carol), names the relay and writes; she and
    /// Bob then take turns online, never together. Returns the group id.
    func devicesNeverOnlineTogether(
        alice: Person, bob: Person, carol: Person?, relay: (home: String, key: String, identity: String, port: Int)
    ) throws -> String {
        let group = string(try peerlogJSON(["group", "create", "--home", alice.home, "trip", "--plaintext"])["id"])!
        try expectPeerlog(["group", "add", "--home", alice.home, group, bob.identity])
        if let carol { try expectPeerlog(["group", "add", "--home", alice.home, group, carol.identity]) }
        try expectPeerlog([
            "group", "sequencer", "--home", alice.home, group, "relay", "127.0.0.1:\(relay.port)", relay.key,
        ])
        try expectPeerlog(["put", "--home", alice.home, group, "from-alice", "1"])

        // Alice alone: her node dials the relay the group names; the relay takes the group and commits her write.
        var a = try DaemonProcess(home: alice.home)
        #expect(
            TestSupport.waitUntil(timeout: 30) {
                (try? committed(relay.home, group).count) == (try? committed(alice.home, group).count)
                    && tentativeCount(alice.home, group) == 0
            },
            "relay did not take Alice's group: \(a.stderr)")
        a.stop()

        // Bob alone: he holds nothing yet, so he dials the relay by hand (the address and the
        // relay's identity come with the invitation), receives the group, accepts and writes.
        for p in [bob] + (carol.map { [$0] } ?? []) {
            let d = try DaemonProcess(
                home: p.home, arguments: ["--peer", "127.0.0.1:\(relay.port)", "--allow", relay.identity])
            #expect(
                TestSupport.waitUntil(timeout: 30) {
                    (try? TestSupport.peerlog(["group", "accept", "--home", p.home, group]).status) == 0
                }, "\(p.home) got no invitation: \(d.stderr)")
            try expectPeerlog(["put", "--home", p.home, group, "from-\(p.home.split(separator: "/").last!)", "2"])
            #expect(
                TestSupport.waitUntil(timeout: 30) { tentativeCount(p.home, group) == 0 },
                "\(p.home)'s writes were not committed by the relay: \(d.stderr)")
            d.stop()
        }

        // Alice again, Bob offline: she gets his acceptance and his write through the relay.
        a = try DaemonProcess(home: alice.home)
        #expect(
            TestSupport.waitUntil(timeout: 30) {
                (try? TestSupport.peerlog(["get", "--home", alice.home, group, "from-bob"]).stdout.contains("2"))
                    == true
            }, "Alice did not get Bob's write: \(a.stderr)")
        #expect(
            TestSupport.waitUntil(timeout: 30) {
                (try? committed(alice.home, group)) == (try? committed(relay.home, group))
            })
        a.stop()
        return group
    }

    @Test func devicesNeverOnlineTogetherSyncThroughTheRelay() throws {
        let relay = try makeRelay()
        let alice = try makePerson("alice", in: dir)
        let bob = try makePerson("bob", in: dir)
        let r = try startRelay(relay, allow: [alice.identity])
        defer { r.stop() }
        let group = try devicesNeverOnlineTogether(
            alice: Person(home: alice.home, identity: alice.identity),
            bob: Person(home: bob.home, identity: bob.identity), carol: nil, relay: relay)

        // Every seq after the change is signed by the relay; the replicas agree.
        let log = try self.log(alice.home, group)
        let envelopes = try committed(alice.home, group)
        #expect(envelopes == (try committed(bob.home, group)).merging(envelopes) { a, _ in a })
        #expect(log.contains { $0["type"] == .string("entity.put") && $0["status"] == .string("committed") })
        let hashes = try [alice.home, relay.home].map { try expectPeerlog(["state-hash", "--home", $0, group]) }
        #expect(Set(hashes).count == 1, "state hashes differ: \(hashes)")
        let status = try peerlogJSON(["status", "--home", relay.home])
        guard case .array(let groups)? = status["groups"] else {
            Issue.record("no groups in relay status")
            return
        }
        #expect(string(groups.first?["sequencer"]?["authority"]) == "relay")
    }

    @Test func removedMembersReceiptIsRefusedByTheRelayAndRejectedEverywhere() throws {
        let relay = try makeRelay()
        let a = try makePerson("alice", in: dir)
        let b = try makePerson("bob", in: dir)
        let c = try makePerson("carol", in: dir)
        let alice = Person(home: a.home, identity: a.identity)
        let bob = Person(home: b.home, identity: b.identity)
        let carol = Person(home: c.home, identity: c.identity)
        var r = try startRelay(relay, allow: [alice.identity])
        let group = try devicesNeverOnlineTogether(alice: alice, bob: bob, carol: carol, relay: relay)

        // Alice removes Bob; the relay commits it. Carol is offline and does not know yet.
        let ad = try DaemonProcess(home: alice.home)
        try expectPeerlog(["group", "remove", "--home", alice.home, group, bob.identity])
        #expect(
            TestSupport.waitUntil(timeout: 30) { tentativeCount(alice.home, group) == 0 },
            "the removal was not committed: \(ad.stderr)")
        ad.stop()
        r.stop()

        // The relay is down. Bob, who has not heard, writes; Carol gets it from him on the LAN.
        try expectPeerlog(["put", "--home", bob.home, group, "after-removal", "3"])
        let bobCID = string(try log(bob.home, group).last { $0["type"] == .string("entity.put") }?["cid"])!
        let carolPort = try TestSupport.freePort()
        let cd = try DaemonProcess(home: carol.home, listenPort: carolPort)
        let bd = try DaemonProcess(home: bob.home, arguments: ["--peer", "127.0.0.1:\(carolPort)"])
        #expect(
            TestSupport.waitUntil(timeout: 30) {
                ((try? log(carol.home, group)) ?? []).contains { string($0["cid"]) == bobCID }
            }, "Carol did not get Bob's write: \(cd.stderr) \(bd.stderr)")
        bd.stop()

        // The relay comes back: Carol forwards Bob's receipt, the relay refuses it and tells her.
        r = try startRelay(relay, allow: [alice.identity])
        defer { r.stop() }
        var refusal: JSON?
        #expect(
            TestSupport.waitUntil(timeout: 30) {
                guard case .array(let list)? = try? peerlogJSON(["status", "--home", carol.home])["refusals"] else {
                    return false
                }
                refusal = list.first { string($0["cid"]) == bobCID }
                return refusal != nil
            }, "Carol was not told of the refusal: \(cd.stderr)")
        #expect(string(refusal?["by"]) == relay.key)
        #expect(
            string(refusal?["reason"])?.contains("not an active member") == true,
            "reason: \(String(describing: refusal))")
        #expect(cd.stderr.contains("refused receipt \(bobCID)"))
        #expect(
            TestSupport.waitUntil(timeout: 30) {
                (try? committed(carol.home, group)) == (try? committed(relay.home, group))
            })
        cd.stop()

        // Alice comes back too. Bob's receipt is never committed, and every replica rejects it with the same reason.
        let ad2 = try DaemonProcess(home: alice.home)
        defer { ad2.stop() }
        #expect(
            TestSupport.waitUntil(timeout: 30) {
                ((try? log(alice.home, group)) ?? []).contains { string($0["cid"]) == bobCID }
            }, "Alice did not get Bob's receipt: \(ad2.stderr)")
        var reasons = [String: String]()
        for home in [alice.home, carol.home, relay.home] {
            let item = try log(home, group).first { string($0["cid"]) == bobCID }
            #expect(item?["status"] == .string("tentative"), "\(home): \(String(describing: item))")
            reasons[home] = string(item?["rejected"]) ?? "not rejected"
        }
        #expect(
            Set(reasons.values).count == 1 && reasons.values.first?.contains("not an active member") == true,
            "reasons: \(reasons)")
        #expect(try committed(alice.home, group) == committed(relay.home, group))
        #expect(try committed(carol.home, group) == committed(relay.home, group))
        let hashes = try [alice.home, carol.home, relay.home].map {
            try expectPeerlog(["state-hash", "--home", $0, group])
        }
        #expect(Set(hashes).count == 1, "state hashes differ: \(hashes)")
    }
}
