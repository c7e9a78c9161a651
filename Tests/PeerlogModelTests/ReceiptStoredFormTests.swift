import PeerlogCrypto
import PeerlogEncoding
import PeerlogModel
import Testing

/// A receipt payload's stored form (docs/PROTOCOL.md §10): the parents and body alone, put back
/// together with the store's columns, byte for byte the payload signed.
struct ReceiptStoredFormTests {
    static func cid(_ fill: UInt8) -> CID {
        try! CID(bytes: [0x01, 0x71, 0x12, 0x20] + [UInt8](repeating: fill, count: 32))
    }

    static func receipt(
        type: String = "entity.put", counter: UInt64 = 1, parents: [CID] = [], hlc: UInt64, body: CBOR
    )
        throws -> Receipt
    {
        try Receipt.sign(
            Receipt.Draft(
                group: GoldenFixture.group, type: type, counter: counter, parents: parents,
                hlc: HLCTimestamp(packed: hlc), body: body),
            signingKey: GoldenFixture.deviceKey, certificate: GoldenFixture.certificate)
    }

    /// A local write's payload, written field by field, is the deterministic encoding of the
    /// map of its nine fields: every argument size of the counter and the HLC, types short and
    /// long, parents unsorted and repeated (signed sorted, once each), bodies of several shapes.
    @Test func aPayloadWrittenFieldByFieldIsTheMapsEncoding() throws {
        let bodies: [CBOR] = [
            .textMap(["key": "color", "value": "blue"]), .textMap([:]),
            .textMap(["key": "k", "value": .bytes([UInt8](repeating: 7, count: 300))]),
        ]
        let types = ["entity.put", "x", String(repeating: "a", count: 23), String(repeating: "b", count: 40)]
        let parentSets: [[CID]] = [
            [], [Self.cid(3)], [Self.cid(9), Self.cid(2), Self.cid(9)], (0..<24).map { Self.cid($0) },
        ]
        for counter: UInt64 in [1, 23, 24, 255, 256, 65_536, 1 << 32, UInt64.max] {
            for hlc: UInt64 in [0, 23, 1 << 16, 1_700_000_000_123 << 16 | 7] {
                for (i, type) in types.enumerated() {
                    let parents = parentSets[(Int(counter % 7) + i) % parentSets.count]
                    let body = bodies[i % bodies.count]
                    let draft = Receipt.Draft(
                        group: GoldenFixture.group, type: type, counter: counter, parents: parents,
                        hlc: HLCTimestamp(packed: hlc), body: body)
                    let sorted = Array(Set(parents)).sorted { $0.bytes.lexicographicallyPrecedes($1.bytes) }
                    let map = CBOREncoder.encode(
                        .textMap([
                            "v": 1, "group": .bytes(GoldenFixture.group.bytes), "type": .text(type),
                            "author": .bytes(GoldenFixture.certificate.device.bytes),
                            "identity": .bytes(GoldenFixture.certificate.identity.bytes), "counter": .unsigned(counter),
                            "parents": .array(sorted.map(\.cborLink)), "hlc": .unsigned(hlc), "body": body,
                        ]))
                    #expect(try Receipt.payload(of: draft, certificate: GoldenFixture.certificate) == map)
                }
            }
        }
    }

    /// Every argument size of the counter and the HLC, 0 to 32 parents (an array head of one
    /// byte and of two), and bodies of every shape the profile allows.
    @Test func everyPayloadComesBackByteForByte() throws {
        let bodies: [CBOR] = [
            .textMap(["key": "color", "value": "blue"]),
            .textMap(["key": "k", "value": .bytes([UInt8](repeating: 7, count: 3_000))]),
            .textMap([
                "ops": .array([.textMap(["n": .negative(4), "t": .bool(true)]), .null, .array([])]),
                "nested": .textMap([:]),
            ]),
            .textMap(["link": Self.cid(9).cborLink, "text": .text(String(repeating: "é", count: 300))]),
            .textMap([:]),
        ]
        let counters: [UInt64] = [1, 23, 24, 255, 256, 65_536, 1 << 32, UInt64.max]
        let hlcs: [UInt64] = [0, 1 << 16, 1_700_000_000_123 << 16 | 7, (HLCTimestamp.maxPhysical << 16) | 0xffff]
        let parentCounts = [0, 1, 2, 23, 24, 32]
        var checked = 0
        for (i, body) in bodies.enumerated() {
            for counter in counters {
                let hlc = hlcs[(i + Int(counter % 7)) % hlcs.count]
                let parents = (0..<parentCounts[(i + Int(counter % 5)) % parentCounts.count]).map {
                    Self.cid(UInt8($0))
                }
                let r = try Self.receipt(
                    type: i % 2 == 0 ? "entity.put" : "group.member_added", counter: counter,
                    parents: parents, hlc: hlc, body: body)
                let stored = try #require(r.storedPayload, "counter \(counter) body \(i)")
                // Seven fields and their keys are left out: v, hlc, type, group, author, counter, identity.
                #expect(stored.count < r.payload.count - 100)
                #expect(try Receipt.payload(stored: stored, columns: r.storedColumns) == r.payload)
                checked += 1
            }
        }
        #expect(checked == bodies.count * counters.count)
    }

    /// The golden receipt's stored form, pinned: the parents array, then the body.
    @Test func theStoredFormIsTheParentsThenTheBody() throws {
        let r = GoldenFixture.receipt
        let stored = try #require(r.storedPayload)
        #expect(stored == [0x80] + CBOREncoder.encode(r.body))
    }

    /// A row stored whole (every row before this form) is returned as it is, columns unread;
    /// bytes that are neither form, or a stored form cut off, are one clear error.
    @Test func wholeRowsPassAndDamagedOnesAreRefused() throws {
        let r = GoldenFixture.receipt
        var columnsRead = false
        let whole = try Receipt.payload(
            stored: r.payload,
            columns: {
                columnsRead = true
                return r.storedColumns
            }())
        #expect(whole == r.payload && !columnsRead)
        for damaged in [[], [0x01], [0x81], [0x81, 0xd8, 0x2a], [0x80]] as [[UInt8]] {
            #expect(throws: ModelError.self, "\(damaged)") {
                try Receipt.payload(stored: damaged, columns: r.storedColumns)
            }
        }
    }

    /// Columns that are not the receipt's give another payload, which the CID catches: a store
    /// keeps the CID, so a row whose columns were changed reads as a different receipt.
    @Test func otherColumnsGiveAnotherPayload() throws {
        let r = GoldenFixture.receipt
        let stored = try #require(r.storedPayload)
        var columns = r.storedColumns
        columns.counter += 1
        let other = try Receipt.payload(stored: stored, columns: columns)
        #expect(other != r.payload && CID(hashing: other) != r.cid)
    }
}
