import CSodium

/// A streaming hash function. Hashers are single-use: `finalize()` ends them.
public protocol HashFunction {
    /// Output length in bytes.
    static var digestLength: Int { get }
    /// Internal block length in bytes (what HMAC pads keys to).
    static var blockLength: Int { get }
    /// A hasher with no input yet.
    init()
    /// Feeds more input, of any length.
    func update(_ bytes: UnsafeRawBufferPointer)
    /// The digest. Ends the hasher: call neither `update` nor `finalize` afterwards.
    func finalize() -> [UInt8]
}

extension HashFunction {
    /// Feeds more input, of any length.
    public func update(_ bytes: [UInt8]) { bytes.withUnsafeBytes { update($0) } }

    /// One-shot digest of `bytes`.
    public static func hash(_ bytes: [UInt8]) -> [UInt8] {
        let h = Self()
        h.update(bytes)
        return h.finalize()
    }
}

/// SHA-512 (FIPS 180-4).
public final class SHA512: HashFunction {
    /// 64 bytes of output.
    public static let digestLength = 64
    /// 128-byte blocks.
    public static let blockLength = 128
    private var state = crypto_hash_sha512_state()
    /// A hasher with no input yet.
    public init() {
        Sodium.ensureInitialized()
        crypto_hash_sha512_init(&state)
    }
    /// Feeds more input, of any length.
    public func update(_ bytes: UnsafeRawBufferPointer) {
        _ = crypto_hash_sha512_update(
            &state, bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt64(bytes.count))
    }
    /// The 64-byte digest. Ends the hasher: call neither `update` nor `finalize` afterwards.
    public func finalize() -> [UInt8] {
        var out = [UInt8](repeating: 0, count: Self.digestLength)
        crypto_hash_sha512_final(&state, &out)
        return out
    }
}

/// BLAKE2b-512, unkeyed (RFC 7693). Use `BLAKE2b.hash(_:length:key:)` for other lengths or a key.
public final class BLAKE2b: HashFunction {
    /// 64 bytes of output from `init()`: BLAKE2b-512, the hash of Peerlog's Noise protocol
    /// (docs/PROTOCOL.md §14.1).
    public static let digestLength = 64
    /// 128-byte blocks, what HMAC-BLAKE2b pads keys to (docs/PROTOCOL.md §14.1).
    public static let blockLength = 128
    // Swift cannot import the 64-byte-aligned state struct, so it is allocated raw.
    private let state: UnsafeMutableRawPointer
    private let outputLength: Int

    /// Unkeyed BLAKE2b-512.
    public convenience init() { try! self.init(length: 64, key: nil) }

    /// A hasher with `length` (1...64) output bytes and an optional key (up to 64 bytes).
    public init(length: Int, key: SecureBytes?) throws {
        Sodium.ensureInitialized()
        guard (1...64).contains(length) else {
            throw CryptoError(.invalidParameter, "BLAKE2b output length must be 1...64")
        }
        guard (key?.count ?? 0) <= 64 else {
            throw CryptoError(.invalidKeyLength, "BLAKE2b key must be at most 64 bytes")
        }
        outputLength = length
        state = .allocate(byteCount: crypto_generichash_blake2b_statebytes(), alignment: 64)
        let st = OpaquePointer(state)
        if let key {
            key.withUnsafeBytes { k in
                _ = crypto_generichash_blake2b_init(st, k.bindMemory(to: UInt8.self).baseAddress, k.count, length)
            }
        } else {
            _ = crypto_generichash_blake2b_init(st, nil, 0, length)
        }
    }

    deinit {
        sodium_memzero(state, crypto_generichash_blake2b_statebytes())
        state.deallocate()
    }

    /// Feeds more input, of any length.
    public func update(_ bytes: UnsafeRawBufferPointer) {
        _ = crypto_generichash_blake2b_update(
            OpaquePointer(state), bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt64(bytes.count))
    }

    /// The digest, of the length chosen at init (64 bytes from `init()`). Ends the hasher: call
    /// neither `update` nor `finalize` afterwards.
    public func finalize() -> [UInt8] {
        var out = [UInt8](repeating: 0, count: outputLength)
        _ = crypto_generichash_blake2b_final(OpaquePointer(state), &out, outputLength)
        return out
    }

    /// One-shot BLAKE2b with a chosen output length and optional key.
    public static func hash(_ bytes: [UInt8], length: Int, key: SecureBytes? = nil) throws -> [UInt8] {
        let h = try BLAKE2b(length: length, key: key)
        h.update(bytes)
        return h.finalize()
    }
}
