import PeerlogEncoding
import PeerlogEngine
import PeerlogModel
import PeerlogStore
import PeerlogTestSupport
import Testing

/// `group.device_revoked` (docs/PROTOCOL.md §9.1, §9.4): a member records its identity's
/// revocation in a group; receipts of the device ordered after it are refused by the rules on
/// every replica, those ordered before stay.
struct DeviceRevocationRulesTests {
    static let alice = try! LocalDevice.deterministic(seed: Array("rules/alice".utf8), name: "alice", createdAt: 1)
    static let laptop = try! alice.additionalDevice(name: "laptop", createdAt: 2)
    static let carol = try! LocalDevice.deterministic(seed: Array("rules/carol".utf8), name: "carol", createdAt: 1)
    static let group = try! GroupID(bytes: Array(0..<16))
    static let revocation = try! DeviceRevocation.issue(
        identityKey: alice.identityKey!, device: laptop.device, createdAt: 50)

    /// Alice (owner) and Carol (member), both active.
    static func state() throws -> GroupState {
        var s = try GroupRules.apply(
            .created(name: "g", maxMembers: 12), sender: alice.identity, device: alice.device, group: group, to: nil
        ).get()
        s.members[carol.identity] = Member(identity: carol.identity, role: .member, status: .active)
        return s
    }

    static func apply(_ op: GroupOperation, by device: LocalDevice, to state: GroupState) -> RuleViolation? {
        if case .failure(let v) = GroupRules.apply(
            op, sender: device.identity, device: device.device, group: group, to: state)
        {
            return v
        }
        return nil
    }

