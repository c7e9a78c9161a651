import Foundation
import PeerlogCrypto
import PeerlogTestSupport
import Testing

struct Ed25519Tests {
    struct Vector: Decodable { let name, secret, `public`, message, signature: String }
    struct File: Decodable { let vectors: [Vector] }

    static let vectors: [Vector] = {
        let data = FileManager.default.contents(atPath: TestSupport.vectorPath("rfc8032_ed25519.json"))!
        return try! JSONDecoder().decode(File.self, from: data).vectors
    }()

    @Test("RFC 8032 §7.1 vectors", arguments: vectors.map(\.name))
    func rfc8032(name: String) throws {
        let v = Self.vectors.first { $0.name == name }!
        let key = try Ed25519.PrivateKey(seed: SecureBytes(TestSupport.bytes(hex: v.secret)))
        #expect(TestSupport.hex(key.publicKey.rawRepresentation) == v.public)
        let message = TestSupport.bytes(hex: v.message)
        let sig = key.signature(for: message)
        #expect(TestSupport.hex(sig) == v.signature)
        #expect(key.publicKey.isValidSignature(TestSupport.bytes(hex: v.signature), for: message))
    }

    @Test func tamperedMessageOrSignatureFails() throws {
        let key = Ed25519.PrivateKey()
        let message: [UInt8] = Array("peerlog".utf8)
        var sig = key.signature(for: message)
        #expect(key.publicKey.isValidSignature(sig, for: message))
        #expect(!key.publicKey.isValidSignature(sig, for: message + [0]))
        sig[10] ^= 1
        #expect(!key.publicKey.isValidSignature(sig, for: message))
        #expect(!key.publicKey.isValidSignature(Array(sig.prefix(63)), for: message))
        #expect(!Ed25519.PrivateKey().publicKey.isValidSignature(key.signature(for: message), for: message))
    }

    @Test func keyLengthsAreChecked() {
        #expect(throws: CryptoError(.invalidKeyLength)) {
            try Ed25519.PrivateKey(seed: SecureBytes([UInt8](repeating: 1, count: 31)))
        }
        #expect(throws: CryptoError(.invalidKeyLength)) { try Ed25519.PublicKey([UInt8](repeating: 1, count: 33)) }
    }
}
