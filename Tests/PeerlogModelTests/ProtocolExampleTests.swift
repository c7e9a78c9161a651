import Foundation
import PeerlogCrypto
import PeerlogEncoding
import PeerlogModel
import PeerlogTestSupport
import Testing

/// The answers docs/PROTOCOL.md gives where an implementation written from it alone had to
/// guess (§1 depth, §3 CIDs, §3.2 the certificate in a receipt, §4's certificate CID).
struct ProtocolExampleTests {
    static let certificateCID = "bafyreiaanu7dszq5ekuc6smyfnxk3jmuzgociwnxkyzio7k6npgfa36ena"

    /// A certificate's CID is the CID of its payload bytes, not of its container (§3, §4).
    @Test func certificateCIDCoversThePayload() throws {
        let certificate = GoldenFixture.certificate
        #expect(certificate.cid.string == Self.certificateCID)
        #expect(certificate.cid == CID(hashing: certificate.payload))
        #expect(certificate.payload.count == 164 && certificate.encoded.count == 249)
        #expect(CID(hashing: certificate.encoded) != certificate.cid)
        #expect(TestSupport.hex(SHA256.hash(certificate.payload)).hasPrefix("006d3e39"))
        #expect(TestSupport.hex(SHA256.hash(certificate.payload)).hasSuffix("506fc468"))
        let doc = try String(contentsOfFile: TestSupport.repoRoot + "/docs/PROTOCOL.md", encoding: .utf8)
        let block = try #require(
            doc.range(of: "<!-- golden:certificate-cid -->\n```text\n")
                .flatMap { start in
                    doc.range(of: "\n```\n<!-- /golden:certificate-cid -->", range: start.upperBound..<doc.endIndex).map
                    { doc[start.upperBound..<$0.lowerBound] }
                })
        #expect(block == Self.certificateCID[...])
    }

    /// In a receipt container the certificate is the certificate container's map, so the
    /// container ends with the key "certificate" and the certificate's own encoded bytes (§3.2).
    /// The same certificate as a byte string is refused.
    @Test func aReceiptHoldsItsCertificateAsAMap() throws {
        let receipt = GoldenFixture.receipt
        let hex = TestSupport.hex(receipt.encoded)
        #expect(hex.hasPrefix("a3637369675840"))
        #expect(hex.hasSuffix("6b6365727469666963617465" + TestSupport.hex(GoldenFixture.certificate.encoded)))
        let asBytes = CBOREncoder.encode(
            .textMap([
                "receipt": .bytes(receipt.payload), "sig": .bytes(receipt.signature),
                "certificate": .bytes(GoldenFixture.certificate.encoded),
            ]))
        #expect(throws: (any Error).self) { try Receipt(encoded: asBytes) }
        #expect(try Receipt(encoded: receipt.encoded).cid == receipt.cid)
    }

    /// Depth counts arrays, maps and tags, the payload map being level 1; the deepest allowed
    /// level in a receipt payload is 18, so a body may be 17 nested maps, not 18 (§1, §3.3).
    @Test func bodyNestingBoundary() throws {
        func body(maps n: Int) -> CBOR {
            var v: CBOR = 1
            for _ in 0..<n { v = .textMap(["a": v]) }
            return v
        }
        let device = try LocalDevice.generate(name: "depth", createdAt: 1)
        func sign(_ body: CBOR) throws -> Receipt {
            try device.sign(
                Receipt.Draft(
                    group: GroupFixture.group, type: "app.depth", counter: 1,
                    hlc: HLCTimestamp(physical: 1, logical: 0), body: body))
        }
        #expect(Receipt.maxBodyDepth + 1 == 17)
        let deepest = try sign(body(maps: 17))
        #expect(try Receipt(encoded: deepest.encoded).cid == deepest.cid)
        #expect(throws: (any Error).self) { try sign(body(maps: 18)) }
        // The decoder's own count: [1] is depth 1, {"a": [1]} depth 2, [42(link)] depth 2.
        let one = CBORDecoder(mode: .strict, limits: .init(maxDepth: 1))
        #expect(throws: (any Error).self) { try one.decode(CBOREncoder.encode(.textMap(["a": [1]]))) }
        #expect(throws: (any Error).self) { try one.decode(CBOREncoder.encode([GoldenFixture.receipt.cid.cborLink])) }
        _ = try one.decode(CBOREncoder.encode([1]))
        _ = try one.decode(CBOREncoder.encode(.textMap(["a": 1])))
        _ = try CBORDecoder(mode: .strict, limits: .init(maxDepth: 0)).decode(CBOREncoder.encode(1))
    }
}

private enum GroupFixture {
    static let group = try! GroupID(bytes: Array(0..<16))
}
