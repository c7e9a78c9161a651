import PeerlogCrypto
import PeerlogEncoding

/// An identity key sealed with a passphrase: the identity backup file (docs/PROTOCOL.md §21).
///
/// The file is one deterministic CBOR map. Its public header names the identity, when the backup
/// was made and how the key was derived; `ct` is the identity's Ed25519 seed sealed with
/// XChaCha20-Poly1305 under an Argon2id key from the passphrase, with every other field as
/// associated data, so no header field can change without the file failing to open.
///
/// Parsing (``init(encoded:)``) checks the shape and the limits and does no cryptography: a file
/// that asks for more than ``Cost/maxMemoryBytes`` of memory or ``Cost/maxOperations`` passes is
/// refused before any work. Only ``open(passphrase:)`` derives the key.
public struct IdentityBackup: Sendable, Hashable {
    /// The value of the `kind` field: what the file is.
    public static let kind = "peerlog-identity-backup"
    /// The value of `kdf.alg`: Argon2id version 1.3, as libsodium's `crypto_pwhash_ALG_ARGON2ID13`.
    public static let kdfAlgorithm = "argon2id13"
    /// The value of `aead`: XChaCha20-Poly1305 IETF (libsodium's `crypto_aead_xchacha20poly1305_ietf`).
    public static let aeadAlgorithm = "xchacha20poly1305-ietf"
    /// The format version this implementation writes and reads (field `v`).
    public static let version: UInt64 = 1
    /// Largest file read, in bytes (1 KiB; a version-1 file is about 260 bytes).
    public static let maxFileBytes = 1024
    /// Longest passphrase, in bytes of UTF-8 (1024); the shortest is 1 byte.
    public static let maxPassphraseBytes = 1024
    /// Length of the sealed seed: 32 bytes of seed and the 16-byte tag.
    public static let ciphertextLength = Ed25519.seedLength + XChaChaPoly.tagLength

    /// Argon2id's costs: passes over memory, and the memory in bytes.
    public struct Cost: Sendable, Hashable {
        /// Most passes a file may ask for (10): about 10 times the default's time per GiB.
        public static let maxOperations: UInt64 = 10
        /// Most memory a file may ask for, in bytes (1 GiB, libsodium's `MEMLIMIT_SENSITIVE`).
        public static let maxMemoryBytes: UInt64 = 1 << 30
        /// Fewest passes (1, Argon2id's minimum).
        public static let minOperations: UInt64 = Argon2id.minOperations
        /// Least memory in bytes (8 KiB, Argon2id's minimum); memory is a multiple of 1 KiB.
        public static let minMemoryBytes: UInt64 = Argon2id.minMemoryBytes
        /// What `peerlog identity export` uses: 3 passes over 128 MiB, between libsodium's
        /// `INTERACTIVE` (2, 64 MiB) and `MODERATE` (3, 256 MiB) levels; about 0.2 s on one core
        /// of a 2020s laptop.
        public static let standard = Cost(checkedOperations: 3, memoryBytes: 128 << 20)

        /// Passes over the memory (Argon2 `t`).
        public let operations: UInt64
        /// Memory in bytes (Argon2 `m` is this divided by 1024).
        public let memoryBytes: UInt64

        /// Costs within the limits: `operations` in 1...``maxOperations``, `memoryBytes` in
        /// ``minMemoryBytes``...``maxMemoryBytes`` and a multiple of 1024. Throws a `ModelError`
        /// (`fieldOutOfRange`) otherwise.
        public init(operations: UInt64, memoryBytes: UInt64) throws {
            guard (Self.minOperations...Self.maxOperations).contains(operations) else {
                throw ModelError(
                    .fieldOutOfRange,
                    "identity backup kdf.ops is \(operations); accepted: \(Self.minOperations)...\(Self.maxOperations)")
            }
            guard (Self.minMemoryBytes...Self.maxMemoryBytes).contains(memoryBytes), memoryBytes % 1024 == 0 else {
                throw ModelError(
                    .fieldOutOfRange,
                    "identity backup kdf.mem is \(memoryBytes) bytes; accepted: multiples of 1024 in "
                        + "\(Self.minMemoryBytes)...\(Self.maxMemoryBytes)")
            }
            self.operations = operations
            self.memoryBytes = memoryBytes
        }

        private init(checkedOperations: UInt64, memoryBytes: UInt64) {
            operations = checkedOperations
            self.memoryBytes = memoryBytes
        }
    }

