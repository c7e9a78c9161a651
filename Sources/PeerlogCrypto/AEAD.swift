import CSodium

/// ChaCha20-Poly1305 IETF (RFC 8439): 32-byte key, 12-byte nonce, 16-byte tag appended.
public enum ChaChaPoly {
    public static let keyLength = 32
    public static let nonceLength = 12
    public static let tagLength = 16

    /// Returns ciphertext ‖ tag.
    public static func seal(_ plaintext: [UInt8], key: SecureBytes, nonce: [UInt8], authenticating ad: [UInt8] = []) throws -> [UInt8] {
        try check(key: key, nonce: nonce, length: nonceLength)
        var out = [UInt8](repeating: 0, count: plaintext.count + tagLength)
        var outLen: UInt64 = 0
        key.withUnsafeBytes { k in
            _ = crypto_aead_chacha20poly1305_ietf_encrypt(&out, &outLen, plaintext, UInt64(plaintext.count), ad, UInt64(ad.count), nil, nonce, k.bindMemory(to: UInt8.self).baseAddress!)
        }
        return out
    }

    /// Verifies the tag and returns the plaintext, or throws `authenticationFailure`.
    public static func open(_ sealed: [UInt8], key: SecureBytes, nonce: [UInt8], authenticating ad: [UInt8] = []) throws -> [UInt8] {
        try check(key: key, nonce: nonce, length: nonceLength)
        guard sealed.count >= tagLength else { throw CryptoError(.authenticationFailure, "ciphertext shorter than the tag") }
        var out = [UInt8](repeating: 0, count: sealed.count - tagLength)
        var outLen: UInt64 = 0
        let rc = key.withUnsafeBytes { k in
            crypto_aead_chacha20poly1305_ietf_decrypt(&out, &outLen, nil, sealed, UInt64(sealed.count), ad, UInt64(ad.count), nonce, k.bindMemory(to: UInt8.self).baseAddress!)
        }
        guard rc == 0 else { throw CryptoError(.authenticationFailure) }
        return out
    }

    static func check(key: SecureBytes, nonce: [UInt8], length: Int) throws {
        Sodium.ensureInitialized()
        guard key.count == keyLength else { throw CryptoError(.invalidKeyLength, "AEAD key must be 32 bytes") }
        guard nonce.count == length else { throw CryptoError(.invalidNonceLength, "nonce must be \(length) bytes") }
    }
}

/// XChaCha20-Poly1305 IETF: 32-byte key, 24-byte nonce (safe to choose at random), 16-byte tag appended.
public enum XChaChaPoly {
    public static let keyLength = 32
    public static let nonceLength = 24
    public static let tagLength = 16

    public static func seal(_ plaintext: [UInt8], key: SecureBytes, nonce: [UInt8], authenticating ad: [UInt8] = []) throws -> [UInt8] {
        try ChaChaPoly.check(key: key, nonce: nonce, length: nonceLength)
        var out = [UInt8](repeating: 0, count: plaintext.count + tagLength)
        var outLen: UInt64 = 0
        key.withUnsafeBytes { k in
            _ = crypto_aead_xchacha20poly1305_ietf_encrypt(&out, &outLen, plaintext, UInt64(plaintext.count), ad, UInt64(ad.count), nil, nonce, k.bindMemory(to: UInt8.self).baseAddress!)
        }
        return out
    }

    public static func open(_ sealed: [UInt8], key: SecureBytes, nonce: [UInt8], authenticating ad: [UInt8] = []) throws -> [UInt8] {
        try ChaChaPoly.check(key: key, nonce: nonce, length: nonceLength)
        guard sealed.count >= tagLength else { throw CryptoError(.authenticationFailure, "ciphertext shorter than the tag") }
        var out = [UInt8](repeating: 0, count: sealed.count - tagLength)
        var outLen: UInt64 = 0
        let rc = key.withUnsafeBytes { k in
            crypto_aead_xchacha20poly1305_ietf_decrypt(&out, &outLen, nil, sealed, UInt64(sealed.count), ad, UInt64(ad.count), nonce, k.bindMemory(to: UInt8.self).baseAddress!)
        }
        guard rc == 0 else { throw CryptoError(.authenticationFailure) }
        return out
    }
}
