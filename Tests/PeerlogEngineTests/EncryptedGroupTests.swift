import PeerlogCrypto
import PeerlogEncoding
import PeerlogEngine
import PeerlogModel
import PeerlogStore
import PeerlogTestSupport
import Testing

/// End-to-end encrypted groups in the engine (docs/PROTOCOL.md §22.5): bodies are sealed on
/// write and opened with keys sealed to member devices; a key that arrives after the data
/// unlocks it; a departure starts a new epoch the departed device cannot read; a body that does
/// not open with its key is rejected by every key holder.
struct EncryptedGroupTests {
    let history = GroupEncryptionSettings(history: false)

    /// Alice's encrypted group with Bob an active member (his device got the key at accept).
    func aliceAndBob() throws -> (alice: TestReplica, bob: TestReplica, group: GroupID) {
        let alice = try TestReplica("alice")
        let bob = try TestReplica("bob")
        let group = try alice.replica.createGroup(name: "secret", encryption: history)
        try alice.replica.append(.memberAdded(identity: bob.identity, role: .member), to: group)
        try alice.send(group, to: bob)
        try bob.replica.append(.inviteAccepted, to: group)
        try bob.send(group, to: alice)  // Alice commits the accept and seals the key to Bob's device.
        try alice.send(group, to: bob)
        return (alice, bob, group)
    }

    func bytes(of r: Receipt) -> String { hexString(r.payload) }

    @Test func bodiesAreSealedAndMembersReadThem() throws {
        let (alice, bob, group) = try aliceAndBob()
        try alice.replica.append(.entityPut(key: "plan", value: .text("canary-7f3e")), to: group)
        try alice.send(group, to: bob)
        #expect(try bob.get("plan", group, .committed) == .text("canary-7f3e"))
        #expect(try alice.hashes(group) == bob.hashes(group))
        // Neither the key nor the value is in any stored receipt.
        let (receipts, _) = try alice.holdings(group)
        let canaries = [Array("canary-7f3e".utf8), Array("plan".utf8)].map(hexString)
        for r in receipts where r.type.hasPrefix("entity.") {
            #expect(r.body["k"] != nil && r.body["c"] != nil, "\(r.type) is not sealed: \(r.body)")
            for c in canaries { #expect(!bytes(of: r).contains(c), "plaintext in \(r.cid)") }
        }
        // Bob writes too, under the same key; Alice reads it.
        try bob.replica.append(.entityPut(key: "reply", value: .text("ok")), to: group)
        try bob.send(group, to: alice)
        try alice.send(group, to: bob)
        #expect(try alice.get("reply", group, .committed) == .text("ok"))
        #expect(try alice.hashes(group) == bob.hashes(group))
        // `check`'s replay from nothing proves the materialized state on both.
        for r in [alice, bob] {
            #expect(try r.replica.replayedStateHash(of: group) == r.replica.stateHash(of: group, view: .committed))
        }
    }

    /// A member invited by identity writes before any key reached it (offline): its device
    /// starts an epoch of its own, sealed to the member devices it knows; the others read it.
    @Test func aMemberWithoutTheKeyWritesAtOnceUnderAnEpochOfItsOwn() throws {
        let alice = try TestReplica("alice")
        let bob = try TestReplica("bob")
        let group = try alice.replica.createGroup(name: "secret", encryption: history)
        try alice.replica.append(.memberAdded(identity: bob.identity, role: .member), to: group)
        try alice.replica.append(.entityPut(key: "plan", value: .text("beach")), to: group)
        try alice.send(group, to: bob)
        try bob.replica.append(.inviteAccepted, to: group)
        #expect(try bob.replica.epochKeyCount(of: group) == 0 && bob.get("plan", group, .tentative) == nil)
        let put = try bob.replica.append(.entityPut(key: "reply", value: .text("ok")), to: group)
        let batch = try bob.replica.appendBatch(
            [.entityPut(key: "a", value: .int(1)), .entityDelete(key: "a")], to: group)
        #expect(put.receipt.type == "entity.put" && batch.map(\.receipt.type) == ["entity.put", "entity.delete"])
        // One rotation, before the first sealed write; the batch reuses its key.
        let (bobs, _) = try bob.holdings(group)
        let mine = bobs.filter { $0.author == bob.replica.local.device }.sorted { $0.counter < $1.counter }
        #expect(
            mine.map(\.type) == ["group.invite_accepted", "group.key", "entity.put", "entity.put", "entity.delete"])
        #expect(try bob.replica.epochKeyCount(of: group) == 1)
        #expect(try bob.get("reply", group, .tentative) == .text("ok"))
        try bob.send(group, to: alice)
        #expect(try alice.get("reply", group, .committed) == .text("ok"))
        try alice.send(group, to: bob)  // Alice's key, shared at the accept, opens her write for Bob.
        #expect(try bob.get("plan", group, .committed) == .text("beach"))
        #expect(try alice.hashes(group) == bob.hashes(group))
        #expect(try alice.replica.state(of: group, view: .committed)?.encryption?.epoch == 2)
    }

