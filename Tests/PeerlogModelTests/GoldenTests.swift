import Foundation
import PeerlogEncoding
import PeerlogModel
import PeerlogTestSupport
import Testing

/// Pins the exact bytes and CIDs of the formats. If one of these changes, every stored
/// receipt's CID changes: that is a new format version, not a refactor.
struct GoldenTests {
    static let certificatePayload =
        "a6617601646e616d656d676f6c64656e2d6c6170746f70656e6f69736558205dfedd3b6bd47f6fa28ee15d969d5bb0ea53774d488bdaf9df1c6e0124b3ef226664657669636558208139770ea87d175f56a35466c34c7ecccb8d8a91b4ee37a25df60f5b8fc9b39467637265617465641b0000018bcfe56800686964656e7469747958208a88e3dd7409f195fd52db2d3cba5d72ca6709bf1d94121bf3748801b40f6f5c"
    static let certificateSig =
        "8da203d7e35b91f2b7a23f509356bb1740dca2a8dd7d38284fffd73bb87007927cc026a3986682f68d739316be80d30f9b9e987a7248f7969a4149700f6d8d03"
    static let receiptPayload =
        "a961760163686c631b018bcfe5687b000064626f6479a2636b657965636f6c6f726576616c756564626c756564747970656a656e746974792e7075746567726f757050000102030405060708090a0b0c0d0e0f66617574686f7258208139770ea87d175f56a35466c34c7ecccb8d8a91b4ee37a25df60f5b8fc9b39467636f756e7465720167706172656e747380686964656e7469747958208a88e3dd7409f195fd52db2d3cba5d72ca6709bf1d94121bf3748801b40f6f5c"
    static let receiptSig =
        "038667a955f8ab326cff6cc50791d07e2c42a805a3ee456d103b5a16c8bd3c183c747b21b27ac3f112b8a070987c3c5c23d26735f5a72f0b5dde140697852901"
    static let receiptCID = "bafyreiapfl5ptw76bfddyth3nev3lwmttk32h5mc6p22mn75vi2s6jjxyy"
    static let envelopePayload =
        "a761760163636964d82a582500017112200f2afaf9dbfe09463c4cfb692bb5d9939ab7a3f582f3f5a637fdaa352f2537c66373657101647465726d006567726f757050000102030405060708090a0b0c0d0e0f6973657175656e63657258208139770ea87d175f56a35466c34c7ecccb8d8a91b4ee37a25df60f5b8fc9b3946b72656365697665645f61741b0000018bcfe569f4"
    static let envelopeSig =
        "21d5d6f835f71b0741b2b5fa3e822d8398f827bcb19ff905e436e6c4bac0f786c14e964f2331c2f0de52eb736c50d9e85335c6f82832cbde8ed46ff97cc2a50d"

    @Test func pinnedBytes() {
        #expect(TestSupport.hex(GoldenFixture.certificate.payload) == Self.certificatePayload)
        #expect(TestSupport.hex(GoldenFixture.certificate.signature) == Self.certificateSig)
        #expect(TestSupport.hex(GoldenFixture.receipt.payload) == Self.receiptPayload)
        #expect(TestSupport.hex(GoldenFixture.receipt.signature) == Self.receiptSig)
        #expect(GoldenFixture.receipt.cid.string == Self.receiptCID)
        #expect(TestSupport.hex(GoldenFixture.envelope.payload) == Self.envelopePayload)
        #expect(TestSupport.hex(GoldenFixture.envelope.signature) == Self.envelopeSig)
        #expect(GoldenFixture.receipt.verify() == .valid)
        #expect(GoldenFixture.envelope.verify() == .valid)
    }

    /// The same example built by the independent Python implementation gives the same bytes.
    @Test func pythonBuildsTheSameBytes() throws {
        let out = try JSON.parse(try TestSupport.python("receipt_interop.py", ["golden"]))
        #expect(out["certificate_payload"] == .string(Self.certificatePayload))
        #expect(out["certificate_sig"] == .string(Self.certificateSig))
        #expect(out["receipt_payload"] == .string(Self.receiptPayload))
        #expect(out["receipt_sig"] == .string(Self.receiptSig))
        #expect(out["receipt_cid"] == .string(Self.receiptCID))
        #expect(out["receipt_container"] == .string(TestSupport.hex(GoldenFixture.receipt.encoded)))
        #expect(out["envelope_payload"] == .string(Self.envelopePayload))
        #expect(out["envelope_sig"] == .string(Self.envelopeSig))
    }

    /// docs/PROTOCOL.md's worked example must be these bytes.
    @Test func protocolDocumentShowsTheseBytes() throws {
        let doc = try String(contentsOfFile: TestSupport.repoRoot + "/docs/PROTOCOL.md", encoding: .utf8)
        func block(_ name: String) -> String? {
            guard let start = doc.range(of: "<!-- golden:\(name) -->"),
                let end = doc.range(of: "<!-- /golden:\(name) -->", range: start.upperBound..<doc.endIndex)
            else { return nil }
            return String(doc[start.upperBound..<end.lowerBound]).filter { $0.isHexDigit || $0.isLetter || $0.isNumber }
                .replacingOccurrences(of: "text", with: "")
        }
        #expect(block("receipt-payload") == Self.receiptPayload)
        #expect(block("receipt-signature") == Self.receiptSig)
        #expect(block("receipt-cid") == Self.receiptCID)
        #expect(block("certificate-payload") == Self.certificatePayload)
        #expect(block("envelope-payload") == Self.envelopePayload)
    }
}
