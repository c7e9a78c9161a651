import CSodium

/// Secret bytes: zeroed when released, never printed, compared in constant time.
public final class SecureBytes: @unchecked Sendable {
    // Immutable after init, so sharing across threads is safe.
    private let storage: UnsafeMutableRawBufferPointer

    /// Copies `bytes` into secret storage. The caller should zero its own copy where it can.
    public init(_ bytes: some Collection<UInt8>) {
        Sodium.ensureInitialized()
        storage = .allocate(byteCount: max(bytes.count, 1), alignment: 16)
        _ = sodium_mlock(storage.baseAddress!, storage.count)
        storage.copyBytes(from: bytes)
        count = bytes.count
    }

    /// `count` fresh random bytes.
    public convenience init(randomCount count: Int) {
        var bytes = SecureRandom.bytes(count)
        self.init(bytes)
        SecureBytes.zero(&bytes)
    }

    /// Number of secret bytes.
    public let count: Int

    deinit {
        sodium_munlock(storage.baseAddress!, storage.count)  // munlock also zeroes
        sodium_memzero(storage.baseAddress, storage.count)
        storage.deallocate()
    }

    /// Runs `body` with read access to the secret. Do not let the pointer escape.
    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try body(UnsafeRawBufferPointer(rebasing: storage[0..<count]))
    }

    /// A copy as an ordinary array, for APIs that need one. Zero it with `SecureBytes.zero` when done.
    public func copyBytes() -> [UInt8] { withUnsafeBytes { Array($0) } }

    /// Overwrites an ordinary buffer with zeros in a way the optimiser cannot drop.
    public static func zero(_ bytes: inout [UInt8]) {
        bytes.withUnsafeMutableBytes { sodium_memzero($0.baseAddress, $0.count) }
    }
}

extension SecureBytes: Equatable {
    /// Constant-time comparison.
    public static func == (lhs: SecureBytes, rhs: SecureBytes) -> Bool {
        guard lhs.count == rhs.count else { return false }
        return lhs.withUnsafeBytes { a in
            rhs.withUnsafeBytes { b in sodium_memcmp(a.baseAddress, b.baseAddress, a.count) == 0 }
        }
    }
}

extension SecureBytes: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The byte count only, never the bytes: `SecureBytes(32 bytes, redacted)`.
    public var description: String { "SecureBytes(\(count) bytes, redacted)" }
    /// Same as `description`, so debugger output shows no secret either.
    public var debugDescription: String { description }
    /// An empty mirror, so `dump` and reflection show no bytes.
    public var customMirror: Mirror { Mirror(self, children: [:]) }
}

/// Constant-time equality of two public byte strings (MACs, tags).
public func constantTimeEquals(_ a: [UInt8], _ b: [UInt8]) -> Bool {
    guard a.count == b.count else { return false }
    return a.withUnsafeBytes { x in b.withUnsafeBytes { y in sodium_memcmp(x.baseAddress, y.baseAddress, x.count) == 0 }
    }
}
