import PeerlogEncoding
import PeerlogEngine
import PeerlogModel
import PeerlogSequencer

extension SyncMessage {
    /// Strict, bounded decoding: deterministic CBOR only, no trailing bytes, every field of a
    /// known type present and well typed, every list within its named limit. Unknown keys of
    /// known types and unknown types are tolerated (forward compatibility).
    public static func decode(_ bytes: [UInt8], limits: SyncLimits) throws(SyncCodecError) -> SyncMessage {
        guard bytes.count <= limits.maxMessageBytes else {
            throw .limit("maxMessageBytes: message size", bytes.count, limits.maxMessageBytes)
        }
        let widest = max(
            limits.maxGroupsPerHello, limits.maxAuthorsPerVector, limits.maxBatchItems, limits.maxCIDsPerRequest,
            limits.maxHelloListItems, limits.maxRevocationsPerMessage)
        let decoder = CBORDecoder(
            mode: .strict,
            limits: .init(
                maxDepth: 4, maxStringBytes: limits.maxMessageBytes,
                maxCollectionCount: widest + 1, maxInputBytes: limits.maxMessageBytes))
        let value: CBOR
        do { value = try decoder.decode(bytes) } catch {
            if error.code == .sizeLimitExceeded || error.code == .depthLimitExceeded {
                throw SyncCodecError(.limit, "\(error)")
            }
            throw .malformed("not deterministic CBOR: \(error)")
        }
        guard let map = value.mapValue else { throw .malformed("a message must be a map") }
        var fields = [String: CBOR]()
        for (k, v) in map {
            guard let key = k.textValue else { throw .malformed("message keys must be text") }
            fields[key] = v
        }
        let f = Fields(map: fields, limits: limits)
        guard let type = fields["t"]?.textValue else { throw .malformed("message lacks text field \"t\"") }
        switch type {
        case "hello":
            let versions = try f.array("versions", limit: limits.maxHelloListItems, name: "maxHelloListItems: versions")
                .map { v throws(SyncCodecError) in
                    guard let u = v.unsignedValue else { throw .malformed("\"versions\" must hold uints") }
                    return u
                }
            let caps = try f.array(
                "capabilities", limit: limits.maxHelloListItems, name: "maxHelloListItems: capabilities"
            ).map { v throws(SyncCodecError) in
                guard let s = v.textValue, (1...64).contains(s.utf8.count) else {
                    throw .malformed("\"capabilities\" must hold text of 1-64 bytes")
                }
                return s
            }
            let groups = try f.array("groups", limit: limits.maxGroupsPerHello, name: "maxGroupsPerHello").map {
                v throws(SyncCodecError) in try groupID(v, "groups")
            }
            return .hello(versions: versions, capabilities: caps, groups: groups)
        case "vector":
            var authors = [AuthorCounter]()
            for pair in try f.array("authors", limit: limits.maxAuthorsPerVector, name: "maxAuthorsPerVector") {
                guard let p = pair.arrayValue, p.count == 2, let d = p[0].bytesValue, let c = p[1].unsignedValue,
                    let device = try? DeviceID(bytes: d)
                else {
                    throw .malformed("\"authors\" must hold [bstr(32), uint] pairs")
                }
                if let last = authors.last, !(last.author < device) {
                    throw .malformed("\"authors\" must be sorted by device, without duplicates")
                }
                authors.append(AuthorCounter(author: device, counter: c))
            }
            return .vector(group: try f.group(), committed: try f.uint("committed"), authors: authors)
        case "receipts", "envelopes":
            let maxItem = type == "receipts" ? Receipt.maxEncodedBytes : Envelope.maxEncodedBytes
            var total = 0
            let items = try f.array("items", limit: limits.maxBatchItems, name: "maxBatchItems").map {
                v throws(SyncCodecError) in
                guard let b = v.bytesValue else { throw .malformed("\"items\" must hold byte strings") }
                guard b.count <= maxItem else { throw .limit("item size", b.count, maxItem) }
                total += b.count
                return b
            }
            guard total <= limits.maxBatchBytes else {
                throw .limit("maxBatchBytes: batch bytes", total, limits.maxBatchBytes)
            }
            let g = try f.group()
            return type == "receipts" ? .receipts(group: g, items: items) : .envelopes(group: g, items: items)
        case "commits":
            var total = 0
            func items(_ key: String, maxItem: Int) throws(SyncCodecError) -> [[UInt8]] {
                try f.array(key, limit: limits.maxBatchItems, name: "maxBatchItems: \(key)").map {
                    v throws(SyncCodecError) in
                    guard let b = v.bytesValue else { throw .malformed("\"\(key)\" must hold byte strings") }
                    guard b.count <= maxItem else { throw .limit("item size", b.count, maxItem) }
                    total += b.count
                    return b
                }
            }
            let receipts = try items("receipts", maxItem: Receipt.maxEncodedBytes)
            let envelopes = try items("envelopes", maxItem: Envelope.maxEncodedBytes)
            guard total <= limits.maxBatchBytes else {
                throw .limit("maxBatchBytes: batch bytes", total, limits.maxBatchBytes)
            }
            return .commits(group: try f.group(), receipts: receipts, envelopes: envelopes)
        case "snapshot":
            func bytes(_ key: String, max: Int) throws(SyncCodecError) -> [UInt8] {
                guard let b = fields[key]?.bytesValue else { throw .malformed("\"\(key)\" must be a byte string") }
                guard b.count <= max else { throw .limit("\(key) size", b.count, max) }
                return b
            }
            func pairs(_ key: String) throws(SyncCodecError) -> [[[UInt8]]] {
                try f.array(key, limit: limits.maxSnapshotKeyHistory, name: "maxSnapshotKeyHistory").map {
                    v throws(SyncCodecError) in
                    guard let pair = v.arrayValue, pair.count == 2, let r = pair[0].bytesValue,
                        let e = pair[1].bytesValue, r.count <= Receipt.maxEncodedBytes,
                        e.count <= Envelope.maxEncodedBytes
                    else { throw .malformed("\"\(key)\" must hold [receipt, envelope] byte string pairs") }
                    return [r, e]
                }
            }
            let keys = try pairs("keys")
            // Optional: a sender from before it sends none (§23.3).
            let authority = fields["authority"] == nil ? [] : try pairs("authority")
            // The snapshot itself, or the blob that holds a bigger one (§23.3): exactly one.
            var blob: BlobReference?
            if let value = fields["snapshot_blob"] {
                guard fields["snapshot"] == nil else {
                    throw .malformed("a snapshot has \"snapshot\" or \"snapshot_blob\", not both")
                }
                guard let reference = BlobReference(value: value),
                    reference.layout.size <= UInt64(GroupSnapshot.maxEncodedBytes)
                else {
                    throw .malformed(
                        "\"snapshot_blob\" must be a blob reference (§24.2) of at most \(GroupSnapshot.maxEncodedBytes) bytes"
                    )
                }
                blob = reference
            }
            return .snapshot(
                group: try f.group(),
                SnapshotBundle(
                    snapshot: blob == nil ? try bytes("snapshot", max: GroupSnapshot.maxInlineBytes) : [],
                    anchorEnvelope: try bytes("anchor", max: Envelope.maxEncodedBytes),
                    anchorReceipt: try bytes("anchor_receipt", max: Receipt.maxEncodedBytes), keyHistory: keys,
                    authorityHistory: authority, blob: blob))
        case "request":
            let g = try f.group()
            let id = try f.uint("id")
            let present = ["after", "from", "cids"].filter { fields[$0] != nil }
            guard present.count == 1 else {
                throw .malformed("a request has exactly one of \"after\", \"from\"/\"to\", \"cids\"")
            }
            if fields["after"] != nil { return .request(group: g, id: id, what: .after(try f.uint("after"))) }
            if fields["cids"] != nil {
                let cids = try f.array("cids", limit: limits.maxCIDsPerRequest, name: "maxCIDsPerRequest").map {
                    v throws(SyncCodecError) in
                    guard let cid = try? CID(cborLink: v) else { throw .malformed("\"cids\" must hold CID links") }
                    return cid
                }
                guard !cids.isEmpty else { throw .malformed("\"cids\" is empty") }
                return .request(group: g, id: id, what: .cids(cids))
            }
            let from = try f.uint("from")
            let to = try f.uint("to")
            guard from >= 1, from <= to else { throw .malformed("request range must have 1 <= from <= to") }
            if let a = fields["author"] {
                guard let d = a.bytesValue, let author = try? DeviceID(bytes: d) else {
                    throw .malformed("\"author\" must be bstr(32)")
                }
                return .request(group: g, id: id, what: .authorCounters(author: author, from: from, to: to))
            }
            return .request(group: g, id: id, what: .seqRange(from: from, to: to))
        case "credit":
            let n = try f.uint("n")
            guard n >= 1 else { throw .malformed("credit must be at least 1") }
            return .credit(n)
        case "caught_up": return .caughtUp(group: try f.group())
        case "ping": return .ping
        case "done": return .done(group: try f.group(), id: try f.uint("id"))
        case "error":
            let code = try f.text("code")
            let message = try f.text("message")
            guard message.utf8.count <= limits.maxErrorMessageBytes else {
                throw .limit("maxErrorMessageBytes", message.utf8.count, limits.maxErrorMessageBytes)
            }
            return .error(code: code, message: message)
        case "election":
            let group = try f.group()
            guard let message = try SequencerMessage<CID>.decode(fields) else {
                return .unknown(type: "election/\(fields["kind"]?.textValue ?? "")")
            }
            return .election(group: group, message)
        case "refused":
            let items = try f.array("items", limit: limits.maxBatchItems, name: "maxBatchItems: refused").map {
                v throws(SyncCodecError) in
                guard let pair = v.arrayValue, pair.count == 2, let cid = try? CID(cborLink: pair[0]),
                    let reason = pair[1].textValue
                else {
                    throw .malformed("\"items\" must hold [CID link, text] pairs")
                }
                guard reason.utf8.count <= limits.maxErrorMessageBytes else {
                    throw .limit("maxErrorMessageBytes: refusal reason", reason.utf8.count, limits.maxErrorMessageBytes)
                }
                return RefusedReceipt(cid: cid, reason: reason)
            }
            guard !items.isEmpty else { throw .malformed("\"items\" is empty") }
            return .refused(group: try f.group(), items: items)
        case "unshared":
            let reason = try f.text("reason")
            guard reason.utf8.count <= limits.maxErrorMessageBytes else {
                throw .limit("maxErrorMessageBytes: unshared reason", reason.utf8.count, limits.maxErrorMessageBytes)
            }
            return .unshared(group: try f.group(), reason: reason)
        case "revocations":
            let items = try f.array(
                "items", limit: limits.maxRevocationsPerMessage, name: "maxRevocationsPerMessage"
            ).map { v throws(SyncCodecError) in
                guard let b = v.bytesValue else { throw .malformed("\"items\" must hold byte strings") }
                guard b.count <= DeviceRevocation.maxEncodedBytes else {
                    throw .limit("revocation size", b.count, DeviceRevocation.maxEncodedBytes)
                }
                return b
            }
            guard !items.isEmpty else { throw .malformed("\"items\" is empty") }
            return .revocations(items: items)
        case _ where BlobMessage.types.contains(type):
            return .blob(try BlobMessage.decode(type, fields, limits: limits))
        default:
            return .unknown(type: type)
        }
    }

