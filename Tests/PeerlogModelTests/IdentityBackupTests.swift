import Foundation
import PeerlogCrypto
import PeerlogEncoding
import PeerlogModel
import PeerlogTestSupport
import Testing

/// The identity backup file (docs/PROTOCOL.md §21): round trip, refusals, limits at their boundary.
@Suite struct IdentityBackupTests {
    /// Argon2id's minimum costs, so that the many openings below stay fast.
    static let cheap = try! IdentityBackup.Cost(operations: 1, memoryBytes: 8192)
    static let passphrase = "correct horse battery staple"

    static func backup(cost: IdentityBackup.Cost = cheap) throws -> (Ed25519.PrivateKey, IdentityBackup) {
        let key = Ed25519.PrivateKey()
        return (
            key,
            try IdentityBackup.seal(identityKey: key, passphrase: passphrase, createdAt: 1_700_000_000_000, cost: cost)
        )
    }

    /// The file's map, for tampering.
    static func map(_ encoded: [UInt8]) throws -> [String: CBOR] {
        var out = [String: CBOR]()
        for (k, v) in try CBORDecoder.decodeStrict(encoded).mapValue! { out[k.textValue!] = v }
        return out
    }

    static func kdf(_ map: [String: CBOR]) -> [String: CBOR] {
        var out = [String: CBOR]()
        for (k, v) in map["kdf"]!.mapValue! { out[k.textValue!] = v }
        return out
    }

    static func code(_ body: () throws -> Void) -> ModelError.Code? {
        do {
            try body()
            return nil
        } catch let error as ModelError { return error.code } catch {
            Issue.record("not a ModelError: \(error)")
            return nil
        }
    }

    @Test func roundTripWithTheStandardCost() throws {
        let (key, sealed) = try Self.backup(cost: .standard)
        #expect(sealed.cost.operations == 3 && sealed.cost.memoryBytes == 128 << 20)
        let file = sealed.encoded
        #expect(file.count <= IdentityBackup.maxFileBytes)
        let read = try IdentityBackup(encoded: file)
        #expect(read == sealed && read.encoded == file)
        #expect(read.identity == IdentityID(publicKey: key.publicKey) && read.createdAt == 1_700_000_000_000)
        let opened = try read.open(passphrase: Self.passphrase)
        #expect(opened.seed == key.seed && opened.publicKey == key.publicKey)
        // The associated data is the map without "ct", deterministically encoded.
        var header = try Self.map(file)
        header["ct"] = nil
        #expect(read.associatedData == CBOREncoder.encode(.textMap(header)))
        // Two backups of one key share neither salt nor nonce.
        let again = try IdentityBackup.seal(
            identityKey: key, passphrase: Self.passphrase, createdAt: 1, cost: Self.cheap)
        #expect(again.salt != sealed.salt && again.nonce != sealed.nonce)
    }

    @Test func aWrongPassphraseIsOneClearError() throws {
        let (_, sealed) = try Self.backup()
        for wrong in ["correct horse battery stapler", "Correct horse battery staple", "Q"] {
            do {
                _ = try sealed.open(passphrase: wrong)
                Issue.record("opened with \(wrong)")
            } catch let error as ModelError {
                #expect(error.code == .wrongPassphrase)
                #expect("\(error)".hasPrefix("wrong passphrase or damaged file: "), "\(error)")
                #expect(!"\(error)".contains(wrong), "the description never echoes the passphrase")
            }
        }
    }

