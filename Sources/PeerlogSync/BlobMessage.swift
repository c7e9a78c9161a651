import PeerlogEncoding
import PeerlogModel

/// The blob messages of the sync protocol (docs/PROTOCOL.md §24.3), sent to a peer whose hello
/// lists the capability `blobs`. None is a batch: they cost no credit. The asker bounds what is
/// in flight (`SyncLimits.maxBlobChunksPerGet` chunks a request, its own window of requests), so
/// a transfer cannot fill the connection ahead of receipts.
public enum BlobMessage: Hashable, Sendable {
    /// `blob_get`: asks for the blob's chunk hashes (`count` 0) or for chunks
    /// `from..<from + count`, for `group`, which the two share. `id` names the request.
    case get(group: GroupID, blob: BlobID, id: UInt64, from: UInt64, count: UInt64)
    /// `blob_hashes`: the blob's chunk hashes, 32 bytes each in chunk order.
    case hashes(blob: BlobID, id: UInt64, hashes: [UInt8])
    /// `blob_chunk`: chunk `index` as stored (sealed in an encrypted group).
    case chunk(blob: BlobID, id: UInt64, index: UInt64, data: [UInt8])
    /// `blob_missing`: the sender does not serve what request `id` asked for, and why.
    case missing(blob: BlobID, id: UInt64, reason: String)
    /// `blob_have`: the sender holds the whole blob for `group` (sent to the group's relay, which
    /// cannot read the values that reference it, so that it fetches and keeps it). `id` is 0.
    case have(group: GroupID, blob: BlobID, layout: BlobLayout)

    /// The `t` of each message.
    public var type: String {
        switch self {
        case .get: "blob_get"
        case .hashes: "blob_hashes"
        case .chunk: "blob_chunk"
        case .missing: "blob_missing"
        case .have: "blob_have"
        }
    }

    /// The blob a message is about.
    public var blob: BlobID {
        switch self {
        case .get(_, let b, _, _, _), .hashes(let b, _, _), .chunk(let b, _, _, _), .missing(let b, _, _),
            .have(_, let b, _):
            b
        }
    }

    var fields: [String: CBOR] {
        switch self {
        case .get(let g, let b, let id, let from, let count):
            [
                "group": .bytes(g.bytes), "blob": .bytes(b.bytes), "id": .unsigned(id), "from": .unsigned(from),
                "count": .unsigned(count),
            ]
        case .hashes(let b, let id, let hashes):
            ["blob": .bytes(b.bytes), "id": .unsigned(id), "hashes": .bytes(hashes)]
        case .chunk(let b, let id, let index, let data):
            ["blob": .bytes(b.bytes), "id": .unsigned(id), "index": .unsigned(index), "data": .bytes(data)]
        case .missing(let b, let id, let reason):
            ["blob": .bytes(b.bytes), "id": .unsigned(id), "reason": .text(reason)]
        case .have(let g, let b, let layout):
            Self.haveFields(g, b, layout)
        }
    }

    /// `blob_have`'s fields: `format` only past the first format (§24.3).
    static func haveFields(_ g: GroupID, _ b: BlobID, _ layout: BlobLayout) -> [String: CBOR] {
        var f: [String: CBOR] = [
            "group": .bytes(g.bytes), "blob": .bytes(b.bytes), "id": .unsigned(0), "size": .unsigned(layout.size),
            "chunk": .unsigned(UInt64(layout.chunkBytes)), "sealed": .bool(layout.sealed),
        ]
        f["format"] = layout.format.wireField
        return f
    }

    /// The types this version reads.
    static let types: Set<String> = ["blob_get", "blob_hashes", "blob_chunk", "blob_missing", "blob_have"]

    static func decode(_ type: String, _ f: [String: CBOR], limits: SyncLimits) throws(SyncCodecError) -> BlobMessage {
        func value(_ k: String) throws(SyncCodecError) -> CBOR {
            guard let v = f[k] else { throw .malformed("\"\(type)\" lacks \"\(k)\"") }
            return v
        }
        func uint(_ k: String) throws(SyncCodecError) -> UInt64 {
            guard let u = try value(k).unsignedValue else { throw .malformed("\"\(k)\" must be a uint") }
            return u
        }
        func bytes(_ k: String) throws(SyncCodecError) -> [UInt8] {
            guard let b = try value(k).bytesValue else { throw .malformed("\"\(k)\" must be a byte string") }
            return b
        }
        guard let blob = try? BlobID(bytes: try bytes("blob")) else { throw .malformed("\"blob\" must be bstr(32)") }
        let id = try uint("id")
        switch type {
        case "blob_get":
            guard let group = try? GroupID(bytes: try bytes("group")) else {
                throw .malformed("\"group\" must be bstr(16)")
            }
            let count = try uint("count")
            guard count <= UInt64(limits.maxBlobChunksPerGet) else {
                throw .limit("maxBlobChunksPerGet", Int(clamping: count), limits.maxBlobChunksPerGet)
            }
            return .get(group: group, blob: blob, id: id, from: try uint("from"), count: count)
        case "blob_hashes":
            let hashes = try bytes("hashes")
            guard hashes.count % 32 == 0, hashes.count <= BlobLayout.maxChunks * 32 else {
                throw .malformed("\"hashes\" must be 32-byte hashes, at most \(BlobLayout.maxChunks)")
            }
            return .hashes(blob: blob, id: id, hashes: hashes)
        case "blob_have":
            guard let group = try? GroupID(bytes: try bytes("group")) else {
                throw .malformed("\"group\" must be bstr(16)")
            }
            let chunk = try uint("chunk")
            guard let format = BlobFormat(wireField: f["format"]) else {
                throw .malformed("\"format\" must be 2 (§24.1)")
            }
            guard let sealed = try value("sealed").boolValue, chunk <= UInt64(UInt32.max),
                let layout = try? BlobLayout(
                    size: try uint("size"), chunkBytes: UInt32(chunk), sealed: sealed, format: format)
            else { throw .malformed("\"size\", \"chunk\" and \"sealed\" must be a valid blob layout (§24.1)") }
            return .have(group: group, blob: blob, layout: layout)
        case "blob_chunk":
            let data = try bytes("data")
            let most = Int(BlobLayout.chunkBytesRange.upperBound) + 16
            guard data.count <= most else { throw .limit("blob chunk size", data.count, most) }
            return .chunk(blob: blob, id: id, index: try uint("index"), data: data)
        default:
            guard let reason = try value("reason").textValue else { throw .malformed("\"reason\" must be text") }
            guard reason.utf8.count <= limits.maxErrorMessageBytes else {
                throw .limit(
                    "maxErrorMessageBytes: blob_missing reason", reason.utf8.count, limits.maxErrorMessageBytes)
            }
            return .missing(blob: blob, id: id, reason: reason)
        }
    }
}