    /// Whose backup this is (field `identity`, the identity's public key): readable without the
    /// passphrase.
    public let identity: IdentityID
    /// When the backup was made, milliseconds since 1970 (field `created`).
    public let createdAt: UInt64
    /// The Argon2id costs (fields `kdf.ops`, `kdf.mem`).
    public let cost: Cost
    /// The Argon2id salt, 16 random bytes (field `kdf.salt`).
    public let salt: [UInt8]
    /// The XChaCha20-Poly1305 nonce, 24 random bytes (field `nonce`).
    public let nonce: [UInt8]
    /// The sealed seed, ``ciphertextLength`` bytes (field `ct`).
    public let ciphertext: [UInt8]

    /// Seals `identityKey` under `passphrase` with a fresh random salt and nonce.
    /// Throws a `ModelError` (`fieldOutOfRange`) when the passphrase is not 1...1024 bytes.
    public static func seal(
        identityKey: Ed25519.PrivateKey, passphrase: String, createdAt: UInt64, cost: Cost = .standard
    ) throws -> IdentityBackup {
        try seal(
            identityKey: identityKey, passphrase: passphrase, createdAt: createdAt, cost: cost,
            salt: SecureRandom.bytes(Argon2id.saltLength), nonce: SecureRandom.bytes(XChaChaPoly.nonceLength))
    }

    /// Seals with the given salt and nonce: for test vectors only (a salt or nonce must never be
    /// reused). Throws a `ModelError` when the passphrase, salt or nonce has the wrong length.
    public static func seal(
        identityKey: Ed25519.PrivateKey, passphrase: String, createdAt: UInt64, cost: Cost, salt: [UInt8],
        nonce: [UInt8]
    ) throws -> IdentityBackup {
        guard salt.count == Argon2id.saltLength, nonce.count == XChaChaPoly.nonceLength else {
            throw ModelError(.fieldOutOfRange, "identity backup salt must be 16 bytes and nonce 24")
        }
        let identity = IdentityID(publicKey: identityKey.publicKey)
        let header = Self.header(identity: identity, createdAt: createdAt, cost: cost, salt: salt, nonce: nonce)
        let key = try Self.deriveKey(passphrase: passphrase, salt: salt, cost: cost)
        var seed = identityKey.seed.copyBytes()
        defer { SecureBytes.zero(&seed) }
        let ct = try XChaChaPoly.seal(
            seed, key: key, nonce: nonce, authenticating: CBOREncoder.encode(.textMap(header)))
        return IdentityBackup(
            identity: identity, createdAt: createdAt, cost: cost, salt: salt, nonce: nonce, ciphertext: ct)
    }

    private init(
        identity: IdentityID, createdAt: UInt64, cost: Cost, salt: [UInt8], nonce: [UInt8], ciphertext: [UInt8]
    ) {
        self.identity = identity
        self.createdAt = createdAt
        self.cost = cost
        self.salt = salt
        self.nonce = nonce
        self.ciphertext = ciphertext
    }

    /// Parses a backup file's bytes and checks its shape and limits, without the passphrase and
    /// without deriving anything. Throws a `ModelError`: `sizeLimitExceeded` over
    /// ``maxFileBytes``; `malformedEncoding` for bytes that are not strict deterministic CBOR;
    /// `wrongShape` for anything that is not an identity backup or lacks or adds a field;
    /// `unsupportedVersion`; `fieldOutOfRange` for another algorithm, a wrong length or costs
    /// beyond ``Cost``'s limits.
    public init(encoded: [UInt8]) throws {
        let what = "identity backup"
        guard encoded.count <= Self.maxFileBytes else {
            throw ModelError(.sizeLimitExceeded, "\(what) is \(encoded.count) bytes, limit \(Self.maxFileBytes)")
        }
        let map = try Fields.decode(encoded, what: what, decoder: Fields.payloadDecoder(maxBytes: Self.maxFileBytes))
        guard map[.text("kind")] == .text(Self.kind) else {
            throw ModelError(.wrongShape, "not a Peerlog identity backup (its \"kind\" is not \"\(Self.kind)\")")
        }
        try Fields.version(map, what: what)
        try Fields.requireKeys(map, ["v", "kind", "identity", "created", "kdf", "aead", "nonce", "ct"], what: what)
        guard case .map(let kdf)? = map[.text("kdf")] else {
            throw ModelError(.wrongShape, "\(what).kdf must be a map")
        }
        try Fields.requireKeys(kdf, ["alg", "ops", "mem", "salt"], what: "\(what).kdf")
        guard kdf[.text("alg")] == .text(Self.kdfAlgorithm) else {
            throw ModelError(.fieldOutOfRange, "\(what).kdf.alg must be \"\(Self.kdfAlgorithm)\"")
        }
        guard map[.text("aead")] == .text(Self.aeadAlgorithm) else {
            throw ModelError(.fieldOutOfRange, "\(what).aead must be \"\(Self.aeadAlgorithm)\"")
        }
        cost = try Cost(
            operations: try Fields.uint(kdf, "ops", what: "\(what).kdf"),
            memoryBytes: try Fields.uint(kdf, "mem", what: "\(what).kdf"))
        salt = try Fields.bytes(kdf, "salt", what: "\(what).kdf", count: Argon2id.saltLength)
        identity = try IdentityID(bytes: try Fields.bytes(map, "identity", what: what, count: Ed25519.publicKeyLength))
        createdAt = try Fields.uint(map, "created", what: what)
        nonce = try Fields.bytes(map, "nonce", what: what, count: XChaChaPoly.nonceLength)
        ciphertext = try Fields.bytes(map, "ct", what: what, count: Self.ciphertextLength)
    }

