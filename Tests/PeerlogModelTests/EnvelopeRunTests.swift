import PeerlogCrypto
import PeerlogEncoding
import PeerlogModel
import PeerlogTestSupport
import Testing

/// Batched envelopes (docs/PROTOCOL.md §3.5): codec, positions, tampering, pinned bytes.
struct EnvelopeRunTests {
    static func cid(_ fill: UInt8) -> CID {
        try! CID(bytes: [0x01, 0x71, 0x12, 0x20] + [UInt8](repeating: fill, count: 32))
    }
    static let key = GoldenFixture.deviceKey

    /// The worked example of §3.5: seqs 7, 8, 9 for the golden receipt and two fixed CIDs.
    static func golden() throws -> [Envelope] {
        try EnvelopeRun.sign(
            group: GoldenFixture.group, firstSeq: 7, receipts: [GoldenFixture.receipt.cid, cid(0xaa), cid(0xbb)],
            term: 0, receivedAt: 1_700_000_000_500, key: key)
    }

    @Test func everyPositionOfEveryRunSizeVerifies() throws {
        for size in [2, 3, 4, 5, 7, 8, 9, 16, 17, 100, 256] {
            let cids = (0..<size).map { Self.cid(UInt8($0 % 251)) }
            let items = try EnvelopeRun.sign(
                group: GoldenFixture.group, firstSeq: 10, receipts: cids, term: 3, receivedAt: 5, key: Self.key)
            #expect(items.count == size)
            for (i, e) in items.enumerated() {
                #expect(e.verify() == .valid, "size \(size) index \(i)")
                #expect(e.seq == 10 + UInt64(i) && e.receipt == cids[i] && e.term == 3 && e.receivedAt == 5)
                #expect(e.sequencer == DeviceID(publicKey: Self.key.publicKey))
                #expect(e.encoded.count <= Envelope.maxEncodedBytes)
                let back = try Envelope(encoded: e.encoded)
                #expect(back == e && back.encoded == e.encoded && back.run != nil)
            }
            // One signature for the whole run.
            #expect(Set(items.map(\.signature)).count == 1)
        }
    }

    /// Items are written by hand (`Envelope.itemPayload`): the same bytes as the generic
    /// deterministic encoder's, for every path length and for seqs of every argument size.
    @Test func itemPayloadsAreTheDeterministicEncoding() throws {
        for (firstSeq, size) in [(1, 2), (22, 3), (250, 9), (65_530, 17), (4_294_967_290, 100), (1 << 40, 256)] {
            let cids = (0..<size).map { Self.cid(UInt8($0 % 251)) }
            let items = try EnvelopeRun.sign(
                group: GoldenFixture.group, firstSeq: UInt64(firstSeq), receipts: cids, term: 1, receivedAt: 2,
                key: Self.key)
            for e in items {
                let generic = CBOREncoder.encode(
                    .textMap([
                        "v": 1, "run": .bytes(e.run!.payload), "seq": .unsigned(e.seq), "cid": e.receipt.cborLink,
                        "path": .array(e.path.map(CBOR.bytes)),
                    ]))
                #expect(e.payload == generic, "seq \(e.seq)")
            }
        }
    }

    @Test func singleEnvelopesStayReadable() throws {
        let e = GoldenFixture.envelope
        let back = try Envelope(encoded: e.encoded)
        #expect(back.run == nil && back.path.isEmpty && back.verify() == .valid && back.encoded == e.encoded)
        // A run of one is a single envelope.
        let one = try EnvelopeRun.signRuns(
            group: GoldenFixture.group, firstSeq: 1, receipts: [Self.cid(1)], term: 0, receivedAt: 1, key: Self.key)
        #expect(one.count == 1 && one[0].run == nil)
        let many = try EnvelopeRun.signRuns(
            group: GoldenFixture.group, firstSeq: 1, receipts: (0..<600).map { Self.cid(UInt8($0 % 200)) }, term: 0,
            receivedAt: 1, key: Self.key)
        #expect(many.count == 600 && Set(many.map(\.signature)).count == 3 && many.allSatisfy { $0.verify() == .valid })
        #expect(many.map(\.seq) == Array(1...600))
    }

    /// Rebuilds an item payload with one field changed, keeping the signature.
    static func tampered(
        _ e: Envelope, seq: UInt64? = nil, cid: CID? = nil, path: [[UInt8]]? = nil, run: [UInt8]? = nil
    ) throws -> Envelope {
        let payload = CBOREncoder.encode(
            .textMap([
                "v": 1, "run": .bytes(run ?? e.run!.payload), "seq": .unsigned(seq ?? e.seq),
                "cid": (cid ?? e.receipt).cborLink, "path": .array((path ?? e.path).map(CBOR.bytes)),
            ]))
        return try Envelope(payload: payload, signature: e.signature)
    }