    @Test func aKeyThatArrivesAfterTheDataUnlocksIt() throws {
        let alice = try TestReplica("alice")
        let bob = try TestReplica("bob")
        let group = try alice.replica.createGroup(name: "secret", encryption: history)
        try alice.replica.append(.memberAdded(identity: bob.identity, role: .member), to: group)
        try alice.send(group, to: bob)
        try bob.replica.append(.inviteAccepted, to: group)
        try bob.send(group, to: alice)
        // Alice's share to Bob is now in her log; Bob receives everything but that share first.
        try alice.replica.append(.entityPut(key: "early", value: .text("v1")), to: group)
        let (receipts, envelopes) = try alice.holdings(group)
        let share = receipts.filter { $0.type == "group.key" }.last!
        _ = try bob.replica.ingest(
            receipts: receipts.filter { $0.cid != share.cid }, envelopes: envelopes.filter { $0.receipt != share.cid })
        // Bob holds the sealed receipt but no key: his tentative view cannot show it, and its
        // envelope waits behind the share's seq.
        #expect(try bob.replica.epochKeyCount(of: group) == 0)
        #expect(try bob.get("early", group, .tentative) == nil)
        #expect(try bob.get("early", group, .committed) == nil)
        try alice.send(group, to: bob)
        #expect(try bob.get("early", group, .committed) == .text("v1"))
        #expect(try alice.hashes(group) == bob.hashes(group))
        #expect(try bob.replica.sealedWaitingCount(of: group) == 0)
    }

    @Test func aLateJoinerWaitsForTheKeyThenReadsTheLog() throws {
        let alice = try TestReplica("alice")
        let bob = try TestReplica("bob")
        let group = try alice.replica.createGroup(name: "secret", encryption: GroupEncryptionSettings(history: true))
        try alice.replica.append(.entityPut(key: "before", value: .text("v0")), to: group)
        try alice.replica.append(.memberAdded(identity: bob.identity, role: .member), to: group)
        try alice.send(group, to: bob)
        // Committed before Bob holds any key: the receipt waits, counted.
        #expect(try bob.get("before", group, .committed) == nil)
        #expect(try bob.replica.sealedWaitingCount(of: group) == 1)
        try bob.replica.append(.inviteAccepted, to: group)
        try bob.send(group, to: alice)
        try alice.send(group, to: bob)
        #expect(try bob.get("before", group, .committed) == .text("v0"), "history on: the earlier epoch opens")
        #expect(try bob.replica.sealedWaitingCount(of: group) == 0)
        #expect(try alice.hashes(group) == bob.hashes(group))
    }

    @Test func aRemovedMemberCannotReadWhatFollows() throws {
        let (alice, bob, group) = try aliceAndBob()
        let carol = try TestReplica("carol")
        try alice.replica.append(.memberAdded(identity: carol.identity, role: .member), to: group)
        try alice.send(group, to: carol)
        try carol.replica.append(.inviteAccepted, to: group)
        try carol.send(group, to: alice)
        try alice.send(group, to: carol)
        let epochBefore = try alice.replica.state(of: group, view: .committed)?.encryption?.epoch
        try alice.replica.append(.memberRemoved(identity: bob.identity), to: group)
        let state = try alice.replica.state(of: group, view: .committed)
        #expect(state?.encryption?.epoch == epochBefore.map { $0 + 1 }, "removal starts a new epoch")
        try alice.replica.append(.entityPut(key: "after", value: .text("not for bob")), to: group)
        // Bob still receives the log (say, from a careless relay): he cannot open what follows.
        try alice.send(group, to: bob)
        try alice.send(group, to: carol)
        #expect(try bob.get("after", group, .committed) == nil)
        #expect(try carol.get("after", group, .committed) == .text("not for bob"))
        // A write Bob sealed with the old key is refused by the rules (he is removed anyway, and
        // the key is retired), so nothing under the old key lands after the removal.
        let rejected = try alice.replica.log(of: group, view: .committed).filter { $0.rejected != nil }
        #expect(rejected.isEmpty)
    }

