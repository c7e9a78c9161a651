/// What a guest sends first on a pairing connection (docs/PROTOCOL.md §20.9): the magic
/// `"PLPAIR"`, the preamble version 1 as two bytes, and the code's nameplate as a 16-bit
/// big-endian integer, 10 bytes in all. It lets a host serve pairing on the port its Noise
/// peers use: a Noise handshake's first byte is the high byte of a length of at most 689, never
/// `P` (0x50), so the first byte tells the two apart.
public enum PairingPreamble {
    /// `"PLPAIR"` then version 1 (`00 01`).
    public static let magic: [UInt8] = Array("PLPAIR".utf8) + [0, 1]
    /// The whole preamble's length: the magic and the nameplate.
    public static let length = magic.count + 2
    /// The first byte of every pairing connection.
    public static var firstByte: UInt8 { magic[0] }

    /// The preamble naming `nameplate` (1…999).
    public static func bytes(nameplate: Int) -> [UInt8] {
        magic + [UInt8(nameplate >> 8 & 0xff), UInt8(nameplate & 0xff)]
    }

    /// The nameplate of a complete preamble (`length` bytes), or `malformed`.
    public static func nameplate(_ bytes: [UInt8]) throws(PairingError) -> Int {
        guard bytes.count == length, Array(bytes.prefix(magic.count)) == magic else {
            throw PairingError(.malformed, "not a pairing preamble (or another preamble version)")
        }
        let nameplate = Int(bytes[magic.count]) << 8 | Int(bytes[magic.count + 1])
        guard (1...999).contains(nameplate) else {
            throw PairingError(.malformed, "nameplate \(nameplate) is not 1…999")
        }
        return nameplate
    }
}
