import PeerlogCrypto
import PeerlogEncoding
import PeerlogModel
import PeerlogTestSupport
import Testing

struct ReceiptTests {
    static let device = try! LocalDevice.generate(name: "test", createdAt: 1)

    static func draft(
        type: String = "app.note", counter: UInt64 = 1, parents: [CID] = [], body: CBOR = .null
    ) -> Receipt.Draft {
        Receipt.Draft(
            group: GoldenFixture.group, type: type, counter: counter, parents: parents,
            hlc: HLCTimestamp(physical: 5, logical: 1), body: body)
    }

    @Test func signParseVerifyRoundTrip() throws {
        let parents = [CID(hashing: [2]), CID(hashing: [1]), CID(hashing: [2])]
        let r = try Self.device.sign(
            Self.draft(counter: 7, parents: parents, body: .textMap(["a": [1, 2], "link": parents[0].cborLink])))
        #expect(r.parents.count == 2, "duplicates removed")
        #expect(r.parents == r.parents.sorted { $0.bytes.lexicographicallyPrecedes($1.bytes) })
        let parsed = try Receipt(encoded: r.encoded)
        #expect(parsed == r)
        #expect(parsed.cid == CID(hashing: r.payload))
        #expect(parsed.verify() == .valid)
        #expect(parsed.counter == 7 && parsed.type == "app.note" && parsed.author == Self.device.device)
    }

    @Test func tamperingIsDetected() throws {
        let r = try Self.device.sign(Self.draft(body: "hello"))
        var sig = r.signature
        sig[0] ^= 1
        #expect(try Receipt(payload: r.payload, signature: sig, certificate: r.certificate).verify() != .valid)
        // Same fields, different body: a different CID, and the old signature does not cover it.
        let other = try Self.device.sign(Self.draft(body: "hellp"))
        let forged = try Receipt(payload: other.payload, signature: r.signature, certificate: r.certificate)
        #expect(forged.cid != r.cid)
        #expect(forged.verify() != .valid)
    }

    @Test func certificateMustBindTheAuthor() throws {
        let r = try Self.device.sign(Self.draft())
        // Another identity certifies this same device key: the receipt names the real identity, so it does not match.
        let thief = Ed25519.PrivateKey()
        let stolen = try DeviceCertificate.issue(
            identityKey: thief, device: Self.device.device, noiseKey: Self.device.noiseKey.publicKey, name: "x",
            createdAt: 1)
        #expect(throws: ModelError(.certificateMismatch, "")) {
            try Receipt(payload: r.payload, signature: r.signature, certificate: stolen)
        }
        // A certificate whose identity signature is forged fails verification.
        let c = Self.device.certificate
        var badSig = c.signature
        badSig[5] ^= 0x10
        let forgedCert = try DeviceCertificate(payload: c.payload, signature: badSig)
        #expect(try Receipt(payload: r.payload, signature: r.signature, certificate: forgedCert).verify() != .valid)
        // Signing with a key that is not the certificate's device key is refused.
        #expect(throws: ModelError(.certificateMismatch, "")) {
            try Receipt.sign(Self.draft(), signingKey: Ed25519.PrivateKey(), certificate: c)
        }
    }

    @Test func envelopeSignatureIsChecked() throws {
        let key = Ed25519.PrivateKey()
        let e = try Envelope.sign(
            group: GoldenFixture.group, seq: 9, receipt: CID(hashing: [9]), term: 3, receivedAt: 77, key: key)
        let parsed = try Envelope(encoded: e.encoded)
        #expect(parsed == e && parsed.verify() == .valid && parsed.seq == 9 && parsed.term == 3)
        var sig = e.signature
        sig[63] ^= 1
        #expect(try Envelope(payload: e.payload, signature: sig).verify() != .valid)
    }

    @Test func signatureContextsSeparateKinds() throws {
        // An envelope signature over bytes cannot be replayed as a receipt signature over the same bytes.
        let key = Ed25519.PrivateKey()
        let payload: [UInt8] = [1, 2, 3]
        let sig = key.signature(for: SignatureContext.envelope.message(for: payload))
        #expect(!key.publicKey.isValidSignature(sig, for: SignatureContext.receipt.message(for: payload)))
        #expect(Set(SignatureContext.allCases.map(\.rawValue)).count == SignatureContext.allCases.count)
    }
}