    /// One local-write path: a batch that removes a member and then writes seals the write
    /// under the epoch the removal starts, in the same transaction, as two single writes do.
    @Test func aBatchThatRemovesAMemberSealsWhatFollowsUnderTheNewEpoch() throws {
        let (alice, bob, group) = try aliceAndBob()
        let epochBefore = try alice.replica.state(of: group, view: .committed)?.encryption?.epoch
        let written = try alice.replica.appendBatch(
            [.memberRemoved(identity: bob.identity), .entityPut(key: "after", value: .text("not for bob"))], to: group)
        #expect(
            written.map(\.receipt.type) == ["group.member_removed", "entity.put"], "the rotation is not the caller's")
        let log = try alice.replica.log(of: group, view: .committed).map(\.receipt.type)
        #expect(Array(log.suffix(3)) == ["group.member_removed", "group.key", "entity.put"])
        #expect(try alice.replica.state(of: group, view: .committed)?.encryption?.epoch == epochBefore.map { $0 + 1 })
        try alice.send(group, to: bob)
        #expect(try bob.get("after", group, .committed) == nil, "bob holds no key of the new epoch")
        #expect(try alice.get("after", group, .committed) == .text("not for bob"))
    }

    /// A member leaves an encrypted group: its leaving retires the keys in use, but a device that
    /// is no member any more starts no epoch; the ones who stay do.
    @Test func aMemberLeavesAnEncryptedGroup() throws {
        let (alice, bob, group) = try aliceAndBob()
        try bob.replica.append(.memberLeft, to: group)
        #expect(try bob.replica.log(of: group, view: .tentative).last?.receipt.type == "group.member_left")
        try bob.send(group, to: alice)
        try alice.replica.append(.entityPut(key: "after", value: .text("not for bob")), to: group)
        try alice.send(group, to: bob)
        #expect(try alice.get("after", group, .committed) == .text("not for bob"))
        #expect(try bob.get("after", group, .committed) == nil)
    }

    @Test func writesOutsideTheRulesAreRefused() throws {
        let alice = try TestReplica("alice")
        let group = try alice.replica.createGroup(name: "secret", encryption: history)
        // A plaintext body in an encrypted group, built by hand, is refused by the rules.
        let plain = GroupOperation.entityPut(key: "k", value: .text("v"))
        #expect(
            GroupRules.apply(
                plain, sender: alice.identity, device: alice.device.device, group: group,
                to: try alice.replica.state(of: group, view: .committed))
                != .success(
                    try alice.replica.state(of: group, view: .committed)!))
        // The app's write is sealed for it.
        try alice.replica.append(plain, to: group)
        #expect(try alice.get("k", group, .committed) == .text("v"))
        // A sealed body under a key the group does not use is refused.
        let stray = try EncryptedBody.seal(
            .textMap(["key": "k", "value": "x"]), key: EpochKey(),
            binding: .init(group: group, type: "entity.put", author: alice.device.device, counter: 9))
        let state = try #require(try alice.replica.state(of: group, view: .committed))
        guard
            case .failure(let v) = GroupRules.apply(
                .sealed(type: "entity.put", body: stray), sender: alice.identity, device: alice.device.device,
                group: group, to: state)
        else {
            Issue.record("a body under a stray key was accepted")
            return
        }
        #expect(v.reason.contains("not in use"))
    }

    @Test func withoutHistoryALateJoinerSeesOnlyWhatFollowsItsJoining() throws {
        let alice = try TestReplica("alice")
        let bob = try TestReplica("bob")
        let group = try alice.replica.createGroup(name: "secret", encryption: history)
        try alice.replica.append(.entityPut(key: "before", value: .text("old")), to: group)
        try alice.replica.append(.memberAdded(identity: bob.identity, role: .member), to: group)
        try alice.send(group, to: bob)
        try bob.replica.append(.inviteAccepted, to: group)
        try bob.send(group, to: alice)
        try alice.send(group, to: bob)
        // Bob now holds the current key, which is the key "before" was sealed under: history off
        // hides earlier epochs, not earlier writes of the current one. A removal starts a new
        // epoch; a member who joins after it cannot open what came before.
        let carol = try TestReplica("carol")
        try alice.replica.append(.memberRemoved(identity: bob.identity), to: group)
        try alice.replica.append(.entityPut(key: "during", value: .text("between")), to: group)
        try alice.replica.append(.memberAdded(identity: carol.identity, role: .member), to: group)
        try alice.send(group, to: carol)
        try carol.replica.append(.inviteAccepted, to: group)
        try carol.send(group, to: alice)
        try alice.replica.append(.entityPut(key: "after", value: .text("new")), to: group)
        try alice.send(group, to: carol)
        #expect(try carol.get("after", group, .committed) == .text("new"))
        #expect(try carol.get("during", group, .committed) == .text("between"), "the current epoch began before")
        #expect(try carol.get("before", group, .committed) == nil, "an earlier epoch: not shared without history")
        #expect(try carol.replica.sealedWaitingCount(of: group) == 1)
        #expect(try carol.replica.epochKeyCount(of: group) == 1)
    }

    @Test func aRevokedDeviceCannotReadWhatFollows() throws {
        let laptop = try TestReplica("alice")
        let stolen = try LocalDevice.newDevice(
            identityKey: try #require(laptop.device.identityKey), name: "stolen", createdAt: 2)
        let thief = Replica(store: try Store(), device: stolen, clock: { laptop.clock.now() })
        let group = try laptop.replica.createGroup(name: "secret", encryption: history)
        // The second laptop is met (a handshake, or linking) and gets the group's key.
        #expect(try laptop.replica.recordDevice(stolen.certificate))
        try laptop.replica.shareEpochKeys(with: stolen.certificate)
        try laptop.replica.append(.entityPut(key: "shared", value: .text("both laptops")), to: group)
        let h = try laptop.holdings(group)
        _ = try thief.ingest(receipts: h.receipts, envelopes: h.envelopes)
        #expect(try thief.entity("shared", in: group, view: .committed)?.value == .text("both laptops"))

        let revocation = try DeviceRevocation.issue(
            identityKey: try #require(laptop.device.identityKey), device: stolen.device, createdAt: 10)
        try laptop.replica.append(.deviceRevoked(revocation), to: group)
        try laptop.replica.append(.entityPut(key: "later", value: .text("not for the thief")), to: group)
        let after = try laptop.holdings(group)
        _ = try thief.ingest(receipts: after.receipts, envelopes: after.envelopes)
        #expect(try thief.entity("later", in: group, view: .committed) == nil)
        #expect(try laptop.get("later", group, .committed) == .text("not for the thief"))
        // The rotation after the revocation was sealed to the laptop only.
        let rotation = try #require(after.receipts.last { $0.type == "group.key" })
        let share = try EpochKeyShare(body: rotation.body)
        #expect(share.rotate && share.box(for: stolen.device) == nil && share.box(for: laptop.device.device) != nil)
    }

    @Test func aBodyThatDoesNotOpenWithItsKeyIsRejected() throws {
        let alice = try TestReplica("alice")
        let group = try alice.replica.createGroup(name: "secret", encryption: history)
        // A rotation with a key the test knows, sealed to Alice's device.
        let key = EpochKey()
        try alice.replica.append(
            .key(
                try EpochKeyShare.seal(
                    key, group: group, rotate: true,
                    to: [(alice.device.device, alice.device.certificate.noiseKey)])), to: group)
        // Sealed under the key in use, but bound to another counter: it does not open in place.
        let counter = try alice.replica.vector(of: group).authors.first { $0.0 == alice.device.device }!.1 + 1
        let moved = try EncryptedBody.seal(
            .textMap(["key": "k", "value": "v"]), key: key,
            binding: .init(group: group, type: "entity.put", author: alice.device.device, counter: counter + 1))
        try alice.replica.append(.sealed(type: "entity.put", body: moved), to: group)
        let last = try #require(try alice.replica.log(of: group, view: .committed).last)
        #expect(last.rejected?.contains("does not open") == true, "\(String(describing: last.rejected))")
        #expect(try alice.get("k", group, .committed) == nil)
        // A good one under the same key applies.
        try alice.replica.append(.entityPut(key: "k", value: .text("good")), to: group)
        #expect(try alice.get("k", group, .committed) == .text("good"))
    }
}
