import PeerlogCrypto
import PeerlogEncoding

/// A blob's name (docs/PROTOCOL.md §24.1): 32 bytes of a hash over its layout and the hashes of its
/// stored chunks, so any holder, a relay included, can check every chunk before it writes
/// or serves it.
public struct BlobID: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// Length in bytes (32).
    public static let length = 32
    /// The 32 bytes.
    public let bytes: [UInt8]

    /// Throws a `ModelError` unless `bytes` holds exactly 32 bytes.
    public init(bytes: [UInt8]) throws {
        self.bytes = try Fields.fixedLength(bytes, Self.length, what: "blob id")
    }

    /// Parses the text form (`b` + base32, as every Peerlog id).
    public init(string: String) throws {
        guard string.first == "b", let bytes = try? Base32.decode(string.dropFirst()) else {
            throw ModelError(.wrongShape, "not a blob id (b followed by base32): \(string.prefix(80))")
        }
        try self.init(bytes: bytes)
    }

    /// Byte-wise order.
    public static func < (l: BlobID, r: BlobID) -> Bool { l.bytes.lexicographicallyPrecedes(r.bytes) }

    /// The text form: `b` + lower-case base32, no padding.
    public var string: String { "b" + Base32.encode(bytes) }
    /// The text form.
    public var description: String { string }
    /// Lower-case hex: the blob's file name in a home's `blobs` directory.
    public var hex: String { hexString(bytes) }
}

/// How a blob's chunks are hashed and its id made (docs/PROTOCOL.md §24.1).
public enum BlobFormat: UInt8, Hashable, Sendable, CaseIterable {
    /// The first format: BLAKE2b-256 chunk hashes and id (`"peerlog/blob/v1"`). Read and served;
    /// this version no longer writes it.
    case blake2b = 1
    /// SHA-256 chunk hashes and id (`"peerlog/blob/v2"`): what this version writes. SHA-256 runs
    /// on the CPU's SHA extensions, 2.7 times the rate of BLAKE2b here (docs/BENCHMARKS.md).
    case sha256 = 2

    /// The format this version writes.
    public static let current = BlobFormat.sha256

    /// The `format` field of a reference or `blob_have` (§24.2, §24.3): absent in the first
    /// format, else the number.
    public var wireField: CBOR? { self == .blake2b ? nil : .unsigned(UInt64(rawValue)) }

    /// The format a reference's or `blob_have`'s `format` field names: absent is the first
    /// format; nil for 1 (never written) and unknown numbers.
    public init?(wireField field: CBOR?) {
        guard let field else {
            self = .blake2b
            return
        }
        guard let n = field.unsignedValue, n != 1, let byte = UInt8(exactly: n), let format = Self(rawValue: byte)
        else { return nil }
        self = format
    }

    /// A hasher of chunks and ids: 32 bytes of output.
    func hasher() -> any HashFunction {
        switch self {
        case .blake2b: try! BLAKE2b(length: 32, key: nil)
        case .sha256: SHA256()
        }
    }
}

/// How a blob is cut into chunks and sealed (docs/PROTOCOL.md §24.1). Every chunk is
/// `chunkBytes` of plaintext but the last (1…`chunkBytes`); a sealed chunk carries the
/// 16-byte ChaCha20-Poly1305 tag after it. An empty blob has no chunks.
public struct BlobLayout: Hashable, Sendable {
    /// Plaintext bytes of the whole value.
    public let size: UInt64
    /// Plaintext bytes of every chunk but the last.
    public let chunkBytes: UInt32
    /// Whether chunks are sealed (a blob of an encrypted group).
    public let sealed: Bool
    /// How its chunks are hashed and its id made.
    public let format: BlobFormat

    /// The chunk size this version writes for a plaintext blob (1 MiB: docs/BENCHMARKS.md, "Blobs").
    public static let defaultChunkBytes: UInt32 = 1 << 20
    /// The chunk size this version writes for a sealed blob: 1 MiB less the tag, so every stored
    /// chunk is 1 MiB and starts on a page boundary of the file (it can be written past the page
    /// cache).
    public static let defaultSealedChunkBytes: UInt32 = (1 << 20) - UInt32(ChaChaPoly.tagLength)

