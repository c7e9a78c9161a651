import CSodium

/// Argon2id version 1.3 (RFC 9106) through libsodium's `crypto_pwhash` with
/// `crypto_pwhash_ALG_ARGON2ID13`: a key from a passphrase, slow and memory-hard so that
/// guessing offline costs the attacker what it costs us.
///
/// libsodium fixes the other Argon2 inputs: one lane (parallelism 1), no secret key, no
/// associated data, version 0x13; `memoryBytes` is used in whole KiB (`memoryBytes / 1024`
/// blocks), so callers should pass multiples of 1024.
public enum Argon2id {
    /// Salt length in bytes (16, `crypto_pwhash_SALTBYTES`).
    public static let saltLength = 16
    /// The fewest passes libsodium accepts for Argon2id (1, `crypto_pwhash_argon2id_OPSLIMIT_MIN`).
    public static let minOperations: UInt64 = 1
    /// The least memory libsodium accepts for Argon2id, in bytes (8 KiB,
    /// `crypto_pwhash_argon2id_MEMLIMIT_MIN`).
    public static let minMemoryBytes: UInt64 = 8192
    /// Shortest derived key in bytes (16, `crypto_pwhash_BYTES_MIN`).
    public static let minKeyLength = 16

    /// Derives `length` bytes from `passphrase` and `salt` with `operations` passes over
    /// `memoryBytes` of memory. Throws `invalidParameter` when the passphrase is empty, the salt is
    /// not 16 bytes, the length is below 16, or the costs are below the minimums above or above
    /// what libsodium allows; throws `outOfMemory` when the memory cannot be allocated. Callers bound the costs
    /// they accept before calling: this function does the work it is asked for.
    public static func deriveKey(
        length: Int, passphrase: [UInt8], salt: [UInt8], operations: UInt64, memoryBytes: UInt64
    ) throws -> SecureBytes {
        Sodium.ensureInitialized()
        guard salt.count == saltLength else {
            throw CryptoError(.invalidParameter, "Argon2id salt must be \(saltLength) bytes, got \(salt.count)")
        }
        guard !passphrase.isEmpty else { throw CryptoError(.invalidParameter, "the passphrase is empty") }
        guard length >= minKeyLength else {
            throw CryptoError(.invalidParameter, "Argon2id output must be at least \(minKeyLength) bytes")
        }
        guard operations >= minOperations, operations <= UInt64(crypto_pwhash_argon2id_opslimit_max()) else {
            throw CryptoError(.invalidParameter, "Argon2id operations \(operations) out of range")
        }
        guard memoryBytes >= minMemoryBytes, memoryBytes <= UInt64(crypto_pwhash_argon2id_memlimit_max()) else {
            throw CryptoError(.invalidParameter, "Argon2id memory \(memoryBytes) bytes out of range")
        }
        var out = [UInt8](repeating: 0, count: length)
        defer { SecureBytes.zero(&out) }
        let rc = passphrase.withUnsafeBytes { p in
            crypto_pwhash(
                &out, UInt64(length), p.bindMemory(to: CChar.self).baseAddress!, UInt64(p.count), salt,
                operations, Int(memoryBytes), crypto_pwhash_ALG_ARGON2ID13)
        }
        guard rc == 0 else {
            throw CryptoError(.outOfMemory, "Argon2id could not allocate \(memoryBytes) bytes")
        }
        return SecureBytes(out)
    }
}
