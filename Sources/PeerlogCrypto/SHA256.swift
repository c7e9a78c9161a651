#if SwiftCrypto || PostgreSQL
internal import Crypto
#else
import CSodium
#endif

/// SHA-256 (FIPS 180-4), through swift-crypto: BoringSSL uses the CPU's SHA extensions where it
/// has them (1.9 GB/s on the development machine against 0.4 for libsodium's portable code), which
/// matters for blob chunk hashes (docs/PROTOCOL.md §24.1) and every receipt's CID. A build without
/// the `SwiftCrypto` and `PostgreSQL` traits (the fuzz targets) uses libsodium's: the same digests.
public final class SHA256: HashFunction {
    /// 32 bytes of output.
    public static let digestLength = 32
    /// 64-byte blocks.
    public static let blockLength = 64
    #if SwiftCrypto || PostgreSQL
    private var hasher = Crypto.SHA256()
    /// A hasher with no input yet.
    public init() {}
    /// Feeds more input, of any length.
    public func update(_ bytes: UnsafeRawBufferPointer) { hasher.update(bufferPointer: bytes) }
    /// The 32-byte digest. Ends the hasher: call neither `update` nor `finalize` afterwards.
    public func finalize() -> [UInt8] { Array(hasher.finalize()) }
    #else
    private var state = crypto_hash_sha256_state()
    /// A hasher with no input yet.
    public init() { crypto_hash_sha256_init(&state) }
    /// Feeds more input, of any length.
    public func update(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress else { return }
        crypto_hash_sha256_update(&state, base.assumingMemoryBound(to: UInt8.self), UInt64(bytes.count))
    }
    /// The 32-byte digest. Ends the hasher: call neither `update` nor `finalize` afterwards.
    public func finalize() -> [UInt8] {
        var out = [UInt8](repeating: 0, count: Self.digestLength)
        crypto_hash_sha256_final(&state, &out)
        return out
    }
    #endif
}
