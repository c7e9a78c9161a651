import CSodium

/// ChaCha20-Poly1305 IETF (RFC 8439): 32-byte key, 12-byte nonce, 16-byte tag appended.
public enum ChaChaPoly {
    /// Key length in bytes (32).
    public static let keyLength = 32
    /// Nonce length in bytes (12). A nonce must never repeat under one key; the channel uses
    /// 4 zero bytes ‖ a 64-bit little-endian counter (docs/PROTOCOL.md §14.1).
    public static let nonceLength = 12
    /// Length in bytes of the Poly1305 tag appended to every ciphertext (16).
    public static let tagLength = 16

    /// Returns ciphertext ‖ tag.
    public static func seal(
        _ plaintext: [UInt8], key: SecureBytes, nonce: [UInt8], authenticating ad: [UInt8] = []
    ) throws -> [UInt8] {
        try sealed(
            plaintext, key: key, nonce: nonce, nonceLength: nonceLength, ad: ad,
            crypto_aead_chacha20poly1305_ietf_encrypt)
    }

    /// Verifies the tag and returns the plaintext, or throws `authenticationFailure`.
    public static func open(
        _ sealed: [UInt8], key: SecureBytes, nonce: [UInt8], authenticating ad: [UInt8] = []
    ) throws -> [UInt8] {
        try opened(
            sealed, key: key, nonce: nonce, nonceLength: nonceLength, ad: ad, crypto_aead_chacha20poly1305_ietf_decrypt)
    }

    /// Encrypts `buffer[range]` in place and writes the tag into the 16 bytes after it (the
    /// buffer must extend that far): bulk transport without extra copies.
    public static func sealInPlace(_ buffer: inout [UInt8], range: Range<Int>, key: SecureBytes, nonce: [UInt8]) throws
    {
        try check(key: key, nonce: nonce, length: nonceLength)
        guard range.lowerBound >= 0, range.upperBound + tagLength <= buffer.count else {
            throw CryptoError(.invalidParameter, "no room for the tag")
        }
        var outLen: UInt64 = 0
        buffer.withUnsafeMutableBufferPointer { b in
            let p = b.baseAddress! + range.lowerBound
            key.withUnsafeBytes { k in
                _ = crypto_aead_chacha20poly1305_ietf_encrypt(
                    p, &outLen, p, UInt64(range.count), nil, 0, nil, nonce, k.bindMemory(to: UInt8.self).baseAddress!)
            }
        }
    }

    /// Verifies and decrypts `buffer[range]` (ciphertext ‖ tag) in place; the plaintext is the
    /// first `range.count - 16` bytes of the range. On failure libsodium zeroes the plaintext
    /// part, so keep a copy if the ciphertext may be needed again.
    public static func openInPlace(_ buffer: inout [UInt8], range: Range<Int>, key: SecureBytes, nonce: [UInt8]) throws
    {
        try check(key: key, nonce: nonce, length: nonceLength)
        guard range.lowerBound >= 0, range.upperBound <= buffer.count, range.count >= tagLength else {
            throw CryptoError(.authenticationFailure, "ciphertext shorter than the tag")
        }
        var outLen: UInt64 = 0
        let rc = buffer.withUnsafeMutableBufferPointer { b in
            let p = b.baseAddress! + range.lowerBound
            return key.withUnsafeBytes { k in
                crypto_aead_chacha20poly1305_ietf_decrypt(
                    p, &outLen, nil, p, UInt64(range.count), nil, 0, nonce, k.bindMemory(to: UInt8.self).baseAddress!)
            }
        }
        guard rc == 0 else { throw CryptoError(.authenticationFailure) }
    }