    /// The file's bytes: the deterministic CBOR map of docs/PROTOCOL.md §21.
    public var encoded: [UInt8] {
        var map = Self.header(identity: identity, createdAt: createdAt, cost: cost, salt: salt, nonce: nonce)
        map["ct"] = .bytes(ciphertext)
        return CBOREncoder.encode(.textMap(map))
    }

    /// The associated data sealed with the seed: the deterministic encoding of the map without
    /// `ct`.
    public var associatedData: [UInt8] {
        CBOREncoder.encode(
            .textMap(Self.header(identity: identity, createdAt: createdAt, cost: cost, salt: salt, nonce: nonce)))
    }

    /// Derives the key from `passphrase` (the only costly step) and returns the identity key.
    /// Throws a `ModelError`: `fieldOutOfRange` when the passphrase is not 1...1024 bytes;
    /// `wrongPassphrase` when the seal does not open (a wrong passphrase or a changed file: the
    /// two cannot be told apart); `certificateMismatch` when the sealed key is not the
    /// ``identity`` the header names (a file made wrongly or on purpose).
    public func open(passphrase: String) throws -> Ed25519.PrivateKey {
        let key = try Self.deriveKey(passphrase: passphrase, salt: salt, cost: cost)
        var seed: [UInt8]
        do { seed = try XChaChaPoly.open(ciphertext, key: key, nonce: nonce, authenticating: associatedData) } catch {
            throw ModelError(.wrongPassphrase, "the identity backup of \(identity) does not open with this passphrase")
        }
        defer { SecureBytes.zero(&seed) }
        let identityKey = try Ed25519.PrivateKey(seed: SecureBytes(seed))
        guard identityKey.publicKey == identity.publicKey else {
            throw ModelError(.certificateMismatch, "the identity backup holds a key other than \(identity)")
        }
        return identityKey
    }

    /// Refuses a passphrase outside 1...``maxPassphraseBytes`` bytes, before any work.
    public static func checkPassphrase(_ passphrase: String) throws {
        let n = passphrase.utf8.count
        guard n >= 1, n <= maxPassphraseBytes else {
            throw ModelError(
                .fieldOutOfRange, "the passphrase must be 1...\(maxPassphraseBytes) bytes of UTF-8, not \(n)")
        }
    }

    private static func header(
        identity: IdentityID, createdAt: UInt64, cost: Cost, salt: [UInt8], nonce: [UInt8]
    ) -> [String: CBOR] {
        [
            "v": .unsigned(version),
            "kind": .text(kind),
            "identity": .bytes(identity.bytes),
            "created": .unsigned(createdAt),
            "kdf": .textMap([
                "alg": .text(kdfAlgorithm), "ops": .unsigned(cost.operations), "mem": .unsigned(cost.memoryBytes),
                "salt": .bytes(salt),
            ]),
            "aead": .text(aeadAlgorithm),
            "nonce": .bytes(nonce),
        ]
    }

    private static func deriveKey(passphrase: String, salt: [UInt8], cost: Cost) throws -> SecureBytes {
        try checkPassphrase(passphrase)
        var bytes = Array(passphrase.utf8)
        defer { SecureBytes.zero(&bytes) }
        return try Argon2id.deriveKey(
            length: XChaChaPoly.keyLength, passphrase: bytes, salt: salt, operations: cost.operations,
            memoryBytes: cost.memoryBytes)
    }
}
