import PeerlogChannel
import PeerlogEngine
import PeerlogModel
import Testing

@testable import PeerlogNode

/// Revocation through whole nodes (hub, machine, sessions, replicas) without sockets.
struct RevocationNodeTests {
    static let alice = try! LocalDevice.deterministic(seed: Array("revocation/alice".utf8), name: "alice", createdAt: 1)
    static let laptop = try! alice.additionalDevice(name: "laptop", createdAt: 2)
    static let carol = try! LocalDevice.deterministic(seed: Array("revocation/carol".utf8), name: "carol", createdAt: 1)

    /// Alice revokes her laptop (written as by `peerlog device revoke`, straight to the store):
    /// her node notices it on its poll, sends it to both peers and drops the laptop with the
    /// reason; Carol's node stores it, passes it on and drops the laptop too; the laptop learns
    /// it was revoked. Both refuse the laptop's certificate from then on.
    @Test func aRevocationSpreadsAndCutsTheDeviceOff() throws {
        let harness = try NodeHarness(devices: [Self.alice, Self.laptop, Self.carol])
        let aliceLaptop = harness.connect(0, 1)
        let aliceCarol = harness.connect(0, 2)
        let laptopCarol = harness.connect(1, 2)
        harness.pump()
        #expect(harness.links.indices.allSatisfy(harness.isLive))
        // Alice's node learned of her laptop at the handshake.
        #expect(try harness.nodes[0].replica.identityDevices().map(\.certificate.device).contains(Self.laptop.device))

        let revocation = try harness.nodes[0].replica.revoke(device: Self.laptop.device)
        #expect(harness.isLive(aliceLaptop), "nothing happens before the poll")
        harness.advance(300)

        #expect(!harness.isLive(aliceLaptop) && !harness.isLive(laptopCarol))
        #expect(harness.isLive(aliceCarol))
        // The laptop's end heard the reason as the close record, on both links.
        #expect(harness.links[aliceLaptop].reasons.1 == .remote(revocation.reason))
        #expect(harness.links[laptopCarol].reasons.0 == .remote(revocation.reason))
        for node in harness.nodes {
            #expect(
                try node.replica.revocation(of: Self.laptop.device, by: Self.alice.identity) == revocation,
                "\(node.device.certificate.name) does not hold the revocation")
        }
        for i in [0, 2] {
            #expect(harness.nodes[i].hub.authorize(Self.laptop.certificate) == .deny(revocation.reason))
            #expect(!harness.nodes[i].hub.isConnected(device: Self.laptop.device))
            #expect(harness.nodes[i].hub.authorize(Self.alice.certificate) == .allow)
        }
        #expect(harness.nodes[1].hub.buildStatus().revoked == revocation.reason)
        #expect(harness.nodes[0].hub.buildStatus().revoked == nil)
    }

    /// A revocation signed by another identity names the laptop but does not apply to it: the
    /// laptop's certificate names Alice's identity.
    @Test func anotherIdentityCannotRevokeSomeoneElsesDevice() throws {
        let harness = try NodeHarness(devices: [Self.alice, Self.laptop, Self.carol])
        let carolLaptop = harness.connect(2, 1)
        harness.pump()
        let forged = try harness.nodes[2].replica.revoke(device: Self.laptop.device)
        harness.advance(300)
        #expect(harness.isLive(carolLaptop))
        #expect(harness.nodes[2].hub.authorize(Self.laptop.certificate) == .allow)
        #expect(try harness.nodes[1].replica.revocations() == [forged], "it is passed on all the same")
        #expect(harness.nodes[1].hub.buildStatus().revoked == nil)
    }
}
