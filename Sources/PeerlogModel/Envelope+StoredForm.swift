import PeerlogEncoding

/// A single envelope's payload as a store keeps it (docs/PROTOCOL.md §10): of its seven fields,
/// `group`, `seq`, `cid` and `term` are also the row's (the CID from its receipt's row) and `v`
/// is 1, so the row keeps the other two as a CBOR array `[sequencer, received_at]`: 42 bytes or
/// so instead of about 150. A read puts the payload back together, byte for byte what was
/// signed: strict decoding (§1) makes every received payload the deterministic encoding of its
/// fields. A payload stored whole (a CBOR map, as every row was before this form) reads as it is.
extension Envelope {
    /// The payload's stored form; nil for a run item (its store keeps the run once, §3.5) or a
    /// payload that would not come back exactly (then the store keeps it whole).
    package var storedSingle: [UInt8]? {
        guard run == nil,
            Self.singlePayload(
                group: group, seq: seq, receipt: receipt, term: term, sequencer: sequencer.bytes,
                receivedAt: receivedAt) == payload
        else { return nil }
        var out: [UInt8] = [0x82, 0x58, 0x20]  // array(2), bstr(32)
        out += sequencer.bytes
        CBOREncoder.appendHead(major: 0, argument: receivedAt, to: &out)
        return out
    }

    /// The payload a single envelope's row stands for, not parsed (what a store sends): `stored`
    /// is its stored form or its payload whole, the other fields are the row's. Throws a
    /// `ModelError` for bytes that are neither.
    package static func payload(
        stored: [UInt8], group: GroupID, seq: UInt64, receipt: CID, term: UInt64
    ) throws -> [UInt8] {
        switch stored.first.map({ $0 >> 5 }) {
        case 5?:
            return stored
        case 4?:
            guard let fields = try? CBORDecoder().decode(stored).arrayValue, fields.count == 2,
                let key = fields[0].bytesValue, key.count == 32, case .unsigned(let receivedAt) = fields[1]
            else {
                throw ModelError(.wrongShape, "a stored envelope payload is not [sequencer, received_at]")
            }
            return singlePayload(
                group: group, seq: seq, receipt: receipt, term: term, sequencer: key, receivedAt: receivedAt)
        default:
            throw ModelError(.wrongShape, "a stored envelope payload is neither a payload nor its stored form")
        }
    }
}
