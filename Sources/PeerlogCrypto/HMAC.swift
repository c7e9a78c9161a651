/// HMAC (RFC 2104) over any `HashFunction`. One implementation for SHA-256, SHA-512 and BLAKE2b
/// (libsodium has no HMAC-BLAKE2b, and keyed BLAKE2b is a different function).
public struct HMAC<H: HashFunction> {
    private let inner: H
    private let outerKey: [UInt8]

    /// Starts a MAC under `key`, of any length; a key longer than `H.blockLength` is hashed first
    /// (RFC 2104).
    public init(key: some Collection<UInt8>) {
        var k = Array(key)
        if k.count > H.blockLength { k = H.hash(k) }
        k += [UInt8](repeating: 0, count: H.blockLength - k.count)
        var ipad = k.map { $0 ^ 0x36 }
        outerKey = k.map { $0 ^ 0x5c }
        inner = H()
        inner.update(ipad)
        SecureBytes.zero(&k)
        SecureBytes.zero(&ipad)
    }

    /// Feeds more message bytes.
    public func update(_ bytes: [UInt8]) { inner.update(bytes) }
    /// Feeds more message bytes.
    public func update(_ bytes: UnsafeRawBufferPointer) { inner.update(bytes) }

    /// The MAC, `H.digestLength` bytes. Single use: call neither `update` nor `finalize` afterwards.
    public func finalize() -> [UInt8] {
        let outer = H()
        outer.update(outerKey)
        outer.update(inner.finalize())
        return outer.finalize()
    }

    /// One-shot MAC.
    public static func authenticationCode(for message: [UInt8], key: some Collection<UInt8>) -> [UInt8] {
        let mac = HMAC(key: key)
        mac.update(message)
        return mac.finalize()
    }

    /// Constant-time check of a MAC.
    public static func isValid(_ code: [UInt8], for message: [UInt8], key: some Collection<UInt8>) -> Bool {
        constantTimeEquals(code, authenticationCode(for: message, key: key))
    }
}
