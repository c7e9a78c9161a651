import PeerlogCrypto
import Testing

/// The in-place AEAD calls the transport uses must produce exactly the bytes of the copying ones.
struct InPlaceAEADTests {
    let key = SecureBytes([UInt8](repeating: 7, count: 32))
    let nonce: [UInt8] = [0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0]

    @Test(arguments: [0, 1, 63, 65518])
    func sealInPlaceMatchesSealAndOpensBack(length: Int) throws {
        let plaintext = (0..<length).map { UInt8(truncatingIfNeeded: $0 * 31) }
        let sealed = try ChaChaPoly.seal(plaintext, key: key, nonce: nonce)
        var buffer = [9, 9] + plaintext + [UInt8](repeating: 0, count: 16)
        try ChaChaPoly.sealInPlace(&buffer, range: 2..<(2 + length), key: key, nonce: nonce)
        #expect(Array(buffer[2...]) == sealed)
        #expect(buffer[0...1] == [9, 9])
        try ChaChaPoly.openInPlace(&buffer, range: 2..<buffer.count, key: key, nonce: nonce)
        #expect(Array(buffer[2..<(2 + length)]) == plaintext)
    }

    @Test func failedOpenRevealsNothing() throws {
        var buffer = try ChaChaPoly.seal([1, 2, 3, 4], key: key, nonce: nonce)
        buffer[0] ^= 1
        #expect(throws: CryptoError.self) {
            try ChaChaPoly.openInPlace(&buffer, range: 0..<buffer.count, key: key, nonce: nonce)
        }
        #expect(buffer[0..<4] == [0, 0, 0, 0], "a forged message's would-be plaintext must not be left behind")
        #expect(throws: CryptoError.self) {
            try ChaChaPoly.sealInPlace(&buffer, range: 0..<buffer.count, key: key, nonce: nonce)
        }
    }
}
