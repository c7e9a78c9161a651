import CSodium

/// X25519 Diffie-Hellman (RFC 7748), via libsodium.
public enum X25519 {
    /// Length in bytes of private and public keys (32).
    public static let keyLength = 32

    /// A Diffie-Hellman private key: a device's Noise static key (`noise.key`, docs/PROTOCOL.md §7)
    /// or a connection's ephemeral key.
    public struct PrivateKey: Sendable {
        /// The 32-byte scalar. Secret.
        public let rawRepresentation: SecureBytes
        /// The matching public key (the scalar times the base point).
        public let publicKey: PublicKey

        /// A fresh random key.
        public init() { try! self.init(SecureBytes(randomCount: keyLength)) }

        /// The key for a 32-byte scalar; any 32 bytes will do (X25519 clamps the scalar, RFC 7748 §5).
        /// Throws a `CryptoError` for any other length.
        public init(_ scalar: SecureBytes) throws {
            Sodium.ensureInitialized()
            guard scalar.count == keyLength else {
                throw CryptoError(.invalidKeyLength, "X25519 private key must be 32 bytes")
            }
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

    /// A Diffie-Hellman public key, as sent in Noise handshakes and certified in the `noise` field of
    /// a device certificate (docs/PROTOCOL.md §3.1, §14.1).
    public struct PublicKey: Hashable, Sendable {
        /// The 32 key bytes (RFC 7748 u-coordinate, little-endian).
        public let rawRepresentation: [UInt8]
        /// Wraps 32 bytes as a public key; throws a `CryptoError` for any other length. Low-order keys are
        /// accepted here and refused by `PrivateKey.sharedSecret(with:)`.
        public init(_ bytes: [UInt8]) throws {
            guard bytes.count == keyLength else {
                throw CryptoError(.invalidKeyLength, "X25519 public key must be 32 bytes, got \(bytes.count)")
            }
            rawRepresentation = bytes
        }
    }
}
