import PeerlogCrypto
import PeerlogEncoding
import PeerlogModel
import Testing

/// `ContainerSplit`: `Receipt(encoded:)` and `Envelope(encoded:)` read a container's fields where
/// they lie, and fall back to decoding its CBOR value. Both paths must accept the same bytes and
/// read the same values, or a peer could get past one check the other makes.
struct ContainerSplitTests {
    /// Receipts whose payloads take each shortest byte-string head a container can hold.
    static func receipts() throws -> [Receipt] {
        try [0, 40, 300, 3_000].map { padding in
            try Receipt.sign(
                Receipt.Draft(
                    group: GoldenFixture.group, type: "entity.put", counter: 1, parents: [],
                    hlc: HLCTimestamp(physical: 1_700_000_000_123, logical: 0),
                    body: .textMap(["key": "k", "value": .bytes([UInt8](repeating: 7, count: padding))])),
                signingKey: GoldenFixture.deviceKey, certificate: GoldenFixture.certificate)
        }
    }

    /// A single envelope and items of a run.
    static func envelopes() throws -> [Envelope] {
        let key = GoldenFixture.deviceKey
        let run = try EnvelopeRun.signRuns(
            group: GoldenFixture.group, firstSeq: 1, receipts: (0..<20).map { _ in GoldenFixture.receipt.cid },
            term: 3, receivedAt: 9, key: key)
        return [GoldenFixture.envelope, run[0], run[7], run[19]]
    }

    /// Every one-byte change, every cut and a byte added: the inputs a peer could send instead.
    static func variants(of bytes: [UInt8]) -> [[UInt8]] {
        var out = [bytes, bytes + [0x00], bytes + [0x40]]
        for i in bytes.indices {
            for flip: UInt8 in [0x01, 0x20, 0x80] {
                var changed = bytes
                changed[i] ^= flip
                out.append(changed)
            }
            out.append(Array(bytes[..<i]))
        }
        return out
    }

    /// Parses each of `containers`' variants (at most about `limit` of each, evenly spread) both
    /// ways; the two must agree. Returns how many were accepted and refused.
    static func agreement<Value: Equatable>(
        _ containers: [[UInt8]], limit: Int, split: ([UInt8]) throws -> Value, decoded: ([UInt8]) throws -> Value
    ) -> (accepted: Int, refused: Int) {
        var counts = (accepted: 0, refused: 0)
        for encoded in containers {
            let all = variants(of: encoded)
            for bytes in stride(from: 0, to: all.count, by: max(1, all.count / limit)).map({ all[$0] }) {
                let viaSplit = try? split(bytes)
                #expect(viaSplit == (try? decoded(bytes)), "\(bytes.count) bytes")
                if viaSplit == nil { counts.refused += 1 } else { counts.accepted += 1 }
            }
        }
        return counts
    }

    @Test func receiptsParseTheSameEitherWay() throws {
        let receipts = try Self.receipts()
        for receipt in receipts {
            #expect(
                ContainerSplit(
                    receipt.encoded, payloadKey: ContainerSplit.key("receipt"),
                    trailingKey: ContainerSplit.key("certificate"), maxBytes: Receipt.maxEncodedBytes)?.payload
                    == receipt.payload,
                "a valid container is split, not decoded")
        }
        // The longest has 15,000 variants; 2,000 of them keep this fast.
        let counts = Self.agreement(
            receipts.map(\.encoded), limit: 2_000, split: Receipt.init(encoded:),
            decoded: Receipt.init(decodingContainer:))
        // Both kinds occur: changes inside the signature or the body's padding still parse.
        #expect(counts.accepted > 100 && counts.refused > 1_000)
    }

    @Test func envelopesParseTheSameEitherWay() throws {
        let envelopes = try Self.envelopes()
        for envelope in envelopes {
            #expect(
                ContainerSplit(
                    envelope.encoded, payloadKey: ContainerSplit.key("envelope"), maxBytes: Envelope.maxEncodedBytes)?
                    .signature == envelope.signature)
        }
        let counts = Self.agreement(
            envelopes.map(\.encoded), limit: 10_000, split: Envelope.init(encoded:),
            decoded: Envelope.init(decodingContainer:))
        #expect(counts.accepted > 100 && counts.refused > 1_000)
    }

    /// A container the split does not read (here, keys in another order, as a lenient encoder
    /// might write them) is decoded, and refused with the decoder's own words.
    @Test func otherShapesAreLeftToTheDecoder() throws {
        let e = GoldenFixture.envelope
        var reordered: [UInt8] = [0xa2]
        reordered += ContainerSplit.key("envelope")
        CBOREncoder.appendHead(major: 2, argument: UInt64(e.payload.count), to: &reordered)
        reordered += e.payload + ContainerSplit.key("sig") + [0x58, 0x40] + e.signature
        #expect(ContainerSplit(reordered, payloadKey: ContainerSplit.key("envelope"), maxBytes: 1_024) == nil)
        #expect(throws: ModelError.self) { try Envelope(encoded: reordered) }
        // A length not in its shortest form.
        var long: [UInt8] = [0xa2] + ContainerSplit.key("sig") + [0x59, 0x00, 0x40] + e.signature
        long += ContainerSplit.key("envelope")
        CBOREncoder.appendHead(major: 2, argument: UInt64(e.payload.count), to: &long)
        long += e.payload
        #expect(ContainerSplit(long, payloadKey: ContainerSplit.key("envelope"), maxBytes: 1_024) == nil)
        #expect(throws: ModelError.self) { try Envelope(encoded: long) }
    }
}
