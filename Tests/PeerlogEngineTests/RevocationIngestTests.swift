import PeerlogCrypto
import PeerlogEncoding
import PeerlogEngine
import PeerlogModel
import PeerlogStore
import PeerlogTestSupport
import Testing

/// A replica refuses a revoked device's receipts written after the revocation, keeps its
/// earlier ones, and lists its identity's devices.
struct RevocationIngestTests {
    /// Alice's second device with its own in-memory replica on Alice's clock.
    static func laptop(of alice: TestReplica) throws -> (device: LocalDevice, replica: Replica) {
        let device = try alice.device.additionalDevice(name: "laptop", createdAt: 2)
        let clock = alice.clock
        return (device, Replica(store: try Store(), device: device, clock: { clock.now() }))
    }

    /// The receipts `replica` holds of `group` authored by `author`, in counter order.
    static func receipts(_ replica: Replica, _ group: GroupID, by author: DeviceID) throws -> [Receipt] {
        var out: [Receipt] = []
        _ = try replica.export(group: group) { line in
            let json = try JSON.parse(line)
            guard json["kind"] == .string("receipt"), case .string(let hex)? = json["data"],
                let data = bytes(fromHex: hex)
            else { return }
            let r = try Receipt(encoded: data)
            if r.author == author { out.append(r) }
        }
        return out.sorted { $0.counter < $1.counter }
    }

    /// Once the revocation is committed in the group, every receipt of the device that arrives
    /// is refused at ingest (recorded invalid, with the reason), even one written before it: it
    /// can only be committed after the revocation now. One that arrived before stays.
    @Test func receiptsArrivingAfterTheCommittedRevocationAreRefusedEarlierOnesStay() throws {
        let alice = try TestReplica("alice")
        let laptop = try Self.laptop(of: alice)
        let g = try alice.replica.createGroup(name: "g")
        let h = try alice.holdings(g)
        _ = try laptop.replica.ingest(receipts: h.receipts, envelopes: h.envelopes)

        // Two writes before the revocation: one reaches Alice now, one only later.
        alice.clock.advance(1_000)
        try laptop.replica.append(.entityPut(key: "early", value: 1), to: g)
        try laptop.replica.append(.entityPut(key: "late-delivered", value: 2), to: g)
        let before = try Self.receipts(laptop.replica, g, by: laptop.device.device)
        #expect(before.count == 2)
        #expect(try alice.replica.ingest(receipts: [before[0]]).stored == 1)
        #expect(try alice.replica.identityDevices().contains { $0.certificate.device == laptop.device.device })

        alice.clock.advance(1_000)
        let revocation = try alice.replica.revoke(device: laptop.device.device)
        #expect(try alice.replica.revoke(device: laptop.device.device) == revocation, "revoking again is a no-op")
        // Stored, not yet in the group: the node refuses the device, ingest does not yet.
        #expect(try alice.replica.committedSeq(of: g) == 2)
        #expect(try alice.replica.announce(revocation) == [g])
        #expect(try alice.replica.committedSeq(of: g) == 3)

        try laptop.replica.storeRevocation(revocation)
        alice.clock.advance(1_000)
        try laptop.replica.append(.entityPut(key: "stolen", value: 3), to: g)
        #expect(
            try laptop.replica.entity("stolen", in: g, view: .tentative)?.value == .int(3),
            "the revoked device keeps its own writes (it has not seen the group operation)")
        let after = try Self.receipts(laptop.replica, g, by: laptop.device.device)
        #expect(after.count == 3)

