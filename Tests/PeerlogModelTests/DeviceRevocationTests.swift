import PeerlogCrypto
import PeerlogEncoding
import PeerlogModel
import Testing

struct DeviceRevocationTests {
    static let alice = try! LocalDevice.generate(name: "alice", createdAt: 1)
    static let laptop = try! alice.additionalDevice(name: "laptop", createdAt: 2)

    static func revoke(createdAt: UInt64) throws -> DeviceRevocation {
        try DeviceRevocation.issue(identityKey: alice.identityKey!, device: laptop.device, createdAt: createdAt)
    }

    @Test func issueParseVerifyRoundTrip() throws {
        let r = try DeviceRevocation.issue(
            identityKey: Self.alice.identityKey!, device: Self.laptop.device, createdAt: 1_764_043_452_530)
        let parsed = try DeviceRevocation(encoded: r.encoded)
        #expect(parsed == r)
        #expect(parsed.verify() == .valid)
        #expect(parsed.identity == Self.alice.identity && parsed.device == Self.laptop.device)
        #expect(parsed.createdAt == 1_764_043_452_530)
        #expect(parsed.encoded.count <= DeviceRevocation.maxEncodedBytes)
        #expect(
            parsed.reason
                == "device \(Self.laptop.device) was revoked by identity \(Self.alice.identity) at 2025-11-25T04:04:12.530Z"
        )
        // The container's keys in deterministic order: "sig" first, as PROTOCOL.md §15.1's example shows.
        #expect(Array(r.encoded.prefix(7)) == [0xa2, 0x63, 0x73, 0x69, 0x67, 0x58, 0x40])
    }

    @Test func aBadSignatureDoesNotVerify() throws {
        let r = try Self.revoke(createdAt: 5)
        var sig = r.signature
        sig[3] ^= 1
        #expect(try DeviceRevocation(payload: r.payload, signature: sig).verify() != .valid)
        // A certificate's signature over the same payload bytes is not a revocation's (contexts differ).
        let certSig = Self.alice.identityKey!.signature(for: SignatureContext.certificate.message(for: r.payload))
        #expect(try DeviceRevocation(payload: r.payload, signature: certSig).verify() != .valid)
    }

    @Test func anotherIdentityCannotRevokeTheDevice() throws {
        // Mallory signs a payload naming Alice's identity: it does not verify under Alice's key.
        let mallory = Ed25519.PrivateKey()
        let payload = CBOREncoder.encode(
            .textMap([
                "v": 1, "identity": .bytes(Self.alice.identity.bytes), "device": .bytes(Self.laptop.device.bytes),
                "created": 9,
            ]))
        let forged = try DeviceRevocation(
            payload: payload, signature: mallory.signature(for: SignatureContext.revocation.message(for: payload)))
        #expect(forged.verify() != .valid)
        // Signed with her own identity it verifies, but names her identity, not Alice's.
        let own = try DeviceRevocation.issue(identityKey: mallory, device: Self.laptop.device, createdAt: 9)
        #expect(own.verify() == .valid && own.identity != Self.alice.identity)
    }

    @Test func malformedContainersAreRefused() throws {
        let r = try Self.revoke(createdAt: 5)
        // An extra field rides along under the signature: refused.
        let extra = CBOREncoder.encode(
            .textMap([
                "v": 1, "identity": .bytes(Self.alice.identity.bytes), "device": .bytes(Self.laptop.device.bytes),
                "created": 5, "why": "stolen",
            ]))
        #expect(throws: ModelError(.wrongShape, "")) { try DeviceRevocation(payload: extra, signature: r.signature) }
        // Version 2 is not read.
        let v2 = CBOREncoder.encode(
            .textMap([
                "v": 2, "identity": .bytes(Self.alice.identity.bytes), "device": .bytes(Self.laptop.device.bytes),
                "created": 5,
            ]))
        #expect(throws: ModelError(.unsupportedVersion, "")) {
            try DeviceRevocation(payload: v2, signature: r.signature)
        }
        // A certificate container is not a revocation container.
        #expect(throws: ModelError.self) { try DeviceRevocation(encoded: Self.laptop.certificate.encoded) }
        // Over the size limit: refused before decoding.
        let big = [UInt8](repeating: 0, count: DeviceRevocation.maxEncodedBytes + 1)
        #expect(throws: ModelError(.sizeLimitExceeded, "")) { try DeviceRevocation(encoded: big) }
    }
}
