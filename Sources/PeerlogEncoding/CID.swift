import PeerlogCrypto

/// A content id: CIDv1, dag-cbor codec (0x71), sha2-256 multihash. Text form is multibase
/// base32 lower-case with the `b` prefix (`bafyrei…`). Peerlog produces and accepts only this
/// combination, and says precisely which part of anything else it does not support.
public struct CID: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// The only CID version accepted (1).
    public static let version: UInt64 = 1
    /// The content's multicodec, dag-cbor (0x71): the only codec accepted.
    public static let dagCBORCodec: UInt64 = 0x71
    /// The multihash code of sha2-256 (0x12): the only hash accepted.
    public static let sha256Code: UInt64 = 0x12
    /// Length in bytes of the sha2-256 digest (32).
    public static let digestLength = 32
    /// CBOR tag for IPLD links (dag-cbor); its content is 0x00 followed by the binary CID.
    public static let cborLinkTag: UInt64 = 42

    /// The sha2-256 digest of the content.
    public let digest: [UInt8]

    /// A CID for a known digest. Traps unless `digest` is 32 bytes; parse untrusted input with
    /// `init(bytes:)`.
    public init(digest: [UInt8]) {
        precondition(digest.count == Self.digestLength, "sha2-256 digest must be 32 bytes")
        self.digest = digest
    }

    /// Hashes the 32 digest bytes in one call: the synthesized conformance fed an array's
    /// bytes to the hasher one at a time (33 calls), a few per cent of a relay's CPU, since
    /// CIDs key most of the engine's sets and dictionaries.
    public func hash(into hasher: inout Hasher) {
        digest.withUnsafeBytes { hasher.combine(bytes: $0) }
    }

    /// The CID of `content` (hashes it with SHA-256).
    public init(hashing content: [UInt8]) {
        self.init(digest: SHA256.hash(content))
    }

    /// Binary form: varint(1) varint(0x71) varint(0x12) varint(32) digest — 36 bytes.
    public var bytes: [UInt8] { [0x01, 0x71, 0x12, 0x20] + digest }

    /// Text form: "b" + base32(binary form).
    public var string: String { "b" + Base32.encode(bytes) }
    /// The text form (`string`).
    public var description: String { string }

    /// Parses the text form (docs/PROTOCOL.md §2): `b`, then lower-case unpadded base32 of the
    /// binary form. Throws `ParseError` naming the unsupported or malformed part.
    public init(string: String) throws(ParseError) {
        guard let first = string.first else { throw .empty() }
        guard first == "b" else { throw .unsupportedMultibase(first) }
        let raw: [UInt8]
        do { raw = try Base32.decode(string.dropFirst()) } catch { throw .invalidBase32(error) }
        try self.init(bytes: raw)
    }

    /// Parses the 36-byte binary form `01 71 12 20` ‖ digest (docs/PROTOCOL.md §2). Throws
    /// `ParseError` for another version, codec, hash or digest length, a malformed varint, or
    /// bytes after the digest.
    public init(bytes raw: [UInt8]) throws(ParseError) {
        var offset = 0
        func field(_ name: String) throws(ParseError) -> UInt64 {
            guard let v = Varint.decode(raw, offset: &offset) else { throw .malformedVarint(field: name) }
            return v
        }
        guard !raw.isEmpty else { throw .empty() }
        let version = try field("version")
        guard version == Self.version else { throw .unsupportedVersion(version) }
        let codec = try field("codec")
        guard codec == Self.dagCBORCodec else { throw .unsupportedCodec(codec) }
        let hash = try field("multihash code")
        guard hash == Self.sha256Code else { throw .unsupportedHash(hash) }
        let length = try field("digest length")
        guard length == UInt64(Self.digestLength), raw.count - offset >= Self.digestLength else {
            throw .wrongDigestLength(length)
        }
        guard raw.count - offset == Self.digestLength else {
            throw .trailingBytes(raw.count - offset - Self.digestLength)
        }
        self.init(digest: Array(raw[offset...]))
    }

    /// The dag-cbor link form: tag 42 over 0x00 ‖ binary CID.
    public var cborLink: CBOR { .tagged(Self.cborLinkTag, .bytes([0x00] + bytes)) }

    /// Parses a dag-cbor link (tag 42).
    public init(cborLink value: CBOR) throws(ParseError) {
        guard case .tagged(Self.cborLinkTag, .bytes(let b)) = value, b.first == 0x00 else { throw .empty() }
        try self.init(bytes: Array(b.dropFirst()))
    }

    /// Binary-form order (docs/PROTOCOL.md §2); all CIDs here share the 4-byte prefix, so this is
    /// digest order.
    public static func < (lhs: CID, rhs: CID) -> Bool { lhs.digest.lexicographicallyPrecedes(rhs.digest) }
}
