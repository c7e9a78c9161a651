/// Unsigned LEB128 varints as used by multiformats (at most 9 bytes, minimal encoding).
public enum Varint {
    /// The minimal encoding of `value`, 1 to 10 bytes. Values from 2^63 take 10 bytes, which `decode`
    /// refuses (multiformats allows at most 9).
    public static func encode(_ value: UInt64) -> [UInt8] {
        var v = value
        var out = [UInt8]()
        repeat {
            var byte = UInt8(v & 0x7f)
            v >>= 7
            if v != 0 { byte |= 0x80 }
            out.append(byte)
        } while v != 0
        return out
    }

    /// Reads a varint at `offset`, advancing it; nil when truncated, overlong or not minimal.
    public static func decode(_ bytes: [UInt8], offset: inout Int) -> UInt64? {
        var value: UInt64 = 0
        var shift: UInt64 = 0
        let start = offset
        while offset < bytes.count, offset - start < 9 {
            let b = bytes[offset]
            offset += 1
            value |= UInt64(b & 0x7f) << shift
            if b & 0x80 == 0 {
                // Minimal: a multi-byte varint must not end in a zero byte.
                if b == 0 && offset - start > 1 { return nil }
                return value
            }
            shift += 7
        }
        return nil
    }
}