    @Test func everyHeaderFieldChangedIsRefused() throws {
        let (_, sealed) = try Self.backup()
        let original = try Self.map(sealed.encoded)
        let kdf = Self.kdf(original)
        func flip(_ value: CBOR) -> CBOR {
            var b = value.bytesValue!
            b[b.count / 2] ^= 0x01
            return .bytes(b)
        }
        let other = Ed25519.PrivateKey().publicKey.rawRepresentation
        // (field, new value, the refusal expected: at parsing, or on opening with the right passphrase)
        let cases: [(String, CBOR, ModelError.Code)] = [
            ("v", .unsigned(2), .unsupportedVersion),
            ("kind", .text("peerlog-identity-backup2"), .wrongShape),
            ("identity", .bytes(other), .wrongPassphrase),
            ("created", .unsigned(1_700_000_000_001), .wrongPassphrase),
            ("aead", .text("chacha20poly1305-ietf"), .fieldOutOfRange),
            ("nonce", flip(original["nonce"]!), .wrongPassphrase),
            ("ct", flip(original["ct"]!), .wrongPassphrase),
            ("kdf.alg", .text("argon2i13"), .fieldOutOfRange),
            ("kdf.ops", .unsigned(2), .wrongPassphrase),
            ("kdf.mem", .unsigned(9216), .wrongPassphrase),
            ("kdf.salt", flip(kdf["salt"]!), .wrongPassphrase),
        ]
        for (field, value, expected) in cases {
            var map = original
            if field.hasPrefix("kdf.") {
                var k = kdf
                k[String(field.dropFirst(4))] = value
                map["kdf"] = .textMap(k)
            } else {
                map[field] = value
            }
            let file = CBOREncoder.encode(.textMap(map))
            let got = Self.code { _ = try IdentityBackup(encoded: file).open(passphrase: Self.passphrase) }
            #expect(got == expected, "\(field): \(String(describing: got))")
        }
        // A field added or left out.
        var extra = original
        extra["note"] = .text("hi")
        #expect(Self.code { _ = try IdentityBackup(encoded: CBOREncoder.encode(.textMap(extra))) } == .wrongShape)
        for field in original.keys {
            var less = original
            less[field] = nil
            #expect(
                Self.code { _ = try IdentityBackup(encoded: CBOREncoder.encode(.textMap(less))) } != nil, "\(field)")
        }
        // Any single bit of the file changed: refused, at parsing or at opening.
        let file = sealed.encoded
        for i in file.indices {
            var bad = file
            bad[i] ^= 0x01
            #expect(
                Self.code { _ = try IdentityBackup(encoded: bad).open(passphrase: Self.passphrase) } != nil, "byte \(i)"
            )
        }
    }

    @Test func aTruncatedFileIsMalformed() throws {
        let file = try Self.backup().1.encoded
        for n in 0..<file.count {
            #expect(Self.code { _ = try IdentityBackup(encoded: Array(file.prefix(n))) } == .malformedEncoding, "\(n)")
        }
        #expect(Self.code { _ = try IdentityBackup(encoded: file + [0]) } == .malformedEncoding)
    }

    @Test func theFileSizeLimit() throws {
        #expect(IdentityBackup.maxFileBytes == 1024)
        let atLimit = [UInt8](repeating: 0x00, count: IdentityBackup.maxFileBytes)
        #expect(Self.code { _ = try IdentityBackup(encoded: atLimit) } == .malformedEncoding)
        #expect(Self.code { _ = try IdentityBackup(encoded: atLimit + [0]) } == .sizeLimitExceeded)
    }

    /// Costs beyond the limits are refused by parsing, which derives nothing, so a file asking
    /// for 4 GiB costs nothing to refuse; costs at the limits are read.
    @Test func costLimitsAtTheirBoundary() throws {
        let (_, sealed) = try Self.backup()
        let original = try Self.map(sealed.encoded)
        func file(ops: UInt64, mem: UInt64) -> [UInt8] {
            var k = Self.kdf(original)
            k["ops"] = .unsigned(ops)
            k["mem"] = .unsigned(mem)
            var map = original
            map["kdf"] = .textMap(k)
            return CBOREncoder.encode(.textMap(map))
        }
        let cases: [(UInt64, UInt64, Bool)] = [
            (1, 8192, true), (10, 8192, true), (1, 1 << 30, true), (10, 1 << 30, true),
            (0, 8192, false), (11, 8192, false), (1, 7168, false), (1, (1 << 30) + 1024, false),
            (1, 8193, false), (1, 4 << 30, false), (UInt64.max, UInt64.max, false),
        ]
        for (ops, mem, accepted) in cases {
            let start = ContinuousClock.now
            let got = Self.code { _ = try IdentityBackup(encoded: file(ops: ops, mem: mem)) }
            #expect(got == (accepted ? nil : .fieldOutOfRange), "ops \(ops) mem \(mem): \(String(describing: got))")
            // Deriving with 10 passes over 1 GiB would take far longer; a busy machine can pause
            // a parse for a few hundred milliseconds, so the bound is 2 s, not 200 ms.
            #expect(ContinuousClock.now - start < .seconds(2), "parsing derives nothing")
        }
        #expect(throws: ModelError(.fieldOutOfRange, "")) {
            try IdentityBackup.Cost(operations: 11, memoryBytes: 8192)
        }
        #expect(throws: ModelError(.fieldOutOfRange, "")) {
            try IdentityBackup.Cost(operations: 1, memoryBytes: (1 << 30) + 1024)
        }
    }

    @Test func passphraseLengthAtItsBoundary() throws {
        let key = Ed25519.PrivateKey()
        func seal(_ p: String) throws -> IdentityBackup {
            try IdentityBackup.seal(identityKey: key, passphrase: p, createdAt: 1, cost: Self.cheap)
        }
        #expect(Self.code { _ = try seal("") } == .fieldOutOfRange)
        #expect(Self.code { _ = try seal(String(repeating: "p", count: 1025)) } == .fieldOutOfRange)
        // 1 and 1024 bytes (é is 2 bytes of UTF-8: bytes are counted, not characters).
        for p in ["p", String(repeating: "é", count: 512)] {
            #expect(try seal(p).open(passphrase: p).publicKey == key.publicKey)
        }
        let sealed = try seal("p")
        #expect(Self.code { _ = try sealed.open(passphrase: "") } == .fieldOutOfRange)
        #expect(Self.code { _ = try sealed.open(passphrase: String(repeating: "é", count: 513)) } == .fieldOutOfRange)
    }

    /// A file built from the spec alone (header map, Argon2id, XChaCha20-Poly1305 over the map
    /// without `ct`), sealing a key other than the identity it names: refused after opening.
    @Test func aFileFromTheSpecOpensAndAForeignKeyIsRefused() throws {
        let named = Ed25519.PrivateKey()
        let salt = [UInt8](repeating: 7, count: 16)
        let nonce = [UInt8](repeating: 9, count: 24)
        let header: [String: CBOR] = [
            "v": 1, "kind": "peerlog-identity-backup", "identity": .bytes(named.publicKey.rawRepresentation),
            "created": 5, "aead": "xchacha20poly1305-ietf", "nonce": .bytes(nonce),
            "kdf": .textMap(["alg": "argon2id13", "ops": 1, "mem": 8192, "salt": .bytes(salt)]),
        ]
        let key = try Argon2id.deriveKey(
            length: 32, passphrase: Array("pw".utf8), salt: salt, operations: 1, memoryBytes: 8192)
        func file(sealing seed: SecureBytes) throws -> [UInt8] {
            var map = header
            map["ct"] = .bytes(
                try XChaChaPoly.seal(
                    seed.copyBytes(), key: key, nonce: nonce, authenticating: CBOREncoder.encode(.textMap(header))))
            return CBOREncoder.encode(.textMap(map))
        }
        let good = try file(sealing: named.seed)
        #expect(try IdentityBackup(encoded: good).open(passphrase: "pw").seed == named.seed)
        #expect(
            try good
                == IdentityBackup.seal(
                    identityKey: named, passphrase: "pw", createdAt: 5, cost: Self.cheap, salt: salt, nonce: nonce
                ).encoded)
        let foreign = try file(sealing: Ed25519.PrivateKey().seed)
        #expect(Self.code { _ = try IdentityBackup(encoded: foreign).open(passphrase: "pw") } == .certificateMismatch)
    }
    /// docs/PROTOCOL.md §21's worked example (computed independently with cbor2 and PyNaCl) is
    /// what this implementation writes and reads.
    @Test func theWorkedExampleOfTheProtocol() throws {
        let doc = try String(contentsOfFile: TestSupport.repoRoot + "/docs/PROTOCOL.md", encoding: .utf8)
        func block(_ name: String) -> String? {
            guard let start = doc.range(of: "<!-- golden:\(name) -->\n```text\n"),
                let end = doc.range(of: "\n```\n<!-- /golden:\(name) -->", range: start.upperBound..<doc.endIndex)
            else { return nil }
            return String(doc[start.upperBound..<end.lowerBound]).filter { !$0.isWhitespace }
        }
        let identityKey = try Ed25519.PrivateKey(seed: SecureBytes([UInt8](repeating: 0x01, count: 32)))
        let salt = [UInt8](repeating: 0x11, count: 16)
        let nonce = [UInt8](repeating: 0x22, count: 24)
        let made = try IdentityBackup.seal(
            identityKey: identityKey, passphrase: "peerlog example", createdAt: 1_700_000_000_000, cost: Self.cheap,
            salt: salt, nonce: nonce)
        let key = try Argon2id.deriveKey(
            length: 32, passphrase: Array("peerlog example".utf8), salt: salt, operations: 1, memoryBytes: 8192)
        #expect(block("identity-backup-key") == TestSupport.hex(key.copyBytes()))
        let file = try #require(block("identity-backup"))
        #expect(file == TestSupport.hex(made.encoded) && made.encoded.count == 260)
        let read = try IdentityBackup(encoded: TestSupport.bytes(hex: file))
        #expect(try read.open(passphrase: "peerlog example").seed == identityKey.seed)
        #expect(read.identity.string == "brkeohxlubhyzl7ks3mwtzos5olfgocn7dwkbeg7toseadnapn5oa")
    }
}
