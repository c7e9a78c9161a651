import PeerlogCrypto
import PeerlogEncoding
import PeerlogModel
import PeerlogSync
import Testing

struct SyncCodecTests {
    static let g = try! GroupID(bytes: Array(0..<16))
    static let d = try! DeviceID(bytes: [UInt8](repeating: 7, count: 32))
    static let d2 = try! DeviceID(bytes: [UInt8](repeating: 9, count: 32))
    static let cid = CID(hashing: [1, 2, 3])

    static let samples: [SyncMessage] = [
        .hello(versions: [1], capabilities: ["x-test"], groups: [g]),
        .vector(
            group: g, committed: 12,
            authors: [AuthorCounter(author: d, counter: 3), AuthorCounter(author: d2, counter: 1)]),
        .receipts(group: g, items: [[0xa0], [1, 2]]),
        .envelopes(group: g, items: [[0xa0]]),
        .commits(group: g, receipts: [[0xa0]], envelopes: [[1], [2]]),
        .request(group: g, id: 1, what: .after(5)),
        .request(group: g, id: 2, what: .seqRange(from: 3, to: 9)),
        .request(group: g, id: 3, what: .authorCounters(author: d, from: 1, to: 4)),
        .request(group: g, id: 4, what: .cids([cid])),
        .credit(8),
        .caughtUp(group: g),
        .done(group: g, id: 4),
        .error(code: "limit", message: "too big"),
        .refused(group: g, items: [RefusedReceipt(cid: cid, reason: "sender is not an active member")]),
        .revocations(items: [[0xa0], [1, 2]]),
    ]

    @Test func everyMessageRoundTrips() throws {
        for m in Self.samples {
            let bytes = m.encoded()
            #expect(try SyncMessage.decode(bytes, limits: .init()) == m, "\(m.type)")
            #expect(CBOREncoder.encode(try CBORDecoder.decodeStrict(bytes)) == bytes, "\(m.type) is deterministic")
        }
    }

    @Test func creditExampleBytes() {
        // {"n": 8, "t": "credit"}, as in docs/PROTOCOL.md §15.1.
        #expect(hexString(SyncMessage.credit(8).encoded()) == "a2616e08617466637265646974")
    }

    static func reject(_ value: CBOR, _ code: String, limits: SyncLimits = .init(), _ comment: Comment? = nil) {
        reject(CBOREncoder.encode(value), code, limits: limits, comment)
    }

    static func reject(_ bytes: [UInt8], _ code: String, limits: SyncLimits = .init(), _ comment: Comment? = nil) {
        do {
            let m = try SyncMessage.decode(bytes, limits: limits)
            Issue.record("accepted \(m) \(comment.map { "\($0)" } ?? "")")
        } catch {
            #expect(error.code.wireName == code, "\(error) \(comment.map { "\($0)" } ?? "")")
        }
    }

    @Test func malformedMessagesAreRefused() {
        let gb = CBOR.bytes(Self.g.bytes)
        Self.reject(.array([]), "malformed", "not a map")
        Self.reject(.textMap(["group": gb]), "malformed", "no t")
        Self.reject(.textMap(["t": 1]), "malformed", "t not text")
        Self.reject(.textMap(["t": "vector", "group": gb, "authors": []]), "malformed", "missing committed")
        Self.reject(
            .textMap(["t": "vector", "group": gb, "committed": "1", "authors": []]), "malformed", "committed mistyped")
        Self.reject(
            .textMap(["t": "vector", "group": .bytes([1]), "committed": 1, "authors": []]), "malformed", "short group")
        Self.reject(
            .textMap([
                "t": "vector", "group": gb, "committed": 1,
                "authors": [[.bytes(Self.d2.bytes), 1], [.bytes(Self.d.bytes), 1]],
            ]), "malformed", "unsorted authors")
        Self.reject(.textMap(["t": "credit", "n": 0]), "malformed", "zero credit")
        Self.reject(
            .textMap(["t": "request", "group": gb, "id": 1, "from": 5, "to": 2]), "malformed", "inverted range")
        Self.reject(
            .textMap(["t": "request", "group": gb, "id": 1, "after": 1, "cids": [Self.cid.cborLink]]), "malformed",
            "two selectors")
        Self.reject(.textMap(["t": "receipts", "group": gb, "items": [1]]), "malformed", "item not bytes")
        Self.reject(SyncMessage.credit(1).encoded() + [0], "malformed", "trailing bytes")
        Self.reject(
            [0xa2, 0x61, 0x74, 0x66] + Array("credit".utf8) + [0x61, 0x6e, 0x01], "malformed", "unsorted keys")
        Self.reject([0xbf, 0xff], "malformed", "indefinite map")
        Self.reject(.textMap(["t": "refused", "group": gb, "items": []]), "malformed", "no refused items")
        Self.reject(
            .textMap(["t": "refused", "group": gb, "items": [[Self.cid.cborLink]]]), "malformed",
            "refusal without reason")
        Self.reject(
            .textMap(["t": "refused", "group": gb, "items": [[.bytes([1]), "why"]]]), "malformed",
            "refusal cid not a link")
    }

