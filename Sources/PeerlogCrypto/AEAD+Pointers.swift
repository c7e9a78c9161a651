import CSodium

// Pointer forms of ChaCha20-Poly1305 for the channel's bulk path: they seal into and open out
// of caller-owned memory (a reused frame buffer, a NIO ByteBuffer), so a 64 KiB frame costs
// no allocation and no copy beyond the cipher's own pass.
extension ChaChaPoly {
    /// The 12-byte IETF nonce 0⁴ ‖ little-endian `counter` (Noise §12.3), on the stack.
    @inline(__always)
    static func withNonce<R>(_ counter: UInt64, _ body: (UnsafePointer<UInt8>) throws -> R) rethrows -> R {
        var nonce: (UInt32, UInt32, UInt32) = (
            0, UInt32(truncatingIfNeeded: counter).littleEndian, UInt32(truncatingIfNeeded: counter >> 32).littleEndian
        )
        return try withUnsafeBytes(of: &nonce) { try body($0.bindMemory(to: UInt8.self).baseAddress!) }
    }

    /// Encrypts `count` bytes at `text` in place and writes the 16-byte tag right after them.
    public static func sealInPlace(
        _ text: UnsafeMutableRawPointer, count: Int, key: SecureBytes, nonce counter: UInt64
    ) throws {
        Sodium.ensureInitialized()
        guard key.count == keyLength else { throw CryptoError(.invalidKeyLength, "AEAD key must be 32 bytes") }
        let p = text.assumingMemoryBound(to: UInt8.self)
        var outLen: UInt64 = 0
        withNonce(counter) { n in
            key.withUnsafeBytes { k in
                _ = crypto_aead_chacha20poly1305_ietf_encrypt(
                    p, &outLen, p, UInt64(count), nil, 0, nil, n, k.bindMemory(to: UInt8.self).baseAddress!)
            }
        }
    }

    /// Verifies `sealed` (ciphertext ‖ tag) and writes the `sealed.count - 16` plaintext bytes
    /// to `plaintext` (which may equal the ciphertext's start, not overlap it otherwise).
    public static func open(
        _ sealed: UnsafeRawBufferPointer, into plaintext: UnsafeMutableRawPointer, key: SecureBytes,
        nonce counter: UInt64
    ) throws {
        Sodium.ensureInitialized()
        guard key.count == keyLength else { throw CryptoError(.invalidKeyLength, "AEAD key must be 32 bytes") }
        guard sealed.count >= tagLength, let c = sealed.baseAddress else {
            throw CryptoError(.authenticationFailure, "ciphertext shorter than the tag")
        }
        var outLen: UInt64 = 0
        let rc = withNonce(counter) { n in
            key.withUnsafeBytes { k in
                crypto_aead_chacha20poly1305_ietf_decrypt(
                    plaintext.assumingMemoryBound(to: UInt8.self), &outLen, nil, c.assumingMemoryBound(to: UInt8.self),
                    UInt64(sealed.count), nil, 0, n, k.bindMemory(to: UInt8.self).baseAddress!)
            }
        }
        guard rc == 0 else { throw CryptoError(.authenticationFailure) }
    }
}
