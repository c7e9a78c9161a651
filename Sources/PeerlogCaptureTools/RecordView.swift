import PeerlogCapture
import PeerlogEncoding
import PeerlogModel

/// One receipt or envelope inside a batch message, as `capture show` names it.
package struct ItemView: Sendable {
    /// Whether the item is a receipt container (§3.2) or an envelope (§3.4, §3.5).
    package enum Kind: String, Sendable { case receipt, envelope }
    /// Receipt or envelope, from the batch array the item came in.
    package let kind: Kind
    /// The receipt's CID; for an envelope, the CID of the receipt it sequences. Nil when the item does not parse.
    package let cid: CID?
    /// receipt: type, author, counter (and `omitted` body size); envelope: seq, sequencer, term (and run).
    package let fields: [(String, String)]
    /// Why the item does not parse (then `cid` is nil and `fields` empty).
    package let problem: String?

    /// One line for a transcript: kind, CID (`?` if unknown) and `name=value` fields, or kind and problem.
    package var summary: String {
        if let problem { return "\(kind.rawValue) (\(problem))" }
        let named = fields.map { "\($0.0)=\($0.1)" }.joined(separator: " ")
        return "\(kind.rawValue) \(cid?.string ?? "?") \(named)"
    }
}

/// A capture record decoded for people and scripts: message type, group, items.
package struct RecordView: Sendable {
    /// The record's number, as the caller counts (`capture show` starts at 1).
    package let index: Int
    /// The record shown.
    package let record: CaptureRecord
    /// The sync message type (`hello`, `receipts`, …), or `opened` / `closed`.
    package let type: String
    /// The message's `group`; nil for `opened` and `closed`, messages without one, or an invalid group id.
    package let group: GroupID?
    /// Short description of the other fields.
    package let detail: String
    /// The receipts and envelopes of a batch message (`items`, `receipts`, `envelopes`); empty for other records.
    package let items: [ItemView]
    /// The message with its items and their payloads decoded (for `--verbose` and `--json`).
    package let expanded: CBOR?
    /// Why the message could not be decoded, if it could not.
    package let problem: String?

    /// Decodes `record` for display; never fails: what does not decode is described in `problem` and `detail`.
    /// Sealed receipt bodies (§22.3) under a key in `keys` are shown opened (`plaintext`).
    package init(index: Int, record: CaptureRecord, keys: EpochKeyLog = EpochKeyLog()) {
        self.index = index
        self.record = record
        switch record.kind {
        case .opened:
            type = "opened"
            group = nil
            items = []
            expanded = Self.expand(container: record.data, payloadKey: "certificate")
            problem = nil
            let cert = try? DeviceCertificate(encoded: record.data)
            detail =
                cert.map {
                    "\(record.direction == .outbound ? "dialed" : "accepted") device \($0.device) \"\($0.name)\" identity \($0.identity)"
                } ?? "certificate does not parse"
        case .closed:
            type = "closed"
            group = nil
            items = []
            expanded = .text(String(decoding: record.data, as: UTF8.self))
            problem = nil
            detail = String(decoding: record.data, as: UTF8.self)
        case .message:
            let decoded: CBOR
            do { decoded = try CBORDecoder(mode: .lenient).decode(record.data) } catch {
                type = "undecodable"
                group = nil
                items = []
                expanded = nil
                problem = "\(error)"
                detail = "\(record.data.count) bytes: \(error)"
                return
            }
            problem = nil
            type = decoded["t"]?.textValue ?? "?"
            group = decoded["group"]?.bytesValue.flatMap { try? GroupID(bytes: $0) }
            var items = [ItemView]()
            for key in ["items", "receipts", "envelopes"] {
                let isEnvelope = key == "envelopes" || (key == "items" && type == "envelopes")
                for item in decoded[key]?.arrayValue ?? [] {
                    items.append(
                        Self.item(
                            item.bytesValue ?? [], envelope: isEnvelope, omitted: record.bodiesOmitted, keys: keys))
                }
            }
            self.items = items
            expanded = Self.expandMessage(decoded, keys: keys)
            detail = Self.detail(decoded, type: type, items: items)
        }
    }

    /// A message's `"t"` without decoding the rest into views (nil when it is not a CBOR map).
    package static func messageType(_ data: [UInt8]) -> String? {
        (try? CBORDecoder(mode: .lenient).decode(data))?["t"]?.textValue
    }

    static func item(_ bytes: [UInt8], envelope: Bool, omitted: Bool, keys: EpochKeyLog) -> ItemView {
        if envelope {
            do {
                let e = try Envelope(encoded: bytes)
                var fields = [("seq", "\(e.seq)"), ("sequencer", e.sequencer.short), ("term", "\(e.term)")]
                // A batched run item (PROTOCOL.md §3.5): which run its one signature covers.
                if let run = e.run { fields.append(("run", "\(run.firstSeq)+\(run.count)")) }
                return ItemView(kind: .envelope, cid: e.receipt, fields: fields, problem: nil)
            } catch { return ItemView(kind: .envelope, cid: nil, fields: [], problem: "\(error)") }
        }
        if omitted, let m = try? CBORDecoder.decodeStrict(bytes), let link = m["cid"],
            let cid = try? CID(cborLink: link)
        {
            let author = m["author"]?.bytesValue.flatMap { try? DeviceID(bytes: $0) }
            return ItemView(
                kind: .receipt, cid: cid,
                fields: [
                    ("type", m["type"]?.textValue ?? "?"), ("author", author?.short ?? "?"),
                    ("counter", "\(m["counter"]?.unsignedValue ?? 0)"),
                    ("body", "omitted (\(m["omitted"]?.unsignedValue ?? 0) bytes)"),
                ], problem: nil)
        }
        do {
            let r = try Receipt(encoded: bytes)
            var fields = [("type", r.type), ("author", r.author.short), ("counter", "\(r.counter)")]
            switch keys.open(r) {
            case .plain: break
            case .sealed(let id): fields.append(("sealed", "key \(id)"))
            case .opened(let body): fields.append(("plaintext", body.diagnostic(pretty: false)))
            case .broken(let why): fields.append(("sealed", "does not open: \(why)"))
            }
            return ItemView(kind: .receipt, cid: r.cid, fields: fields, problem: nil)
        } catch { return ItemView(kind: .receipt, cid: nil, fields: [], problem: "\(error)") }
    }

    static func detail(_ m: CBOR, type: String, items: [ItemView]) -> String {
        func u(_ k: String) -> String { m[k]?.unsignedValue.map(String.init) ?? "?" }
        switch type {
        case "hello":
            let versions = (m["versions"]?.arrayValue ?? []).compactMap(\.unsignedValue).map(String.init).joined(
                separator: ",")
            let caps = (m["capabilities"]?.arrayValue ?? []).compactMap(\.textValue).joined(separator: ",")
            let groups = (m["groups"]?.arrayValue ?? []).compactMap {
                $0.bytesValue.flatMap { try? GroupID(bytes: $0) }?.string
            }
            return "versions=[\(versions)] capabilities=[\(caps)] groups=[\(groups.joined(separator: ","))]"
        case "vector":
            return "committed=\(u("committed")) authors=\(m["authors"]?.arrayValue?.count ?? 0)"
        case "receipts", "envelopes", "commits":
            return "\(items.count) items"
        case "request":
            let author = m["author"]?.bytesValue.flatMap { try? DeviceID(bytes: $0) }
            if let author { return "id=\(u("id")) author=\(author.short) from=\(u("from")) to=\(u("to"))" }
            if m["after"] != nil { return "id=\(u("id")) after=\(u("after"))" }
            if let cids = m["cids"]?.arrayValue { return "id=\(u("id")) cids=\(cids.count)" }
            return "id=\(u("id")) from=\(u("from")) to=\(u("to"))"
        case "credit": return "n=\(u("n"))"
        case "done": return "id=\(u("id"))"
        case "error": return "code=\(m["code"]?.textValue ?? "?") message=\(m["message"]?.textValue ?? "?")"
        case "election":
            var text = "\(m["kind"]?.textValue ?? "?") term=\(u("term"))"
            if let entries = m["entries"]?.arrayValue {
                text += " prev=\(u("prev_seq")) entries=\(entries.count) commit=\(u("commit"))"
            }
            if let granted = m["granted"]?.boolValue { text += " granted=\(granted)" }
            if let success = m["success"]?.boolValue { text += " success=\(success) match=\(u("match"))" }
            return text
        case "blob_get", "blob_hashes", "blob_chunk", "blob_missing", "blob_have":
            let blob = (m["blob"]?.bytesValue.flatMap { try? BlobID(bytes: $0) }?.string).map { String($0.prefix(9)) }
            var text = "blob=\(blob ?? "?")… id=\(u("id"))"
            switch type {
            case "blob_get": text += " from=\(u("from")) count=\(u("count"))"
            case "blob_hashes": text += " hashes=\((m["hashes"]?.bytesValue?.count ?? 0) / 32)"
            case "blob_chunk":
                let size = m["omitted"]?.unsignedValue.map { "\($0) bytes omitted" }
                text += " index=\(u("index")) \(size ?? "\(m["data"]?.bytesValue?.count ?? 0) bytes")"
            case "blob_missing": text += " reason=\(m["reason"]?.textValue ?? "?")"
            default: text += " size=\(u("size")) chunk=\(u("chunk"))"
            }
            return text
        default: return ""
        }
    }

    /// Decodes item containers in batch arrays, and the payloads inside them, for display; a
    /// receipt whose sealed body opens with `keys` gets a `plaintext` entry beside its payload.
    static func expandMessage(_ m: CBOR, keys: EpochKeyLog) -> CBOR {
        guard case .map(var map) = m else { return m }
        for key in ["items", "receipts", "envelopes"] {
            guard let items = map[.text(key)]?.arrayValue else { continue }
            map[.text(key)] = .array(
                items.map { item in
                    guard let bytes = item.bytesValue else { return item }
                    if case .map(var c)? = expand(container: bytes, payloadKey: "receipt") {
                        if keys.count > 0, let r = try? Receipt(encoded: bytes), case .opened(let body) = keys.open(r) {
                            c[.text("plaintext")] = body
                        }
                        return .map(c)
                    }
                    if let c = expand(container: bytes, payloadKey: "envelope") { return c }
                    return (try? CBORDecoder(mode: .lenient).decode(bytes)) ?? item
                })
        }
        return .map(map)
    }

    /// A signed container with its payload (and a nested certificate's) decoded, or nil.
    static func expand(container bytes: [UInt8], payloadKey: String) -> CBOR? {
        guard case .map(var map)? = try? CBORDecoder(mode: .lenient).decode(bytes),
            let payload = map[.text(payloadKey)]?.bytesValue,
            let decoded = try? CBORDecoder(mode: .lenient).decode(payload)
        else { return nil }
        map[.text(payloadKey)] = decoded
        if let cert = map[.text("certificate")]?.mapValue, let p = cert[.text("certificate")]?.bytesValue,
            let d = try? CBORDecoder(mode: .lenient).decode(p)
        {
            var c = cert
            c[.text("certificate")] = d
            map[.text("certificate")] = .map(c)
        }
        return .map(map)
    }
}
