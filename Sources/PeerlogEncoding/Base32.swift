/// RFC 4648 base32, lower-case alphabet, no padding: the multibase `b` encoding.
public enum Base32 {
    private static let alphabet = Array("abcdefghijklmnopqrstuvwxyz234567".utf8)
    private static let reverse: [Int8] = {
        var table = [Int8](repeating: -1, count: 256)
        for (i, c) in alphabet.enumerated() { table[Int(c)] = Int8(i) }
        return table
    }()

    /// Lower-case base32 of `bytes`, unpadded; never fails. No `b` prefix: callers add it for the
    /// multibase text form of ids and CIDs (docs/PROTOCOL.md §2).
    public static func encode(_ bytes: [UInt8]) -> String {
        var out = [UInt8]()
        out.reserveCapacity((bytes.count * 8 + 4) / 5)
        var buffer: UInt32 = 0
        var bits = 0
        for b in bytes {
            buffer = buffer << 8 | UInt32(b)
            bits += 8
            while bits >= 5 {
                bits -= 5
                out.append(alphabet[Int((buffer >> UInt32(bits)) & 31)])
            }
        }
        if bits > 0 { out.append(alphabet[Int((buffer << UInt32(5 - bits)) & 31)]) }
        return String(decoding: out, as: UTF8.self)
    }

    public enum DecodingError: Error, Equatable, CustomStringConvertible, Sendable {
        case invalidCharacter(offset: Int)
        case invalidLength(Int)
        case nonZeroTrailingBits

        public var description: String {
            switch self {
            case .invalidCharacter(let o): "invalid base32 character at offset \(o) (expected a-z or 2-7)"
            case .invalidLength(let n): "invalid base32 length \(n)"
            case .nonZeroTrailingBits: "base32 text has non-zero trailing bits (not canonical)"
            }
        }
    }

    /// Strict decoding: lower-case only, no padding, canonical trailing bits.
    public static func decode(_ text: some StringProtocol) throws(DecodingError) -> [UInt8] {
        let chars = Array(text.utf8)
        // Lengths 1, 3 and 6 (mod 8) cannot come from whole bytes.
        guard ![1, 3, 6].contains(chars.count % 8) else { throw .invalidLength(chars.count) }
        var out = [UInt8]()
        out.reserveCapacity(chars.count * 5 / 8)
        var buffer: UInt32 = 0
        var bits = 0
        for (i, c) in chars.enumerated() {
            let v = reverse[Int(c)]
            guard v >= 0 else { throw .invalidCharacter(offset: i) }
            buffer = buffer << 5 | UInt32(v)
            bits += 5
            if bits >= 8 {
                bits -= 8
                out.append(UInt8(truncatingIfNeeded: buffer >> UInt32(bits)))
            }
        }
        guard buffer & ((1 << UInt32(bits)) - 1) == 0 else { throw .nonZeroTrailingBits }
        return out
    }
}
