import PeerlogCrypto
import PeerlogTestSupport
import Testing

/// The Argon2id wrapper: its inputs all count, and out-of-range parameters are refused before
/// libsodium is asked. (Its output is pinned by the identity backup example of
/// docs/PROTOCOL.md §21, computed with PyNaCl.)
struct Argon2idTests {
    static let salt = [UInt8](repeating: 0x5a, count: 16)

    static func derive(
        _ passphrase: String = "pw", salt: [UInt8] = salt, length: Int = 32, ops: UInt64 = 1, mem: UInt64 = 8192
    ) throws -> [UInt8] {
        try Argon2id.deriveKey(
            length: length, passphrase: Array(passphrase.utf8), salt: salt, operations: ops, memoryBytes: mem
        ).copyBytes()
    }

    @Test func everyInputChangesTheKey() throws {
        let base = try Self.derive()
        let again = try Self.derive()
        #expect(base.count == 32 && base == again)
        var otherSalt = Self.salt
        otherSalt[15] ^= 1
        let variants = [
            try Self.derive("pw2"), try Self.derive(salt: otherSalt), try Self.derive(ops: 2),
            try Self.derive(mem: 9216),
        ]
        #expect(variants.allSatisfy { $0 != base } && Set(variants).count == variants.count)
        let short = try Self.derive(length: 16)
        #expect(short.count == 16)
    }

    @Test func parametersOutOfRangeAreRefused() {
        let refused: [() throws -> [UInt8]] = [
            { try Self.derive("") }, { try Self.derive(salt: [UInt8](repeating: 0, count: 15)) },
            { try Self.derive(salt: [UInt8](repeating: 0, count: 17)) }, { try Self.derive(length: 15) },
            { try Self.derive(ops: 0) }, { try Self.derive(mem: 8191) }, { try Self.derive(mem: 0) },
        ]
        for (i, body) in refused.enumerated() {
            #expect(throws: CryptoError(.invalidParameter), "case \(i)") { _ = try body() }
        }
    }
}
