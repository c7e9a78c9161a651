import PeerlogCrypto
import PeerlogEncoding
import PeerlogModel
import Testing

/// ModelError and CryptoError: extensible codes, where they were raised, equality on the code.
@Suite struct ModelErrorTests {
    @Test func codesCompareAndDescriptionsKeepTheirWords() {
        let e = ModelError(.wrongShape, "receipt lacks field \"v\"")
        #expect(e == ModelError(.wrongShape, "other") && e != ModelError(.badSignature, "receipt lacks field \"v\""))
        #expect(
            e.description == "wrong structure: receipt lacks field \"v\"" && e.file.hasSuffix("ModelErrorTests.swift"))
        #expect(ModelError.Code.sizeLimitExceeded.name == "sizeLimitExceeded")
        #expect(ModelError.Code.sizeLimitExceeded.description == "size limit exceeded", "a code carries its words")
        do {
            _ = try Receipt(encoded: [0xa0])
            Issue.record("accepted an empty map")
        } catch let error as ModelError {
            #expect(error.code == .wrongShape && error.file.hasPrefix("PeerlogModel/"), "\(error)")
        } catch { Issue.record("not a ModelError: \(error)") }
    }

    @Test func cryptoErrorsCarryTheirThrowSiteAndNoKey() throws {
        let key = SecureBytes([UInt8](repeating: 0x42, count: 32))
        do {
            _ = try ChaChaPoly.open([UInt8](repeating: 0, count: 40), key: key, nonce: [UInt8](repeating: 0, count: 12))
            Issue.record("opened garbage")
        } catch let e as CryptoError {
            #expect(
                e.code == .authenticationFailure && e.file.hasPrefix("PeerlogCrypto/")
                    && e == CryptoError(.authenticationFailure))
            #expect(!"\(e)".contains("42"), "\(e)")
        }
    }
}