    static func groupID(_ v: CBOR, _ key: String) throws(SyncCodecError) -> GroupID {
        guard let b = v.bytesValue, let g = try? GroupID(bytes: b) else {
            throw .malformed("\"\(key)\" must be bstr(16) group ids")
        }
        return g
    }
}

/// Typed field access that names the field in its errors.
private struct Fields {
    let map: [String: CBOR]
    let limits: SyncLimits

    func value(_ key: String) throws(SyncCodecError) -> CBOR {
        guard let v = map[key] else { throw .malformed("\"\(map["t"]?.textValue ?? "?")\" lacks \"\(key)\"") }
        return v
    }

    func uint(_ key: String) throws(SyncCodecError) -> UInt64 {
        guard let u = try value(key).unsignedValue else { throw .malformed("\"\(key)\" must be a uint") }
        return u
    }

    func text(_ key: String) throws(SyncCodecError) -> String {
        guard let s = try value(key).textValue else { throw .malformed("\"\(key)\" must be text") }
        return s
    }

    func array(_ key: String, limit: Int, name: String) throws(SyncCodecError) -> [CBOR] {
        guard let a = try value(key).arrayValue else { throw .malformed("\"\(key)\" must be an array") }
        guard a.count <= limit else { throw .limit(name, a.count, limit) }
        return a
    }

    func group() throws(SyncCodecError) -> GroupID { try SyncMessage.groupID(try value("group"), "group") }
}
