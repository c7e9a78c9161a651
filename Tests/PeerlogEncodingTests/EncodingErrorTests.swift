import PeerlogEncoding
import Testing

/// EncodingError, the module's one error type: codes, offsets, equality on the code only, and
/// descriptions that never hold the input.
@Suite struct EncodingErrorTests {
    @Test func everyDecoderThrowsTheOneTypeWithItsCode() {
        do {
            _ = try CBORDecoder.decodeStrict([0x82, 0x01])
            Issue.record("accepted truncated CBOR")
        } catch {
            #expect(
                error.code == .truncated && error.offset != nil && error.file.hasPrefix("PeerlogEncoding/"), "\(error)")
            #expect(error == EncodingError(.truncated, at: 99), "equality ignores offset, detail, file and line")
        }
        do {
            _ = try JSON.parse("{\"k\": \"s3cret")
            Issue.record("accepted unterminated JSON")
        } catch {
            #expect(error.code == .invalidJSON && !"\(error)".contains("s3cret"), "\(error)")
        }
        do {
            _ = try CBOR(json: .number("1.5"), allowFloats: false)
            Issue.record("accepted a float")
        } catch {
            #expect(error.code == .invalidJSONValue, "\(error)")
        }
        do {
            _ = try Base32.decode("MY")
            Issue.record("accepted upper case")
        } catch {
            #expect(
                error.code == .invalidBase32
                    && error.description == "invalid base32 character at offset 0 (expected a-z or 2-7)")
        }
        do {
            _ = try CID(string: "zdj7W")
            Issue.record("accepted a base58 CID")
        } catch {
            #expect(error.code == .invalidCID && error != EncodingError(.truncated, at: 0), "\(error)")
        }
        #expect(EncodingError.Code.duplicateMapKey.description == "duplicateMapKey")
    }
}
