import PeerlogEncoding

/// A signed container's fields read where they lie, without building its CBOR value: every
/// receipt and envelope from a peer arrives as a container, and decoding each into a tree (and
/// a receipt's embedded certificate into another, to encode it again as the memo's key) was a
/// quarter of the instructions of parsing it (`peerlog-bench sync 3000` under callgrind).
///
/// Only the one shape core deterministic CBOR allows is read here (§1: keys in bytewise order of
/// their encodings, so `"sig"` first; lengths in their shortest form):
/// `{"sig": bstr(64), <payloadKey>: bstr, [<trailingKey>: one item]}`. Anything else, or a
/// trailing item its own decoder refuses, goes to the general decoder, which accepts exactly
/// what it accepted before and names what is wrong. So both paths accept the same bytes.
package struct ContainerSplit {
    package let signature: [UInt8]
    package let payload: [UInt8]
    /// The bytes after the trailing key (a receipt's certificate container); empty without one.
    package let trailing: [UInt8]

    /// The key text's encoding.
    package static func key(_ text: String) -> [UInt8] { CBOREncoder.encode(.text(text)) }
    static let sigKeyAndHead: [UInt8] = key("sig") + [0x58, 0x40]

    /// Nil unless `bytes` is exactly that shape, at most `maxBytes` long.
    package init?(_ bytes: [UInt8], payloadKey: [UInt8], trailingKey: [UInt8]? = nil, maxBytes: Int) {
        guard bytes.count <= maxBytes, bytes.count > 1, bytes[0] == (trailingKey == nil ? 0xa2 : 0xa3) else {
            return nil
        }
        var at = 1
        func take(_ expected: [UInt8]) -> Bool {
            guard bytes.count - at >= expected.count, bytes[at..<at + expected.count].elementsEqual(expected) else {
                return false
            }
            at += expected.count
            return true
        }
        guard take(Self.sigKeyAndHead), bytes.count - at >= 64 else { return nil }
        let signature = Array(bytes[at..<at + 64])
        at += 64
        guard take(payloadKey), let length = Self.byteStringLength(bytes, at: &at), bytes.count - at >= length else {
            return nil
        }
        let payload = Array(bytes[at..<at + length])
        at += length
        if let trailingKey {
            guard take(trailingKey), at < bytes.count else { return nil }
            trailing = Array(bytes[at...])
        } else {
            guard at == bytes.count else { return nil }
            trailing = []
        }
        (self.signature, self.payload) = (signature, payload)
    }

    /// A byte string's length from its head at `at` (moved past it), only in the shortest form.
    private static func byteStringLength(_ bytes: [UInt8], at: inout Int) -> Int? {
        guard at < bytes.count, bytes[at] >> 5 == 2 else { return nil }
        let info = Int(bytes[at] & 0x1f)
        let width: Int
        switch info {
        case 0..<24:
            at += 1
            return info
        case 24: width = 1
        case 25: width = 2
        case 26: width = 4
        default: return nil  // 8-byte lengths and indefinite strings: no container here is that long
        }
        guard bytes.count - at > width else { return nil }
        var value = 0
        for i in 1...width { value = value << 8 | Int(bytes[at + i]) }
        let shortest = width == 1 ? 24 : 1 << (8 * width / 2)
        guard value >= shortest else { return nil }
        at += 1 + width
        return value
    }
}
