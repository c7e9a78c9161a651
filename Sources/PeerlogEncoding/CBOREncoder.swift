/// Deterministic CBOR encoding (RFC 8949 §4.2.1 "core deterministic encoding"):
/// shortest arguments, definite lengths, map keys sorted by their encoded bytes,
/// floats in the shortest form that keeps the value, NaN as f97e00.
public enum CBOREncoder {
    /// The deterministic encoding of `value` (docs/PROTOCOL.md §1). Never throws; traps on
    /// `.simple(24...31)`, which has no well-formed encoding.
    public static func encode(_ value: CBOR) -> [UInt8] {
        var out = [UInt8]()
        out.reserveCapacity(64)
        append(value, to: &out)
        return out
    }

    /// Appends the deterministic encoding of `value` to `out`: `encode` without a fresh array, for
    /// building larger messages. Traps on `.simple(24...31)` like `encode`.
    public static func append(_ value: CBOR, to out: inout [UInt8]) {
        switch value {
        case .unsigned(let v): appendHead(major: 0, argument: v, to: &out)
        case .negative(let n): appendHead(major: 1, argument: n, to: &out)
        case .bytes(let b):
            appendHead(major: 2, argument: UInt64(b.count), to: &out)
            out.append(contentsOf: b)
        case .text(let s):
            let utf8 = s.utf8
            appendHead(major: 3, argument: UInt64(utf8.count), to: &out)
            out.append(contentsOf: utf8)
        case .array(let items):
            appendHead(major: 4, argument: UInt64(items.count), to: &out)
            for item in items { append(item, to: &out) }
        case .map(let entries):
            appendHead(major: 5, argument: UInt64(entries.count), to: &out)
            let encoded = entries.map { (key: encode($0.key), value: $0.value) }
            for entry in encoded.sorted(by: { $0.key.lexicographicallyPrecedes($1.key) }) {
                out.append(contentsOf: entry.key)
                append(entry.value, to: &out)
            }
        case .tagged(let tag, let inner):
            appendHead(major: 6, argument: tag, to: &out)
            append(inner, to: &out)
        case .bool(let b): out.append(b ? 0xf5 : 0xf4)
        case .null: out.append(0xf6)
        case .undefined: out.append(0xf7)
        case .simple(let v):
            if v < 24 {
                out.append(0xe0 | v)
            } else {
                precondition(v >= 32, "simple values 24...31 are reserved")
                out.append(contentsOf: [0xf8, v])
            }
        case .float(let d): appendFloat(d, to: &out)
        }
    }

    /// The head of a data item: major type in the top 3 bits, shortest argument.
    package static func appendHead(major: UInt8, argument: UInt64, to out: inout [UInt8]) {
        let m = major << 5
        switch argument {
        case 0..<24: out.append(m | UInt8(argument))
        case 24...0xff: out.append(contentsOf: [m | 24, UInt8(argument)])
        case 0x100...0xffff:
            out.append(m | 25)
            appendBigEndian(argument, bytes: 2, to: &out)
        case 0x1_0000...0xffff_ffff:
            out.append(m | 26)
            appendBigEndian(argument, bytes: 4, to: &out)
        default:
            out.append(m | 27)
            appendBigEndian(argument, bytes: 8, to: &out)
        }
    }

    static func appendBigEndian(_ v: UInt64, bytes: Int, to out: inout [UInt8]) {
        for i in stride(from: bytes - 1, through: 0, by: -1) {
            out.append(UInt8(truncatingIfNeeded: v >> (8 * UInt64(i))))
        }
    }

    static func appendFloat(_ d: Double, to out: inout [UInt8]) {
        if let half = FloatBits.halfBits(exactly: d) {
            out.append(0xf9)
            appendBigEndian(UInt64(half), bytes: 2, to: &out)
        } else if let single = Float(exactly: d) {
            out.append(0xfa)
            appendBigEndian(UInt64(single.bitPattern), bytes: 4, to: &out)
        } else {
            out.append(0xfb)
            appendBigEndian(d.bitPattern, bytes: 8, to: &out)
        }
    }
}

/// IEEE 754 half-precision conversion, written out so it does not depend on `Float16` availability.
enum FloatBits {
    /// The half-precision bits of `d` when `d` is exactly representable (NaN maps to 0x7e00).
    static func halfBits(exactly d: Double) -> UInt16? {
        if d.isNaN { return 0x7e00 }
        let sign: UInt16 = d.sign == .minus ? 0x8000 : 0
        let a = d.magnitude
        if a == 0 { return sign }
        if a.isInfinite { return sign | 0x7c00 }
        let e = Int(a.exponent)
        if (-14...15).contains(e) {
            let m = a.significand * 1024  // in [1024, 2048)
            guard m == m.rounded(.towardZero) else { return nil }
            return sign | UInt16(e + 15) << 10 | (UInt16(m) - 1024)
        }
        if e < -14 {
            let m = a * 16_777_216  // subnormal: value = m * 2^-24
            guard m >= 1, m < 1024, m == m.rounded(.towardZero) else { return nil }
            return sign | UInt16(m)
        }
        return nil
    }

    static func double(fromHalf h: UInt16) -> Double {
        let sign: Double = h & 0x8000 != 0 ? -1 : 1
        let exp = Int((h >> 10) & 0x1f)
        let mant = Double(h & 0x3ff)
        switch exp {
        case 0: return sign * mant * 0x1p-24
        case 31: return mant == 0 ? sign * .infinity : .nan
        default: return sign * (1024 + mant) * Double(sign: .plus, exponent: exp - 25, significand: 1)
        }
    }
}
