import PeerlogCrypto
import PeerlogEncoding
import PeerlogModel
import Testing

/// A single envelope's stored form (docs/PROTOCOL.md §10): `[sequencer, received_at]`, put back
/// together with the row's group, seq, CID and term, byte for byte the payload signed.
struct EnvelopeStoredFormTests {
    /// Every argument size of seq, term and received_at (0, one byte, 1, 2, 4 and 8 bytes).
    @Test func everyPayloadComesBackByteForByte() throws {
        let sizes: [UInt64] = [0, 1, 23, 24, 255, 256, 65_535, 65_536, 4_294_967_295, 4_294_967_296, .max]
        let key = try Ed25519.PrivateKey(seed: SecureBytes([UInt8](repeating: 3, count: 32)))
        let cid = try CID(bytes: [0x01, 0x71, 0x12, 0x20] + [UInt8](repeating: 9, count: 32))
        var checked = 0
        for seq in sizes where seq >= 1 {
            for term in sizes {
                for receivedAt in sizes {
                    let e = try Envelope.sign(
                        group: GoldenFixture.group, seq: seq, receipt: cid, term: term, receivedAt: receivedAt, key: key
                    )
                    let stored = try #require(e.storedSingle)
                    #expect(stored.count <= 44 && stored.first == 0x82)
                    let back = try Envelope(
                        payload: Envelope.payload(stored: stored, group: e.group, seq: seq, receipt: cid, term: term),
                        signature: e.signature)
                    #expect(back.payload == e.payload && back == e)
                    checked += 1
                }
            }
        }
        #expect(checked == 10 * 11 * 11)
    }

    /// A payload stored whole reads as it is; a run item has no stored form; bytes that are
    /// neither are refused with one error.
    @Test func wholePayloadsRunItemsAndMalformedForms() throws {
        let key = try Ed25519.PrivateKey(seed: SecureBytes([UInt8](repeating: 4, count: 32)))
        let cid = try CID(bytes: [0x01, 0x71, 0x12, 0x20] + [UInt8](repeating: 5, count: 32))
        let e = try Envelope.sign(group: GoldenFixture.group, seq: 7, receipt: cid, term: 2, receivedAt: 99, key: key)
        #expect(
            try Envelope(
                payload: Envelope.payload(stored: e.payload, group: e.group, seq: 7, receipt: cid, term: 2),
                signature: e.signature) == e)
        let run = try EnvelopeRun.sign(
            group: GoldenFixture.group, firstSeq: 1, receipts: [cid, cid], term: 0, receivedAt: 1, key: key)
        #expect(run.allSatisfy { $0.storedSingle == nil })
        for bad: [UInt8] in [[], [0x60], [0x82, 0x58, 0x20], [0x81, 0x01], [0x82, 0x41, 0x00, 0x01]] {
            #expect(throws: ModelError.self) {
                try Envelope.payload(stored: bad, group: e.group, seq: 7, receipt: cid, term: 2)
            }
        }
    }
}
