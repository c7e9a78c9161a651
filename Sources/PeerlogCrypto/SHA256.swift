internal import Crypto

/// SHA-256 (FIPS 180-4), through swift-crypto: BoringSSL uses the CPU's SHA extensions where it
/// has them (1.9 GB/s on the development machine against 0.4 for libsodium's portable code), which
/// matters for blob chunk hashes (docs/PROTOCOL.md §24.1) and every receipt's CID.
public final class SHA256: HashFunction {
    /// 32 bytes of output.
    public static let digestLength = 32
    /// 64-byte blocks.
    public static let blockLength = 64
    private var hasher = Crypto.SHA256()
    /// A hasher with no input yet.
    public init() {}
    /// Feeds more input, of any length.
    public func update(_ bytes: UnsafeRawBufferPointer) { hasher.update(bufferPointer: bytes) }
    /// The 32-byte digest. Ends the hasher: call neither `update` nor `finalize` afterwards.
    public func finalize() -> [UInt8] { Array(hasher.finalize()) }
}
