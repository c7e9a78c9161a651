import CSodium

/// X25519 Diffie-Hellman (RFC 7748), via libsodium.
public enum X25519 {
    public static let keyLength = 32

    public struct PrivateKey: Sendable {
        /// The 32-byte scalar. Secret.
        public let rawRepresentation: SecureBytes
        public let publicKey: PublicKey

        /// A fresh random key.
        public init() { try! self.init(SecureBytes(randomCount: keyLength)) }

        public init(_ scalar: SecureBytes) throws {
            Sodium.ensureInitialized()
            guard scalar.count == keyLength else { throw CryptoError(.invalidKeyLength, "X25519 private key must be 32 bytes") }
            var pk = [UInt8](repeating: 0, count: keyLength)
            scalar.withUnsafeBytes { s in _ = crypto_scalarmult_base(&pk, s.bindMemory(to: UInt8.self).baseAddress!) }
            rawRepresentation = scalar
            publicKey = try PublicKey(pk)
        }

        /// DH(self, peer). Fails for low-order peer keys, whose result is all zero.
        public func sharedSecret(with peer: PublicKey) throws -> SecureBytes {
            var out = [UInt8](repeating: 0, count: keyLength)
            defer { SecureBytes.zero(&out) }
            let rc = rawRepresentation.withUnsafeBytes { s in
                crypto_scalarmult(&out, s.bindMemory(to: UInt8.self).baseAddress!, peer.rawRepresentation)
            }
            // libsodium returns -1 when the result is all zero; check again to be explicit.
            guard rc == 0, sodium_is_zero(out, out.count) == 0 else {
                throw CryptoError(.weakSharedSecret, "peer public key has low order")
            }
            return SecureBytes(out)
        }
    }

    public struct PublicKey: Hashable, Sendable {
        public let rawRepresentation: [UInt8]
        public init(_ bytes: [UInt8]) throws {
            guard bytes.count == keyLength else { throw CryptoError(.invalidKeyLength, "X25519 public key must be 32 bytes, got \(bytes.count)") }
            rawRepresentation = bytes
        }
    }
}