    @Test func refusalReasonsAreBounded() throws {
        let gb = CBOR.bytes(Self.g.bytes)
        let at = String(repeating: "x", count: 1_024)
        let over = String(repeating: "x", count: 1_025)
        #expect(throws: Never.self) {
            try SyncMessage.decode(
                CBOREncoder.encode(
                    .textMap(["t": "refused", "group": gb, "items": [[Self.cid.cborLink, .text(at)]]])), limits: .init()
            )
        }
        Self.reject(
            .textMap(["t": "refused", "group": gb, "items": [[Self.cid.cborLink, .text(over)]]]), "limit",
            "reason over maxErrorMessageBytes")
        var small = SyncLimits()
        small.maxBatchItems = 1
        Self.reject(
            SyncMessage.refused(
                group: Self.g,
                items: [
                    RefusedReceipt(cid: Self.cid, reason: "a"), RefusedReceipt(cid: CID(hashing: [4]), reason: "b"),
                ]
            ).encoded(), "limit", limits: small, "refused items")
    }

    @Test func limitsAreEnforcedAndNamed() {
        var small = SyncLimits()
        small.maxBatchItems = 2
        small.maxGroupsPerHello = 1
        small.maxAuthorsPerVector = 1
        small.maxCIDsPerRequest = 1
        small.maxBatchBytes = 10
        small.maxMessageBytes = 200
        let gb = CBOR.bytes(Self.g.bytes)
        Self.reject(
            SyncMessage.receipts(group: Self.g, items: [[1], [2], [3]]).encoded(), "limit", limits: small, "items")
        Self.reject(
            SyncMessage.receipts(group: Self.g, items: [[UInt8](repeating: 1, count: 11)]).encoded(), "limit",
            limits: small, "batch bytes")
        // A commits batch counts its envelopes against the same byte limit.
        Self.reject(
            SyncMessage.commits(
                group: Self.g, receipts: [[UInt8](repeating: 1, count: 6)], envelopes: [[UInt8](repeating: 2, count: 5)]
            ).encoded(), "limit", limits: small, "batch bytes")
        Self.reject(
            SyncMessage.hello(versions: [1], capabilities: [], groups: [Self.g, .random()]).encoded(), "limit",
            limits: small, "groups")
        Self.reject(
            .textMap([
                "t": "vector", "group": gb, "committed": 1,
                "authors": [[.bytes(Self.d.bytes), 1], [.bytes(Self.d2.bytes), 1]],
            ]), "limit", limits: small, "authors")
        Self.reject(
            SyncMessage.request(group: Self.g, id: 1, what: .cids([Self.cid, CID(hashing: [9])])).encoded(), "limit",
            limits: small, "cids")
        Self.reject(
            SyncMessage.receipts(group: Self.g, items: [[UInt8](repeating: 1, count: 300)]).encoded(), "limit",
            limits: small, "message bytes")
        // Boundaries are inclusive.
        #expect(throws: Never.self) {
            try SyncMessage.decode(SyncMessage.receipts(group: Self.g, items: [[1], [2]]).encoded(), limits: small)
        }
        do {
            _ = try SyncMessage.decode(
                SyncMessage.receipts(group: Self.g, items: [[1], [2], [3]]).encoded(), limits: small)
        } catch {
            #expect(error.detail.contains("maxBatchItems") && error.detail.contains("3"))
        }
    }

    @Test func unknownTypesAndFieldsAreTolerated() throws {
        #expect(
            try SyncMessage.decode(CBOREncoder.encode(.textMap(["t": "gossip", "x": 1])), limits: .init())
                == .unknown(type: "gossip"))
        let withExtra = CBOREncoder.encode(.textMap(["t": "credit", "n": 2, "zzz": "later"]))
        #expect(try SyncMessage.decode(withExtra, limits: .init()) == .credit(2))
    }
}

extension SyncCodecTests {
    /// `blob_have` carries the layout's format (PROTOCOL.md §24.3): 2 as a field, format 1 as
    /// none; a `format` of 1 (never written) or 3 (unknown) is refused.
    @Test func blobHaveCarriesTheFormat() throws {
        let blob = try BlobID(bytes: [UInt8](repeating: 3, count: 32))
        for format in BlobFormat.allCases {
            let layout = try BlobLayout(size: 5 << 20, sealed: format == .sha256, format: format)
            let m = SyncMessage.blob(.have(group: Self.g, blob: blob, layout: layout))
            let bytes = m.encoded()
            #expect(try SyncMessage.decode(bytes, limits: .init()) == m)
            #expect(try CBORDecoder.decodeStrict(bytes)["format"] == (format == .sha256 ? .unsigned(2) : nil))
        }
        for bad in [1, 3] as [UInt64] {
            let layout = try BlobLayout(size: 5 << 20, sealed: false)
            var fields = try #require(
                CBORDecoder.decodeStrict(SyncMessage.blob(.have(group: Self.g, blob: blob, layout: layout)).encoded())
                    .mapValue)
            fields[.text("format")] = .unsigned(bad)
            Self.reject(.map(fields), "malformed", "format \(bad)")
        }
    }
}
