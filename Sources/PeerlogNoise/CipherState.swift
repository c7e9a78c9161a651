import PeerlogCrypto

/// A CipherState (spec §5.1): ChaChaPoly key and 64-bit nonce. A failed decrypt leaves the
/// nonce unchanged; the nonce 2^64-1 is reserved for rekey and never used for messages.
public struct NoiseCipherState: Sendable {
    static let tagLength = ChaChaPoly.tagLength
    private var key: SecureBytes?
    /// The nonce the next ENCRYPT or DECRYPT with a key uses; each success adds 1 (transport nonces
    /// start at 0, docs/PROTOCOL.md §14.3). REKEY does not reset it.
    public private(set) var nonce: UInt64

    /// An empty CipherState: encrypt and decrypt pass data through (before the first MixKey).
    init() {
        key = nil
        nonce = 0
    }

    init(key: SecureBytes) {
        self.key = key
        nonce = 0
    }

    /// A keyed CipherState at a chosen nonce, for tests (e.g. the nonce limit).
    public init(key: [UInt8], nonce: UInt64 = 0) throws {
        guard key.count == ChaChaPoly.keyLength else { throw NoiseError(.missingKey, "cipher key must be 32 bytes") }
        self.key = SecureBytes(key)
        self.nonce = nonce
    }

    var hasKey: Bool { key != nil }

    /// A copy of the key, for opt-in key logs only (`PEERLOG_KEYLOGFILE`): anyone holding it
    /// can read the traffic.
    public func exportKeyForKeyLog() -> [UInt8]? { key?.copyBytes() }

    /// ENCRYPT (spec §5.1): ciphertext ‖ 16-byte tag, authenticating `ad`; advances the nonce.
    /// Without a key it returns `plaintext` as is. Throws a `NoiseError` when the result would
    /// exceed 65535 bytes or the nonce is exhausted.
    public mutating func encrypt(ad: [UInt8] = [], _ plaintext: [UInt8]) throws -> [UInt8] {
        guard let key else {
            guard plaintext.count <= noiseMaxMessageLength else { throw NoiseError(.messageTooLong) }
            return plaintext
        }
        guard plaintext.count + Self.tagLength <= noiseMaxMessageLength else { throw NoiseError(.messageTooLong) }
        guard nonce < UInt64.max else { throw NoiseError(.nonceExhausted) }
        let out = try ChaChaPoly.seal(plaintext, key: key, nonce: Self.nonceBytes(nonce), authenticating: ad)
        nonce += 1
        return out
    }

    /// DECRYPT (spec §5.1): checks the tag over the ciphertext and `ad` and returns the plaintext,
    /// advancing the nonce only on success. Without a key it returns `ciphertext` as is. Throws a
    /// `NoiseError` when the input exceeds 65535 bytes, the nonce is exhausted or the tag does not
    /// verify.
    public mutating func decrypt(ad: [UInt8] = [], _ ciphertext: [UInt8]) throws -> [UInt8] {
        guard ciphertext.count <= noiseMaxMessageLength else { throw NoiseError(.messageTooLong) }
        guard let key else { return ciphertext }
        guard nonce < UInt64.max else { throw NoiseError(.nonceExhausted) }
        let plaintext: [UInt8]
        do {
            plaintext = try ChaChaPoly.open(ciphertext, key: key, nonce: Self.nonceBytes(nonce), authenticating: ad)
        } catch {
            throw NoiseError(.decryptFailed)
        }
        nonce += 1
        return plaintext
    }

    /// ENCRYPT with empty associated data, in place: `buffer[range]` becomes ciphertext and the
    /// tag goes into the 16 bytes after it. Same nonce rules as `encrypt`.
    public mutating func encrypt(inPlace buffer: inout [UInt8], range: Range<Int>) throws {
        guard let key else { throw NoiseError(.missingKey, "in-place encryption needs a key") }
        guard range.count + Self.tagLength <= noiseMaxMessageLength else { throw NoiseError(.messageTooLong) }
        guard nonce < UInt64.max else { throw NoiseError(.nonceExhausted) }
        try ChaChaPoly.sealInPlace(&buffer, range: range, key: key, nonce: Self.nonceBytes(nonce))
        nonce += 1
    }

    /// DECRYPT with empty associated data, in place: on success the plaintext is the first
    /// `range.count - 16` bytes of the range. A failure leaves the nonce unchanged (the buffer
    /// is zeroed, so callers that might retry keep their own copy).
    public mutating func decrypt(inPlace buffer: inout [UInt8], range: Range<Int>) throws {
        guard let key else { throw NoiseError(.missingKey, "in-place decryption needs a key") }
        guard range.count <= noiseMaxMessageLength else { throw NoiseError(.messageTooLong) }
        guard nonce < UInt64.max else { throw NoiseError(.nonceExhausted) }
        do { try ChaChaPoly.openInPlace(&buffer, range: range, key: key, nonce: Self.nonceBytes(nonce)) } catch {
            throw NoiseError(.decryptFailed)
        }
        nonce += 1
    }

    /// ENCRYPT with empty associated data over `count` bytes at `text`, in place, the tag
    /// written into the 16 bytes after them: the pointer form of `encrypt(inPlace:range:)`.
    public mutating func encrypt(inPlace text: UnsafeMutableRawPointer, count: Int) throws {
        guard let key else { throw NoiseError(.missingKey, "in-place encryption needs a key") }
        guard count + Self.tagLength <= noiseMaxMessageLength else { throw NoiseError(.messageTooLong) }
        guard nonce < UInt64.max else { throw NoiseError(.nonceExhausted) }
        try ChaChaPoly.sealInPlace(text, count: count, key: key, nonce: nonce)
        nonce += 1
    }

    /// DECRYPT with empty associated data from `sealed` into `plaintext` (`sealed.count - 16`
    /// bytes; the ciphertext is left as it was). A failure leaves the nonce unchanged.
    public mutating func decrypt(_ sealed: UnsafeRawBufferPointer, into plaintext: UnsafeMutableRawPointer) throws {
        guard let key else { throw NoiseError(.missingKey, "decryption into a buffer needs a key") }
        guard sealed.count <= noiseMaxMessageLength else { throw NoiseError(.messageTooLong) }
        guard nonce < UInt64.max else { throw NoiseError(.nonceExhausted) }
        do { try ChaChaPoly.open(sealed, into: plaintext, key: key, nonce: nonce) } catch {
            throw NoiseError(.decryptFailed)
        }
        nonce += 1
    }

    /// REKEY (spec §4.2 and §11.3): k = first 32 bytes of ENCRYPT(k, 2^64-1, empty ad, 32 zeros).
    /// The nonce is not reset.
    public mutating func rekey() {
        guard let key else { return }
        var sealed = try! ChaChaPoly.seal(
            [UInt8](repeating: 0, count: 32), key: key, nonce: Self.nonceBytes(UInt64.max))
        self.key = SecureBytes(sealed.prefix(32))
        SecureBytes.zero(&sealed)
    }

    /// 4 zero bytes, then the nonce little-endian (spec §12.3).
    static func nonceBytes(_ n: UInt64) -> [UInt8] {
        [0, 0, 0, 0] + (0..<8).map { UInt8(truncatingIfNeeded: n >> (8 * $0)) }
    }
}