    /// libsodium's IETF AEAD encrypt function; ChaCha20 and XChaCha20 share its signature.
    typealias SodiumEncrypt = (
        UnsafeMutablePointer<UInt8>, UnsafeMutablePointer<UInt64>?, UnsafePointer<UInt8>?, UInt64,
        UnsafePointer<UInt8>?, UInt64, UnsafePointer<UInt8>?, UnsafePointer<UInt8>, UnsafePointer<UInt8>
    ) -> Int32
    /// libsodium's IETF AEAD decrypt function, likewise.
    typealias SodiumDecrypt = (
        UnsafeMutablePointer<UInt8>?, UnsafeMutablePointer<UInt64>?, UnsafeMutablePointer<UInt8>?,
        UnsafePointer<UInt8>, UInt64, UnsafePointer<UInt8>?, UInt64, UnsafePointer<UInt8>, UnsafePointer<UInt8>
    ) -> Int32

    /// ciphertext ‖ tag of `plaintext` under `encrypt`, with the lengths checked.
    static func sealed(
        _ plaintext: [UInt8], key: SecureBytes, nonce: [UInt8], nonceLength: Int, ad: [UInt8],
        _ encrypt: SodiumEncrypt
    ) throws -> [UInt8] {
        try check(key: key, nonce: nonce, length: nonceLength)
        var out = [UInt8](repeating: 0, count: plaintext.count + tagLength)
        var outLen: UInt64 = 0
        key.withUnsafeBytes { k in
            _ = encrypt(
                &out, &outLen, plaintext, UInt64(plaintext.count), ad, UInt64(ad.count), nil, nonce,
                k.bindMemory(to: UInt8.self).baseAddress!)
        }
        return out
    }

    /// The plaintext of `sealed` under `decrypt`, or `authenticationFailure`.
    static func opened(
        _ sealed: [UInt8], key: SecureBytes, nonce: [UInt8], nonceLength: Int, ad: [UInt8],
        _ decrypt: SodiumDecrypt
    ) throws -> [UInt8] {
        try check(key: key, nonce: nonce, length: nonceLength)
        guard sealed.count >= tagLength else {
            throw CryptoError(.authenticationFailure, "ciphertext shorter than the tag")
        }
        var out = [UInt8](repeating: 0, count: sealed.count - tagLength)
        var outLen: UInt64 = 0
        let rc = key.withUnsafeBytes { k in
            decrypt(
                &out, &outLen, nil, sealed, UInt64(sealed.count), ad, UInt64(ad.count), nonce,
                k.bindMemory(to: UInt8.self).baseAddress!)
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
    /// Key length in bytes (32).
    public static let keyLength = 32
    /// Nonce length in bytes (24): long enough to choose at random for every message.
    public static let nonceLength = 24
    /// Length in bytes of the Poly1305 tag appended to every ciphertext (16).
    public static let tagLength = 16

    /// Encrypts `plaintext`, authenticating it together with `ad`; returns ciphertext ‖ 16-byte tag.
    /// Throws a `CryptoError` unless the key is 32 bytes and the nonce 24.
    public static func seal(
        _ plaintext: [UInt8], key: SecureBytes, nonce: [UInt8], authenticating ad: [UInt8] = []
    ) throws -> [UInt8] {
        try ChaChaPoly.sealed(
            plaintext, key: key, nonce: nonce, nonceLength: nonceLength, ad: ad,
            crypto_aead_xchacha20poly1305_ietf_encrypt)
    }

    /// Verifies the tag over the ciphertext and `ad`, then returns the plaintext. Throws a
    /// `CryptoError` when the key or nonce has the wrong length, or (authentication failure) when
    /// `sealed` is shorter than the tag or was not sealed with this key, nonce and `ad`.
    public static func open(
        _ sealed: [UInt8], key: SecureBytes, nonce: [UInt8], authenticating ad: [UInt8] = []
    ) throws -> [UInt8] {
        try ChaChaPoly.opened(
            sealed, key: key, nonce: nonce, nonceLength: nonceLength, ad: ad, crypto_aead_xchacha20poly1305_ietf_decrypt
        )
    }
}