    @Test func tamperingWithAnyPairOrProofFails() throws {
        let items = try EnvelopeRun.sign(
            group: GoldenFixture.group, firstSeq: 1, receipts: (0..<5).map { Self.cid(UInt8($0)) }, term: 0,
            receivedAt: 1, key: Self.key)
        for e in items {
            #expect(try Self.tampered(e).verify() == .valid)
            #expect(try Self.tampered(e, cid: Self.cid(99)).verify() != .valid)
            // Another position's (seq, cid) under this item's path.
            let other = items[(Int(e.seq) % items.count)]
            #expect(try Self.tampered(e, seq: other.seq, cid: other.receipt).verify() != .valid)
            #expect(try Self.tampered(e, seq: other.seq).verify() != .valid)
            var path = e.path
            path[0][0] ^= 1
            #expect(try Self.tampered(e, path: path).verify() != .valid)
            #expect(try Self.tampered(e, path: Array(e.path.dropLast())).verify() != .valid)
            #expect(try Self.tampered(e, path: e.path + [[UInt8](repeating: 0, count: 32)]).verify() != .valid)
            // Another run header (a different root) under the same signature.
            var header = e.run!.payload
            header[header.count / 2] ^= 1
            #expect((try? Self.tampered(e, run: header).verify()) != .valid)
        }
        // An item's seq outside its run is refused when decoded.
        #expect(throws: ModelError.self) { try Self.tampered(items[0], seq: 6) }
    }

    /// `checkPosition` hands on a leaf (which a store keeps without a second check, §10) only
    /// for an item whose path reaches its signed root from that leaf.
    @Test func onlyAnItemInItsRootGivesItsLeaf() throws {
        let items = try EnvelopeRun.sign(
            group: GoldenFixture.group, firstSeq: 1, receipts: (0..<5).map { Self.cid(UInt8($0)) }, term: 0,
            receivedAt: 1, key: Self.key)
        for e in items {
            let checked = e.checkPosition()
            #expect(checked.result == .valid && checked.leaf == EnvelopeRun.leafHash(seq: e.seq, receipt: e.receipt))
            var path = e.path
            path[0][0] ^= 1
            for forged in [try Self.tampered(e, path: path), try Self.tampered(e, cid: Self.cid(99))] {
                let check = forged.checkPosition()
                #expect(check.result != .valid && check.leaf == nil)
            }
        }
        let single = GoldenFixture.envelope.checkPosition()
        #expect(single.result == .valid && single.leaf == nil)
    }

    /// The independent Python implementation builds the same run header, signature and item.
    @Test func pythonBuildsTheSameRun() throws {
        let items = try Self.golden()
        let out = try JSON.parse(try TestSupport.python("receipt_interop.py", ["golden-run"]))
        #expect(out["envelope_run_header"] == .string(TestSupport.hex(items[0].run!.payload)))
        #expect(out["envelope_run_sig"] == .string(TestSupport.hex(items[0].signature)))
        #expect(out["envelope_run_item_8"] == .string(TestSupport.hex(items[1].encoded)))
    }

    @Test func goldenBatchedEnvelope() throws {
        let items = try Self.golden()
        let doc = try String(contentsOfFile: TestSupport.repoRoot + "/docs/PROTOCOL.md", encoding: .utf8)
        func block(_ name: String) -> String? {
            guard let start = doc.range(of: "<!-- golden:\(name) -->"),
                let end = doc.range(of: "<!-- /golden:\(name) -->", range: start.upperBound..<doc.endIndex)
            else { return nil }
            return String(doc[start.upperBound..<end.lowerBound]).filter { $0.isHexDigit || $0.isLetter }
                .replacingOccurrences(of: "text", with: "")
        }
        #expect(block("envelope-run-header") == TestSupport.hex(items[0].run!.payload))
        #expect(block("envelope-run-signature") == TestSupport.hex(items[0].signature))
        #expect(block("envelope-run-item-8") == TestSupport.hex(items[1].encoded))
        #expect(items.allSatisfy { $0.verify() == .valid })
    }

    /// Run headers kept by their bytes: a hit is the decoding of the same bytes, a header that
    /// does not decode throws and is not kept, and the memo never holds more than its capacity.
    @Test func decodedRunHeadersAreWhatDecodingReturnsAndBounded() throws {
        let memo = DecodedByBytes(capacity: 3, decode: EnvelopeRun.Header.init(payload:))
        let runs = try (0..<5).map { n in
            try EnvelopeRun.sign(
                group: GoldenFixture.group, firstSeq: 1 + 10 * UInt64(n), receipts: [Self.cid(1), Self.cid(2)], term: 0,
                receivedAt: 5, key: Self.key)
        }
        let header = try #require(runs[0][0].run)
        #expect(try memo.value(header.payload) == header)
        #expect(try memo.value(header.payload) == header)
        #expect(memo.count == 1)
        #expect(throws: (any Error).self) { try memo.value([0xa1, 0x01, 0x02]) }
        #expect(memo.count == 1)
        for run in runs {
            let h = try #require(run[1].run)
            #expect(try memo.value(h.payload) == h && h.firstSeq == run[1].seq - 1)
            #expect(memo.count <= 3)
        }
        // Items parsed from the wire carry the header the memo holds.
        let item = try Envelope(encoded: runs[4][1].encoded)
        #expect(item.run == runs[4][1].run && item.seq == runs[4][1].seq)
    }
}
