import PeerlogEncoding
import PeerlogEngine
import PeerlogModel
import PeerlogSync
import PeerlogTestSupport
import Testing

/// Format changes gated on a hello capability (issue 32, item 7): a peer from before encrypted
/// groups (§22) is sent none, is told why, and still syncs the plaintext groups it shares.
@Suite struct SyncCapabilityTests {
    @Test func aPeerWithoutEncryptedGroupsIsToldWhyAndSentNothingOfOne() throws {
        let alice = try TestReplica("alice")
        let bob = try TestReplica("bob")
        let sealed = try alice.replica.createGroup(name: "sealed", encryption: GroupEncryptionSettings(history: false))
        let plain = try alice.replica.createGroup(name: "plain")
        for g in [sealed, plain] {
            try alice.replica.append(.memberAdded(identity: bob.identity, role: .member), to: g)
            try alice.put(g, "k", 1)
        }
        let mesh = Mesh([alice, bob])
        let (a, b) = mesh.connect(0, 1, encryptedGroups: false)
        mesh.pump()
        // Bob, as a peer from before §22 would, holds the plaintext group and nothing of the other.
        #expect(try bob.replica.knowsGroup(plain))
        #expect(try !bob.replica.knowsGroup(sealed))
        #expect(mesh.ends[a].events.contains { if case .withdrew(sealed, _) = $0 { true } else { false } })
        let told = mesh.ends[b].events.compactMap { e -> String? in
            if case .unsharedByPeer(sealed, let why) = e { why } else { nil }
        }
        #expect(told.first?.contains("encrypted_groups") == true, "\(told)")
        #expect(mesh.ends[a].closed == nil && mesh.ends[b].closed == nil)

        // With the capability, the same two sync both.
        let mesh2 = Mesh([alice, bob])
        mesh2.connect(0, 1)
        mesh2.pump()
        #expect(try bob.replica.knowsGroup(sealed))
    }
}