    /// The chunk size this version writes.
    public static func defaultChunkBytes(sealed: Bool) -> UInt32 {
        sealed ? defaultSealedChunkBytes : defaultChunkBytes
    }
    /// Smallest and largest chunk sizes a reader accepts (16 KiB, 2 MiB: one chunk and its
    /// message must fit `SyncLimits.maxMessageBytes`).
    public static let chunkBytesRange: ClosedRange<UInt32> = 16_384...2_097_152
    /// The largest blob (64 GiB).
    public static let maxSize: UInt64 = 64 << 30
    /// The most chunks of one blob (65,600: 64 GiB takes 65,536 plaintext chunks of
    /// `defaultChunkBytes`, 65,538 sealed ones of `defaultSealedChunkBytes`), so its hashes
    /// (2,099,200 bytes) fit one message.
    public static let maxChunks = 65_600

    /// A layout; throws a `ModelError` outside the limits above. The chunk size and format default
    /// to the ones this version writes.
    public init(size: UInt64, chunkBytes: UInt32? = nil, sealed: Bool, format: BlobFormat = .current) throws {
        let chunkBytes = chunkBytes ?? Self.defaultChunkBytes(sealed: sealed)
        guard size <= Self.maxSize else {
            throw ModelError(
                .sizeLimitExceeded, "a blob is at most \(Self.maxSize) bytes (64 GiB); this one is \(size)")
        }
        guard Self.chunkBytesRange.contains(chunkBytes) else {
            throw ModelError(.fieldOutOfRange, "a blob's chunk size is 16384…2097152 bytes, got \(chunkBytes)")
        }
        self.size = size
        self.chunkBytes = chunkBytes
        self.sealed = sealed
        self.format = format
        guard chunkCount <= Self.maxChunks else {
            throw ModelError(
                .sizeLimitExceeded,
                "a blob has at most \(Self.maxChunks) chunks; \(size) bytes in chunks of \(chunkBytes) make \(chunkCount)"
            )
        }
    }

    /// Number of chunks.
    public var chunkCount: Int { Int((size + UInt64(chunkBytes) - 1) / UInt64(chunkBytes)) }
    /// Plaintext bytes of chunk `index`.
    public func plainBytes(ofChunk index: Int) -> Int {
        let start = UInt64(index) * UInt64(chunkBytes)
        return Int(min(UInt64(chunkBytes), size - start))
    }
    /// Stored bytes of chunk `index` (the plaintext, plus the tag when sealed).
    public func storedBytes(ofChunk index: Int) -> Int {
        plainBytes(ofChunk: index) + (sealed ? ChaChaPoly.tagLength : 0)
    }
    /// Where chunk `index` starts in the stored file.
    public func storedOffset(ofChunk index: Int) -> UInt64 {
        UInt64(index) * UInt64(Int(chunkBytes) + (sealed ? ChaChaPoly.tagLength : 0))
    }
    /// Bytes of the stored file.
    public var storedSize: UInt64 { size + (sealed ? UInt64(chunkCount * ChaChaPoly.tagLength) : 0) }

    /// The hash of one stored chunk: SHA-256 (BLAKE2b-256 in the first format) of its bytes.
    public func chunkHash(_ stored: UnsafeRawBufferPointer) -> [UInt8] { Self.chunkHash(stored, format: format) }

    /// The hash of one stored chunk of a blob of `format`.
    public static func chunkHash(_ stored: UnsafeRawBufferPointer, format: BlobFormat) -> [UInt8] {
        let h = format.hasher()
        h.update(stored)
        return h.finalize()
    }

    /// Whether `stored` is chunk `index` as `hashes` (32 bytes a chunk, in order) name it: its
    /// length is the layout's and its hash the one at its index.
    public func chunk(_ stored: [UInt8], index: Int, matches hashes: [UInt8]) -> Bool {
        let at = index * 32
        guard index >= 0, index < chunkCount, hashes.count >= at + 32, stored.count == storedBytes(ofChunk: index)
        else { return false }
        return stored.withUnsafeBytes(chunkHash)[...] == hashes[at..<(at + 32)]
    }

