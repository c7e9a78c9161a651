import PeerlogEncoding
import PeerlogTestSupport

/// Random CBOR values for property tests. `interop` restricts them to what cbor2 treats as
/// plain data: no simple values, no tags with cbor2 semantics, and map keys whose RFC 7049
/// (length-first) and RFC 8949 (bytewise) orders agree.
struct CBORGenerator {
    var rng: SeededRandom
    var interop = false

    mutating func value(depth: Int = 0) -> CBOR {
        switch Int.random(in: 0..<(depth < 4 ? 10 : 7), using: &rng) {
        case 0: return .unsigned(interesting())
        case 1: return .negative(interesting())
        case 2: return .bytes(rng.bytes([0, 1, 23, 24, 255, 256][Int.random(in: 0..<6, using: &rng)]))
        case 3: return .text(text())
        case 4: return [.bool(true), .bool(false), .null][Int.random(in: 0..<3, using: &rng)]
        case 5:
            return .float(
                [
                    0.0, -0.0, 1.5, 1.1, 65504, 100_000, 3.4028234663852886e38, 1e300, .infinity, -.infinity, -4.1,
                    5.960464477539063e-8, 0.00006103515625, Double(Float(1.1)),
                ][Int.random(in: 0..<14, using: &rng)])
        case 6:
            if interop { return .text(text()) }
            return [.undefined, .simple(16), .simple(255), .simple(32)][Int.random(in: 0..<4, using: &rng)]
        case 7: return .array((0..<Int.random(in: 0..<5, using: &rng)).map { _ in value(depth: depth + 1) })
        case 8:
            return .tagged(
                [1000, 40000, 70000, 5_000_000_000][Int.random(in: 0..<4, using: &rng)], value(depth: depth + 1))
        default:
            var map = [CBOR: CBOR]()
            for _ in 0..<Int.random(in: 0..<5, using: &rng) { map[key(depth: depth)] = value(depth: depth + 1) }
            return .map(map)
        }
    }

    mutating func key(depth: Int) -> CBOR {
        if interop {
            return Bool.random(using: &rng) ? .int(Int64.random(in: -24...23, using: &rng)) : .text(text())
        }
        return Int.random(in: 0..<3, using: &rng) == 0 ? value(depth: depth + 2) : .text(text())
    }

    mutating func interesting() -> UInt64 {
        [
            0, 1, 23, 24, 255, 256, 65535, 65536, 0xffff_ffff, 0x1_0000_0000, .max,
            UInt64.random(in: 0...UInt64.max, using: &rng),
        ][Int.random(in: 0..<12, using: &rng)]
    }

    mutating func text() -> String {
        let alphabet: [Character] = ["a", "é", "€", "𝄞", "z", "\"", "\\", "\n", "\u{7f}"]
        return String(
            (0..<[0, 1, 5, 30][Int.random(in: 0..<4, using: &rng)]).map { _ in
                alphabet[Int.random(in: 0..<alphabet.count, using: &rng)]
            })
    }
}
