import Foundation
import PeerlogEncoding
import PeerlogTestSupport
import Testing

struct CIDAndBase32Tests {
    // RFC 4648 §10, lower-cased, without padding.
    @Test(arguments: [
        ("", ""), ("f", "my"), ("fo", "mzxq"), ("foo", "mzxw6"), ("foob", "mzxw6yq"), ("fooba", "mzxw6ytb"),
        ("foobar", "mzxw6ytboi"),
    ])
    func base32Vectors(plain: String, encoded: String) throws {
        #expect(Base32.encode(Array(plain.utf8)) == encoded)
        #expect(try Base32.decode(encoded) == Array(plain.utf8))
    }

    @Test func base32RejectsNonCanonical() {
        #expect(throws: Base32.DecodingError.invalidCharacter(offset: 0)) { try Base32.decode("MY") }
        #expect(throws: Base32.DecodingError.invalidCharacter(offset: 1)) { try Base32.decode("m1") }
        #expect(throws: Base32.DecodingError.invalidCharacter(offset: 2)) { try Base32.decode("my======") }
        #expect(throws: Base32.DecodingError.invalidLength(1)) { try Base32.decode("m") }
        #expect(throws: Base32.DecodingError.invalidLength(3)) { try Base32.decode("mzx") }
        #expect(throws: Base32.DecodingError.nonZeroTrailingBits()) { try Base32.decode("mz") }
    }

    @Test func cidOfKnownContent() throws {
        // CID of the empty dag-cbor map `a0`, as computed by every IPFS implementation.
        let cid = CID(hashing: [0xa0])
        #expect(cid.string == "bafyreigbtj4x7ip5legnfznufuopl4sg4knzc2cof6duas4b3q2fy6swua")
        #expect(cid.bytes.count == 36)
        #expect(try CID(string: cid.string) == cid)
        #expect(try CID(bytes: cid.bytes) == cid)
        #expect(try CID(cborLink: cid.cborLink) == cid)
    }

    /// CIDs and base32 against the independent Python `multiformats` package.
    @Test func crossCheckWithMultiformats() throws {
        var rng = SeededRandom(seed: 11)
        let payloads = (0..<200).map { i in rng.bytes(i % 7 == 0 ? 0 : Int.random(in: 1...500, using: &rng)) }
        let input = String(decoding: try JSONEncoder().encode(payloads.map(TestSupport.hex)), as: UTF8.self)
        struct Row: Decodable {
            let cid: String
            let base32: String
        }
        let rows = try JSONDecoder().decode(
            [Row].self, from: Data(try TestSupport.python("cid_check.py", input: input).utf8))
        #expect(rows.count == payloads.count)
        for (payload, row) in zip(payloads, rows) {
            #expect(CID(hashing: payload).string == row.cid)
            #expect(Base32.encode(payload) == row.base32)
            #expect(try CID(string: row.cid) == CID(hashing: payload))
        }
    }

    @Test func cidParseErrors() {
        let good = CID(hashing: [1]).bytes
        func text(_ b: [UInt8]) -> String { "b" + Base32.encode(b) }
        #expect(throws: CID.ParseError.empty()) { try CID(string: "") }
        #expect(throws: CID.ParseError.unsupportedMultibase("z")) { try CID(string: "zdj7W") }
        #expect(throws: CID.ParseError.unsupportedVersion(0)) { try CID(string: text([0x00] + good.dropFirst())) }
        #expect(throws: CID.ParseError.unsupportedCodec(0x55)) {
            try CID(string: text([0x01, 0x55] + good.dropFirst(2)))
        }
        #expect(throws: CID.ParseError.unsupportedHash(0x13)) {
            try CID(string: text([0x01, 0x71, 0x13] + good.dropFirst(3)))
        }
        #expect(throws: CID.ParseError.wrongDigestLength(32)) { try CID(bytes: Array(good.dropLast())) }
        #expect(throws: CID.ParseError.trailingBytes(1)) { try CID(bytes: good + [0]) }
        #expect(throws: CID.ParseError.malformedVarint(field: "codec")) { try CID(bytes: [0x01, 0x80]) }
        #expect(throws: (any Error).self) { try CID(string: "bAFY") }
    }
}
