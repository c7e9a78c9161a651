import CSodium

/// Ed25519 signatures (RFC 8032), via libsodium.
public enum Ed25519 {
    /// Length in bytes of a private key's seed (32), the form kept in key files (docs/PROTOCOL.md §7).
    public static let seedLength = 32
    /// Length in bytes of a public key (32); identity and device ids are these bytes (docs/PROTOCOL.md §2).
    public static let publicKeyLength = 32
    /// Length in bytes of a signature (64), the `sig` of every signed container (docs/PROTOCOL.md §3).
    public static let signatureLength = 64

    /// A signing key, stored as its 32-byte seed.
    public struct PrivateKey: Sendable {
        /// The RFC 8032 private key (seed). Secret.
        public let seed: SecureBytes
        // libsodium's 64-byte secret key (seed ‖ public key), kept to avoid re-deriving per signature.
        private let expanded: SecureBytes
        /// The matching public key, derived from the seed.
        public let publicKey: PublicKey

        /// A fresh random key.
        public init() {
            let seed = SecureBytes(randomCount: seedLength)
            try! self.init(seed: seed)
        }

        /// The key for a given 32-byte seed.
        public init(seed: SecureBytes) throws {
            Sodium.ensureInitialized()
            guard seed.count == seedLength else {
                throw CryptoError(.invalidKeyLength, "Ed25519 seed must be 32 bytes")
            }
            var pk = [UInt8](repeating: 0, count: publicKeyLength)
            var sk = [UInt8](repeating: 0, count: 64)
            seed.withUnsafeBytes { s in
                _ = crypto_sign_seed_keypair(&pk, &sk, s.bindMemory(to: UInt8.self).baseAddress!)
            }
            self.seed = seed
            self.expanded = SecureBytes(sk)
            SecureBytes.zero(&sk)
            self.publicKey = try PublicKey(pk)
        }

        /// Signs `message` (deterministic, RFC 8032).
        public func signature(for message: some Collection<UInt8>) -> [UInt8] {
            var sig = [UInt8](repeating: 0, count: signatureLength)
            let msg = Array(message)
            expanded.withUnsafeBytes { sk in
                _ = crypto_sign_detached(&sig, nil, msg, UInt64(msg.count), sk.bindMemory(to: UInt8.self).baseAddress!)
            }
            return sig
        }
    }

    /// A verification key.
    public struct PublicKey: Hashable, Sendable, CustomStringConvertible {
        /// The 32 key bytes.
        public let rawRepresentation: [UInt8]

        /// Wraps 32 bytes as a public key; throws a `CryptoError` for any other length. The point is not
        /// checked here: `isValidSignature(_:for:)` refuses small-order keys.
        public init(_ bytes: [UInt8]) throws {
            guard bytes.count == publicKeyLength else {
                throw CryptoError(.invalidKeyLength, "Ed25519 public key must be 32 bytes, got \(bytes.count)")
            }
            rawRepresentation = bytes
        }

        /// The 32 bytes in one call (not one byte at a time, as the synthesized conformance
        /// did): device and identity ids key many of the engine's sets and dictionaries.
        public func hash(into hasher: inout Hasher) {
            rawRepresentation.withUnsafeBytes { hasher.combine(bytes: $0) }
        }

        /// True when `signature` is a valid signature of `message` by this key.
        /// Rejects non-canonical signatures and small-order keys (libsodium's strict checks).
        public func isValidSignature(_ signature: [UInt8], for message: some Collection<UInt8>) -> Bool {
            guard signature.count == signatureLength else { return false }
            Sodium.ensureInitialized()
            let msg = Array(message)
            return crypto_sign_verify_detached(signature, msg, UInt64(msg.count), rawRepresentation) == 0
        }

        /// `Ed25519.PublicKey(<64 hex digits>)`, for logs.
        public var description: String { "Ed25519.PublicKey(\(hexString(rawRepresentation)))" }
    }
}

/// Lower-case hex of bytes.
public func hexString(_ bytes: some Sequence<UInt8>) -> String {
    let digits = Array("0123456789abcdef".utf8)
    var out = [UInt8]()
    for b in bytes {
        out.append(digits[Int(b >> 4)])
        out.append(digits[Int(b & 0x0f)])
    }
    return String(decoding: out, as: UTF8.self)
}

/// Bytes from hex (either case); nil when malformed.
public func bytes(fromHex hex: some StringProtocol) -> [UInt8]? {
    let chars = Array(hex.utf8)
    guard chars.count % 2 == 0 else { return nil }
    func nibble(_ c: UInt8) -> UInt8? {
        switch c {
        case 0x30...0x39: c - 0x30
        case 0x61...0x66: c - 0x61 + 10
        case 0x41...0x46: c - 0x41 + 10
        default: nil
        }
    }
    var out = [UInt8]()
    out.reserveCapacity(chars.count / 2)
    var i = 0
    while i < chars.count {
        guard let h = nibble(chars[i]), let l = nibble(chars[i + 1]) else { return nil }
        out.append(h << 4 | l)
        i += 2
    }
    return out
}
