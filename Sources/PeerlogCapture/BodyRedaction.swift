import PeerlogEncoding
import PeerlogModel

/// `--capture-omit-bodies`: in `receipts` and `commits` messages each receipt container is
/// replaced by the deterministic CBOR of `{"cid", "type", "author", "counter", "omitted"}`
/// (`omitted`: the body's encoded size in bytes); a `blob_chunk`'s `data` is emptied and its
/// size put in `omitted`. Everything else is kept as it was.
enum BodyRedaction {
    static func redact(_ message: [UInt8]) -> [UInt8] {
        guard case .map(var map)? = try? CBORDecoder.decodeStrict(message), let type = map[.text("t")]?.textValue
        else { return message }
        if type == "blob_chunk", let data = map[.text("data")]?.bytesValue {
            map[.text("data")] = .bytes([])
            map[.text("omitted")] = .unsigned(UInt64(data.count))
            return CBOREncoder.encode(.map(map))
        }
        guard type == "receipts" || type == "commits" else { return message }
        let key = CBOR.text(type == "receipts" ? "items" : "receipts")
        guard let items = map[key]?.arrayValue else { return message }
        map[key] = .array(
            items.map { item in
                guard let bytes = item.bytesValue, let r = try? Receipt(encoded: bytes) else { return item }
                return .bytes(CBOREncoder.encode(redacted(r)))
            })
        return CBOREncoder.encode(.map(map))
    }

    static func redacted(_ r: Receipt) -> CBOR {
        .textMap([
            "cid": r.cid.cborLink,
            "type": .text(r.type),
            "author": .bytes(r.author.bytes),
            "counter": .unsigned(r.counter),
            "omitted": .unsigned(UInt64(CBOREncoder.encode(r.body).count)),
        ])
    }
}