    /// The blob id of this layout and these chunk hashes (32 bytes each, in chunk order):
    /// SHA-256 of `"peerlog/blob/v2"` ‖ size (8 bytes, big-endian) ‖ chunk size (4 bytes,
    /// big-endian) ‖ sealed (1 byte) ‖ the hashes; in the first format BLAKE2b-256 of the same
    /// with `"peerlog/blob/v1"`.
    public func id(hashes: [UInt8]) -> BlobID {
        let h = format.hasher()
        h.update(Array("peerlog/blob/v\(format == .sha256 ? 2 : 1)".utf8))
        h.update(Self.bigEndian(size, 8) + Self.bigEndian(UInt64(chunkBytes), 4) + [sealed ? 1 : 0])
        h.update(hashes)
        return try! BlobID(bytes: h.finalize())
    }

    static func bigEndian(_ v: UInt64, _ n: Int) -> [UInt8] {
        (0..<n).map { UInt8(truncatingIfNeeded: v >> (8 * (n - 1 - $0))) }
    }

    /// The nonce of chunk `index`: 4 zero bytes ‖ the index as 8 bytes big-endian. A blob key
    /// seals one blob only, so no nonce repeats under a key.
    public static func nonce(ofChunk index: Int) -> [UInt8] { [0, 0, 0, 0] + bigEndian(UInt64(index), 8) }
}

/// What an entity value holds in place of a large one (docs/PROTOCOL.md §24.2): the blob's id,
/// layout and, in an encrypted group, the key that opens its chunks. The receipt that carries it
/// is sealed like any other in such a group, so only members read the key.
public struct BlobReference: Hashable, Sendable {
    /// The map key that marks a value as a reference: `{"peerlog.blob": {…}}`.
    public static let marker = "peerlog.blob"
    /// The blob.
    public let id: BlobID
    /// Its size, chunking and sealing.
    public let layout: BlobLayout
    /// The 32-byte ChaCha20-Poly1305 key of its chunks (sealed blobs only).
    public let key: SecureBytes?

    /// A reference; `key` is given exactly when `layout.sealed`.
    public init(id: BlobID, layout: BlobLayout, key: SecureBytes?) throws {
        guard (key != nil) == layout.sealed, key.map({ $0.count == ChaChaPoly.keyLength }) ?? true else {
            throw ModelError(.wrongShape, "a sealed blob's reference carries its 32-byte key, and only then")
        }
        self.id = id
        self.layout = layout
        self.key = key
    }

    /// The value as stored: `{"peerlog.blob": {"id": bstr(32), "size": uint, "chunk": uint,
    /// "key": bstr(32)?, "format": 2?}}` (`format` absent in the first format).
    public var cbor: CBOR {
        var m: [String: CBOR] = [
            "id": .bytes(id.bytes), "size": .unsigned(layout.size), "chunk": .unsigned(UInt64(layout.chunkBytes)),
        ]
        if let key { m["key"] = .bytes(key.withUnsafeBytes { Array($0) }) }
        m["format"] = layout.format.wireField
        return .textMap([Self.marker: .textMap(m)])
    }

    /// The reference a value holds, nil when it is not one (a map with the one key
    /// `peerlog.blob` whose map has exactly the fields above, within their limits).
    public init?(value: CBOR) {
        guard case .map(let outer) = value, outer.count == 1, case .map(let m)? = outer[.text(Self.marker)],
            let idBytes = m[.text("id")]?.bytesValue, let id = try? BlobID(bytes: idBytes),
            let size = m[.text("size")]?.unsignedValue, let chunk = m[.text("chunk")]?.unsignedValue,
            chunk <= UInt64(UInt32.max)
        else { return nil }
        let keyBytes = m[.text("key")]?.bytesValue
        let formatField = m[.text("format")]
        guard m.count == 3 + (keyBytes == nil ? 0 : 1) + (formatField == nil ? 0 : 1),
            let format = BlobFormat(wireField: formatField),
            let layout = try? BlobLayout(
                size: size, chunkBytes: UInt32(chunk), sealed: keyBytes != nil, format: format),
            let reference = try? BlobReference(id: id, layout: layout, key: keyBytes.map { SecureBytes($0) })
        else { return nil }
        self = reference
    }

    /// Equal ids, layouts and keys.
    public static func == (l: BlobReference, r: BlobReference) -> Bool {
        l.id == r.id && l.layout == r.layout && l.keyBytes == r.keyBytes
    }
    /// Hashes the id.
    public func hash(into h: inout Hasher) { h.combine(id) }
    var keyBytes: [UInt8]? { key?.withUnsafeBytes { Array($0) } }
}
