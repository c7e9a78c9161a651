import PeerlogEncoding
import PeerlogModel
import Testing

/// Telling a receipt, an envelope and a certificate apart by their container alone.
struct SignedObjectKindTests {
    @Test func eachContainerNamesItsKind() throws {
        let device = try LocalDevice.deterministic(seed: Array(repeating: 7, count: 32), name: "d", createdAt: 1)
        let group = try GroupID(bytes: Array(0..<16))
        let receipt = try device.sign(
            Receipt.Draft(
                group: group, type: "entity.put", counter: 1, hlc: HLCTimestamp(physical: 1, logical: 0), body: .null))
        let envelope = try Envelope.sign(
            group: group, seq: 1, receipt: receipt.cid, term: 0, receivedAt: 1, key: device.signingKey)
        func kind(_ bytes: [UInt8]) throws -> SignedObjectKind? {
            SignedObjectKind(container: try CBORDecoder.decodeStrict(bytes))
        }
        #expect(try kind(receipt.encoded) == .receipt)
        #expect(try kind(envelope.encoded) == .envelope)
        #expect(try kind(device.certificate.encoded) == .certificate)
        let other = try device.additionalDevice(name: "other", createdAt: 2)
        let revocation = try DeviceRevocation.issue(
            identityKey: device.identityKey!, device: other.device, createdAt: 3)
        #expect(try kind(revocation.encoded) == .revocation)
    }

    @Test func anythingElseIsNoneAndSaysItsKeys() {
        let other = CBOR.textMap(["receipts": .int(1), "x": .null])
        #expect(SignedObjectKind(container: other) == nil)
        #expect(SignedObjectKind.keys(of: other) == ["receipts", "x"])
        #expect(SignedObjectKind(container: .int(3)) == nil && SignedObjectKind.keys(of: .int(3)).isEmpty)
    }
}