    @Test func theRevokingIdentityMayRecordItAndTheDeviceIsRefusedAfter() throws {
        let before = try Self.state()
        #expect(Self.apply(.entityPut(key: "k", value: 1), by: Self.laptop, to: before) == nil)
        let after = try GroupRules.apply(
            .deviceRevoked(Self.revocation), sender: Self.alice.identity, device: Self.alice.device,
            group: Self.group, to: before
        ).get()
        #expect(after.revokedDevices == [GroupRevokedDevice(identity: Self.alice.identity, device: Self.laptop.device)])
        let refused = "author device \(Self.laptop.device) was revoked by identity \(Self.alice.identity) in this group"
        for op: GroupOperation in [
            .entityPut(key: "k", value: 1), .application(type: "app.note", body: "x"), .renamed(name: "mine"),
            .deviceRevoked(Self.revocation),
        ] {
            #expect(Self.apply(op, by: Self.laptop, to: after)?.reason == refused, "\(op.receiptType)")
        }
        // Alice's other device and Carol go on.
        #expect(Self.apply(.entityPut(key: "k", value: 1), by: Self.alice, to: after) == nil)
        #expect(Self.apply(.entityPut(key: "k", value: 1), by: Self.carol, to: after) == nil)
        // The laptop may send it itself (the signature is the authority), before it is revoked.
        #expect(Self.apply(.deviceRevoked(Self.revocation), by: Self.laptop, to: before) == nil)
        #expect(
            Self.apply(.deviceRevoked(Self.revocation), by: Self.alice, to: after)?.reason
                == "device \(Self.laptop.device.short) is already revoked in this group")
    }

    @Test func onlyTheRevokingIdentityMaySendItAndTheSignatureMustVerify() throws {
        let s = try Self.state()
        #expect(
            Self.apply(.deviceRevoked(Self.revocation), by: Self.carol, to: s)?.reason
                == "a revocation signed by identity \(Self.alice.identity.short) may be sent only by that identity")
        var sig = Self.revocation.signature
        sig[9] ^= 1
        let forged = try DeviceRevocation(payload: Self.revocation.payload, signature: sig)
        #expect(
            Self.apply(.deviceRevoked(forged), by: Self.alice, to: s)?.reason
                == "the revocation's signature does not verify")
        // A stranger is refused as for any operation.
        let stranger = try LocalDevice.deterministic(seed: [9], name: "x", createdAt: 1)
        let own = try DeviceRevocation.issue(
            identityKey: stranger.identityKey!, device: Self.laptop.device, createdAt: 1)
        #expect(Self.apply(.deviceRevoked(own), by: stranger, to: s)?.reason == "sender is not an active member")
    }

    @Test func bodyRoundTripsAndTheCanonicalStateNamesRevokedDevicesOnlyWhenThereAreAny() throws {
        let op = GroupOperation.deviceRevoked(Self.revocation)
        #expect(op.receiptType == "group.device_revoked")
        #expect(op.body == .textMap(["revocation": .bytes(Self.revocation.encoded)]))
        #expect(try GroupOperation(receiptType: op.receiptType, body: op.body) == op)
        #expect(throws: RuleViolation.self) {
            try GroupOperation(receiptType: "group.device_revoked", body: .textMap(["revocation": .bytes([1, 2])]))
        }
        #expect(throws: RuleViolation.self) {
            try GroupOperation(
                receiptType: "group.device_revoked",
                body: .textMap(["revocation": .bytes(Self.revocation.encoded), "x": 1]))
        }
        var s = try Self.state()
        #expect(s.canonicalCBOR["revoked_devices"] == nil)
        s.revokedDevices.insert(GroupRevokedDevice(identity: Self.alice.identity, device: Self.laptop.device))
        #expect(
            s.canonicalCBOR["revoked_devices"]
                == .array([.array([.bytes(Self.alice.identity.bytes), .bytes(Self.laptop.device.bytes)])]))
    }

    /// Through replicas: Alice sequences (solo). The laptop's receipt committed before the
    /// revocation stays. Once the revocation is committed, Alice refuses the laptop's receipts at
    /// ingest, whatever their clock claims. A replica that receives the revocation and a receipt
    /// a (misbehaving) sequencer committed after it, together, rejects the receipt at that
    /// position, with the same state as Alice.
    @Test func aReceiptCommittedAfterTheOpIsRejectedOneBeforeStays() throws {
        let alice = try TestReplica("alice")
        let carol = try TestReplica("carol")
        let g = try groupWith(owner: alice, members: [carol])
        let laptop = try alice.device.additionalDevice(name: "laptop", createdAt: 2)

        let early = try handmade(laptop, group: g, counter: 1, op: .entityPut(key: "early", value: 1), hlc: 10)
        #expect(try alice.replica.ingest(receipts: [early]).stored == 1)
        try alice.send(g, to: carol)

        alice.clock.advance(1_000)
        let revocation = try alice.replica.revoke(device: laptop.device)
        #expect(try alice.replica.announce(revocation) == [g])
        #expect(try alice.replica.announce(revocation).isEmpty, "already recorded in the group")
        let reason = "author device \(laptop.device) was revoked by identity \(alice.identity) in this group"

        let backdated = try handmade(laptop, group: g, counter: 2, op: .entityPut(key: "late", value: 2), hlc: 20)
        #expect(backdated.hlc.physical < revocation.createdAt)
        let report = try alice.replica.ingest(receipts: [backdated])
        #expect(report.stored == 0 && report.invalid == [backdated.cid])
        #expect(report.rejected.map(\.reason) == [reason])
        #expect(try alice.replica.entity("early", in: g, view: .committed)?.value == .int(1))
        #expect(try alice.replica.entity("late", in: g, view: .tentative) == nil)

        // Carol gets the revocation and, in the same batch, the receipt and an envelope that
        // commits it right after: her rules reject it there.
        let h = try alice.holdings(g)
        let seq = try alice.replica.committedSeq(of: g) + 1
        let envelope = try Envelope.sign(
            group: g, seq: seq, receipt: backdated.cid, term: 0, receivedAt: 1, key: alice.device.signingKey)
        _ = try carol.replica.ingest(receipts: h.receipts + [backdated], envelopes: h.envelopes + [envelope])
        #expect(try carol.replica.committedSeq(of: g) == seq)
        let log = try carol.replica.log(of: g, view: .committed)
        #expect(log.first { $0.receipt.cid == backdated.cid }?.rejected == reason)
        #expect(log.first { $0.receipt.cid == early.cid }?.rejected == nil)
        #expect(try carol.replica.entity("early", in: g, view: .committed)?.value == .int(1))
        #expect(try carol.replica.entity("late", in: g, view: .committed) == nil)
        #expect(
            try carol.replica.state(of: g, view: .committed)?.revokedDevices
                == [GroupRevokedDevice(identity: alice.identity, device: laptop.device)])
        // The revocation travelled in the group: Carol holds it, so her node refuses the laptop.
        #expect(try carol.replica.revocation(of: laptop.device, by: alice.identity) == revocation)
    }
}
