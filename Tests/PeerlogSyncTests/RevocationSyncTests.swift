import PeerlogEncoding
import PeerlogEngine
import PeerlogModel
import PeerlogStore
import PeerlogSync
import PeerlogTestSupport
import Testing

/// The `revocations` message (docs/PROTOCOL.md §15.1) and its place in a session.
struct RevocationSyncTests {
    static let alice = try! TestReplica("alice")
    static let laptop = try! alice.device.additionalDevice(name: "laptop", createdAt: 2)

    static func revocation(_ createdAt: UInt64 = 10) throws -> DeviceRevocation {
        try DeviceRevocation.issue(identityKey: alice.device.identityKey!, device: laptop.device, createdAt: createdAt)
    }

    @Test func theMessageRoundTripsAndIsBounded() throws {
        let items = try [Self.revocation(10).encoded, Self.revocation(11).encoded]
        let m = SyncMessage.revocations(items: items)
        #expect(try SyncMessage.decode(m.encoded(), limits: .init()) == m)
        #expect(m.group == nil && !m.isBatch && m.type == "revocations")

        var small = SyncLimits()
        small.maxRevocationsPerMessage = 2
        #expect(try SyncMessage.decode(m.encoded(), limits: small) == m, "the limit is inclusive")
        let three = SyncMessage.revocations(items: items + [items[0]]).encoded()
        #expect {
            try SyncMessage.decode(three, limits: small)
        } throws: { error in
            let e = error as! SyncCodecError
            return e.code == .limit && e.detail.contains("maxRevocationsPerMessage is 3, limit 2")
        }
        // Empty, a non-bstr item, an item over DeviceRevocation.maxEncodedBytes.
        let empty = CBOREncoder.encode(.textMap(["t": "revocations", "items": .array([])]))
        #expect(throws: SyncCodecError.self) { try SyncMessage.decode(empty, limits: .init()) }
        let text = CBOREncoder.encode(.textMap(["t": "revocations", "items": ["x"]]))
        #expect(throws: SyncCodecError.self) { try SyncMessage.decode(text, limits: .init()) }
        let big = SyncMessage.revocations(items: [[UInt8](repeating: 1, count: DeviceRevocation.maxEncodedBytes + 1)])
        #expect {
            try SyncMessage.decode(big.encoded(), limits: .init())
        } throws: { ($0 as! SyncCodecError).code == .limit }
        #expect(SyncLimits().maxRevocationsPerMessage == 256)
    }

    /// A session sends every revocation its replica holds right after hello, in messages of at
    /// most `maxRevocationsPerMessage`; the receiving session reports the valid ones (a bad
    /// signature is counted and dropped), and a replica stores what it is given.
    @Test func aRevocationReachesAPeerAndIsStored() throws {
        let alice = try TestReplica("alice")
        let bob = try TestReplica("bob")
        var held: [DeviceRevocation] = []
        for i in 0..<3 {
            let device = try alice.device.additionalDevice(name: "old\(i)", createdAt: 2)
            held.append(try alice.replica.revoke(device: device.device))
        }
        var limits = SyncLimits()
        limits.maxRevocationsPerMessage = 2
        let mesh = Mesh([alice, bob])
        let (a, b) = mesh.connect(0, 1, limits: limits)
        mesh.pump()
        let received = mesh.ends[b].events.compactMap { e -> [DeviceRevocation]? in
            if case .revocations(let r, let invalid) = e, invalid == 0 { r } else { nil }
        }
        #expect(received.map(\.count) == [2, 1], "two messages: the limit splits them")
        #expect(Set(received.joined()) == Set(held))
        #expect(!mesh.ends[a].events.contains { if case .revocations = $0 { true } else { false } })
        for r in received.joined() { try bob.replica.storeRevocation(r) }
        #expect(try Set(bob.replica.revocations()) == Set(held))
        #expect(mesh.ends[a].closed == nil && mesh.ends[b].closed == nil)

        // Sent live: a forged one is counted and dropped, the session goes on.
        let forged = try DeviceRevocation(payload: held[0].payload, signature: held[1].signature)
        let live = mesh.ends[a].session.sendRevocations([forged.encoded, held[0].encoded])
        mesh.route(live, from: a)
        mesh.pump()
        #expect(
            mesh.ends[b].events.contains {
                if case .revocations(let r, invalid: 1) = $0 { r == [held[0]] } else { false }
            })
        #expect(mesh.ends[b].closed == nil)
        // The replica verifies too.
        #expect(throws: RevocationError.self) { try bob.replica.storeRevocation(forged) }
    }
}
