import PeerlogCrypto
import PeerlogTestSupport
import Testing

struct X25519Tests {
    // RFC 7748 §6.1.
    @Test func rfc7748DiffieHellman() throws {
        let alice = try X25519.PrivateKey(
            SecureBytes(TestSupport.bytes(hex: "77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a")))
        let bob = try X25519.PrivateKey(
            SecureBytes(TestSupport.bytes(hex: "5dab087e624a8a4b79e17f8b83800ee66f3bb1292618b6fd1c2f8b27ff88e0eb")))
        #expect(
            TestSupport.hex(alice.publicKey.rawRepresentation)
                == "8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a")
        #expect(
            TestSupport.hex(bob.publicKey.rawRepresentation)
                == "de9edb7d7b7dc1b4d35b61c2ece435373f8343c85b78674dadfc7e146f882b4f")
        let shared = "4a5d9d5ba4ce2de1728e3bf480350f25e07e21c947d19e3376f09b3c1e161742"
        #expect(TestSupport.hex(try alice.sharedSecret(with: bob.publicKey).copyBytes()) == shared)
        #expect(TestSupport.hex(try bob.sharedSecret(with: alice.publicKey).copyBytes()) == shared)
    }

    @Test(
        "low-order points give an all-zero secret and are refused",
        arguments: [
            "0000000000000000000000000000000000000000000000000000000000000000",
            "0100000000000000000000000000000000000000000000000000000000000000",
            "e0eb7a7c3b41b8ae1656e3faf19fc46ada098deb9c32b1fd866205165f49b800",
        ])
    func lowOrderPointsRefused(point: String) throws {
        let key = X25519.PrivateKey()
        #expect(throws: CryptoError(.weakSharedSecret)) {
            try key.sharedSecret(with: X25519.PublicKey(TestSupport.bytes(hex: point)))
        }
    }
}