        let reason = "author device \(laptop.device.device) was revoked by identity \(alice.identity) in this group"
        let report = try alice.replica.ingest(receipts: [before[1], after[2]], from: laptop.device.device)
        #expect(report.stored == 0)
        #expect(report.invalid == [before[1].cid, after[2].cid])
        #expect(report.rejected.map(\.reason) == [reason, reason])
        #expect(try alice.replica.entity("early", in: g, view: .committed)?.value == .int(1))
        #expect(try alice.replica.entity("late-delivered", in: g, view: .tentative) == nil)
        #expect(try alice.replica.entity("stolen", in: g, view: .tentative) == nil)
        let invalid = try alice.replica.invalidReceipts()
        #expect(Set(invalid.map(\.cid)) == [before[1].cid, after[2].cid] && invalid.allSatisfy { $0.reason == reason })

        let devices = try alice.replica.identityDevices()
        #expect(devices.map(\.certificate.device) == [alice.device.device, laptop.device.device])
        #expect(devices.map(\.isLocal) == [true, false])
        #expect(devices.map { $0.revocation != nil } == [false, true])
    }

    @Test func revokingThisDeviceOrWithABadSignatureIsRefused() throws {
        let alice = try TestReplica("alice")
        #expect {
            try alice.replica.revoke(device: alice.device.device)
        } throws: { ($0 as? RevocationError)?.code == .ownDevice }
        #expect(try alice.replica.revocations().isEmpty)
        let laptop = try alice.device.additionalDevice(name: "laptop", createdAt: 2)
        let good = try DeviceRevocation.issue(
            identityKey: alice.device.identityKey!, device: laptop.device, createdAt: 5)
        var sig = good.signature
        sig[0] ^= 1
        #expect {
            try alice.replica.storeRevocation(try DeviceRevocation(payload: good.payload, signature: sig))
        } throws: { ($0 as? RevocationError)?.code == .badSignature }
        #expect(try alice.replica.revocations().isEmpty)
        #expect(try alice.replica.storeRevocation(good) && !alice.replica.storeRevocation(good))
    }

    @Test func revocationsPerIdentityAreBounded() throws {
        let alice = try TestReplica("alice")
        let bob = try TestReplica("bob")
        func revocation(_ n: Int) throws -> DeviceRevocation {
            var bytes = [UInt8](repeating: 0, count: 32)
            bytes[0] = UInt8(n & 0xff)
            bytes[1] = UInt8(n >> 8)
            return try DeviceRevocation.issue(
                identityKey: alice.device.identityKey!, device: DeviceID(bytes: bytes), createdAt: UInt64(n))
        }
        for n in 0..<Replica.maxRevocationsPerIdentity {
            #expect(try bob.replica.storeRevocation(try revocation(n)))
        }
        #expect(try !bob.replica.storeRevocation(try revocation(0)), "one already held is no error")
        #expect {
            try bob.replica.storeRevocation(try revocation(Replica.maxRevocationsPerIdentity))
        } throws: { ($0 as? RevocationError)?.code == .limit }
        #expect(try bob.replica.revocations().count == Replica.maxRevocationsPerIdentity)
        // Another identity's are counted apart.
        let own = try DeviceRevocation.issue(
            identityKey: bob.device.identityKey!, device: alice.device.device, createdAt: 1)
        #expect(try bob.replica.storeRevocation(own))
    }

    @Test func recordDeviceTakesOnlyThisIdentitysVerifiedCertificates() throws {
        let alice = try TestReplica("alice")
        let bob = try TestReplica("bob")
        let laptop = try alice.device.additionalDevice(name: "laptop", createdAt: 2)
        try alice.replica.recordDevice(laptop.certificate)
        try alice.replica.recordDevice(laptop.certificate)
        #expect(throws: ModelError(.certificateMismatch, "")) { try alice.replica.recordDevice(bob.device.certificate) }
        var sig = laptop.certificate.signature
        sig[1] ^= 1
        let forged = try DeviceCertificate(payload: laptop.certificate.payload, signature: sig)
        #expect(throws: ModelError(.badSignature, "")) { try alice.replica.recordDevice(forged) }
        #expect(
            try alice.replica.identityDevices().map(\.certificate) == [alice.device.certificate, laptop.certificate])
    }
}
