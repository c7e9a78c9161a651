import Foundation
import PeerlogCrypto
import PeerlogTestSupport
import Testing

struct HashAndAEADTests {
    @Test func knownAnswers() throws {
        let abc = Array("abc".utf8)
        #expect(TestSupport.hex(SHA256.hash(abc)) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(TestSupport.hex(SHA512.hash(abc)).hasPrefix("ddaf35a193617abacc417349ae20413112e6fa4e89a97ea2"))
        // RFC 7693 Appendix A.
        #expect(
            TestSupport.hex(BLAKE2b.hash(abc))
                == "ba80a53f981c4d0d6a2797b69f12f6e94c212f14685ac4b74b12bb6fdbffa2d17d87c5392aab792dc252d5de4533cc9518d38aa8dbf1925ab92386edd4009923"
        )
        // RFC 4231 test case 1.
        let key = [UInt8](repeating: 0x0b, count: 20)
        let hiThere = Array("Hi There".utf8)
        #expect(
            TestSupport.hex(HMAC<SHA256>.authenticationCode(for: hiThere, key: key))
                == "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7")
        #expect(
            TestSupport.hex(HMAC<SHA512>.authenticationCode(for: hiThere, key: key))
                == "87aa7cdea5ef619d4ff0b4241a1d6cb02379f4e2ce4ec2787ad0b30545e17cdedaa833b7d6b8a702038b274eaea3f4e4be9d914eeb61f1702e696c203a126854"
        )
    }

    @Test func streamingEqualsOneShot() throws {
        var rng = SeededRandom(seed: 7)
        let data = rng.bytes(10_000)
        let h = BLAKE2b()
        h.update(Array(data[0..<3333]))
        h.update(Array(data[3333...]))
        #expect(h.finalize() == BLAKE2b.hash(data))
        let s = SHA256()
        s.update(Array(data[0..<1]))
        s.update(Array(data[1...]))
        #expect(s.finalize() == SHA256.hash(data))
        #expect(throws: CryptoError(.invalidParameter)) { try BLAKE2b.hash(data, length: 65) }
    }

    struct PythonCase: Encodable {
        var op: String
        var data: String
        var key: String = ""
        var length: Int = 0
        var nonce: String = ""
        var ad: String = ""
    }

    /// The same random inputs through libsodium (ours) and OpenSSL / `cryptography` (Python).
    @Test func crossCheckAgainstPython() throws {
        var rng = SeededRandom(seed: 42)
        var cases = [PythonCase]()
        var ours = [String]()
        func add(_ c: PythonCase, _ result: [UInt8]) {
            cases.append(c)
            ours.append(TestSupport.hex(result))
        }
        for i in 0..<40 {
            let data = rng.bytes(Int.random(in: 0...300, using: &rng))
            let key = rng.bytes([0, 16, 32, 64, 129, 200][i % 6])
            let d = TestSupport.hex(data)
            let k = TestSupport.hex(key)
            add(PythonCase(op: "sha256", data: d), SHA256.hash(data))
            add(PythonCase(op: "sha512", data: d), SHA512.hash(data))
            let length = [1, 16, 32, 64][i % 4]
            let bkey = Array(key.prefix(64))
            let secretKey: SecureBytes? = bkey.isEmpty ? nil : SecureBytes(bkey)
            let b2 = try BLAKE2b.hash(data, length: length, key: secretKey)
            add(PythonCase(op: "blake2b", data: d, key: TestSupport.hex(bkey), length: length), b2)
            add(PythonCase(op: "hmac-sha256", data: d, key: k), HMAC<SHA256>.authenticationCode(for: data, key: key))
            add(PythonCase(op: "hmac-sha512", data: d, key: k), HMAC<SHA512>.authenticationCode(for: data, key: key))
            add(PythonCase(op: "hmac-blake2b", data: d, key: k), HMAC<BLAKE2b>.authenticationCode(for: data, key: key))
            let aeadKey = rng.bytes(32)
            let nonce = rng.bytes(12)
            let ad = rng.bytes(i % 20)
            let sealed = try ChaChaPoly.seal(data, key: SecureBytes(aeadKey), nonce: nonce, authenticating: ad)
            add(
                PythonCase(
                    op: "chachapoly", data: d, key: TestSupport.hex(aeadKey), nonce: TestSupport.hex(nonce),
                    ad: TestSupport.hex(ad)), sealed)
        }
        let input = String(decoding: try JSONEncoder().encode(cases), as: UTF8.self)
        let theirs = try JSONDecoder().decode(
            [String].self, from: Data(try TestSupport.python("crypto_check.py", input: input).utf8))
        #expect(theirs.count == ours.count)
        for (i, (a, b)) in zip(ours, theirs).enumerated() {
            #expect(a == b, "case \(i) (\(cases[i].op)) differs")
        }
    }

    struct AEADCase: Sendable, CustomStringConvertible {
        let description: String
        let nonceLength: Int
        let seal: @Sendable ([UInt8], SecureBytes, [UInt8], [UInt8]) throws -> [UInt8]
        let open: @Sendable ([UInt8], SecureBytes, [UInt8], [UInt8]) throws -> [UInt8]
    }

    static let aeads = [
        AEADCase(
            description: "ChaCha20-Poly1305", nonceLength: 12,
            seal: { try ChaChaPoly.seal($0, key: $1, nonce: $2, authenticating: $3) },
            open: { try ChaChaPoly.open($0, key: $1, nonce: $2, authenticating: $3) }),
        AEADCase(
            description: "XChaCha20-Poly1305", nonceLength: 24,
            seal: { try XChaChaPoly.seal($0, key: $1, nonce: $2, authenticating: $3) },
            open: { try XChaChaPoly.open($0, key: $1, nonce: $2, authenticating: $3) }),
    ]

    @Test(arguments: aeads)
    func aeadRoundTripAndTamper(aead: AEADCase) throws {
        let key = SecureBytes(randomCount: 32)
        let message = Array("attack at dawn".utf8)
        let nonce = SecureRandom.bytes(aead.nonceLength)
        var sealed = try aead.seal(message, key, nonce, [1, 2])
        #expect(try aead.open(sealed, key, nonce, [1, 2]) == message)
        #expect(throws: CryptoError(.authenticationFailure)) { try aead.open(sealed, key, nonce, [1, 3]) }
        let wrongKey = SecureBytes(randomCount: 32)
        #expect(throws: CryptoError(.authenticationFailure)) { try aead.open(sealed, wrongKey, nonce, [1, 2]) }
        sealed[0] ^= 0x80
        #expect(throws: CryptoError(.authenticationFailure)) { try aead.open(sealed, key, nonce, [1, 2]) }
        #expect(throws: CryptoError(.authenticationFailure)) { try aead.open(Array(sealed.prefix(15)), key, nonce, []) }
        #expect(throws: CryptoError(.invalidNonceLength)) { try aead.seal(message, key, [0], []) }
    }

    @Test func secretsAreNeverPrinted() {
        let secret = SecureBytes([0xde, 0xad, 0xbe, 0xef])
        #expect(!"\(secret)".contains("dead"))
        #expect(!String(reflecting: secret).contains("de"))
        #expect("\(secret)" == "SecureBytes(4 bytes, redacted)")
        #expect(secret == SecureBytes([0xde, 0xad, 0xbe, 0xef]))
        #expect(secret != SecureBytes([0xde, 0xad, 0xbe, 0xee]))
        let key = Ed25519.PrivateKey()
        #expect(!String(reflecting: key).contains(TestSupport.hex(key.seed.copyBytes())))
    }
}
