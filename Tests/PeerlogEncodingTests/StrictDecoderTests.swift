import PeerlogEncoding
import PeerlogTestSupport
import Testing

/// Table-driven: malformed, truncated, non-canonical and oversized input, each with its exact error.
struct StrictDecoderTests {
    struct Case: Sendable, CustomStringConvertible {
        let hex: String
        let code: CBORError.Code
        let offset: Int
        var description: String { "\(hex) -> \(code) @\(offset)" }
    }

    static let cases: [Case] = [
        Case(hex: "", code: .truncated, offset: 0),
        Case(hex: "18", code: .truncated, offset: 1),
        Case(hex: "1a0000", code: .truncated, offset: 1),
        Case(hex: "1817", code: .nonShortestArgument, offset: 0),
        Case(hex: "190017", code: .nonShortestArgument, offset: 0),
        Case(hex: "1900ff", code: .nonShortestArgument, offset: 0),
        Case(hex: "1a0000ffff", code: .nonShortestArgument, offset: 0),
        Case(hex: "1b00000000ffffffff", code: .nonShortestArgument, offset: 0),
        Case(hex: "3817", code: .nonShortestArgument, offset: 0),
        Case(hex: "5801ff", code: .nonShortestArgument, offset: 0),
        Case(hex: "d9002a00", code: .nonShortestArgument, offset: 0),
        Case(hex: "5f4100ff", code: .indefiniteLength, offset: 0),
        Case(hex: "7f6161ff", code: .indefiniteLength, offset: 0),
        Case(hex: "9fff", code: .indefiniteLength, offset: 0),
        Case(hex: "bfff", code: .indefiniteLength, offset: 0),
        Case(hex: "8101ff", code: .trailingBytes, offset: 2),
        Case(hex: "ff", code: .unexpectedBreak, offset: 0),
        Case(hex: "1c", code: .reservedAdditionalInfo, offset: 0),
        Case(hex: "5d", code: .reservedAdditionalInfo, offset: 0),
        Case(hex: "fe", code: .reservedAdditionalInfo, offset: 0),
        Case(hex: "1f", code: .reservedAdditionalInfo, offset: 0),
        Case(hex: "0000", code: .trailingBytes, offset: 1),
        Case(hex: "a2616201616101", code: .unsortedMapKeys, offset: 4),
        Case(hex: "a2616101616102", code: .duplicateMapKey, offset: 4),
        Case(hex: "a21864020a01", code: .unsortedMapKeys, offset: 4),
        // RFC 7049 length-first order is not RFC 8949 bytewise order: {-1: 1, 24: 2} is refused.
        Case(hex: "a22001181802", code: .unsortedMapKeys, offset: 3),
        Case(hex: "a1", code: .truncated, offset: 0),
        Case(hex: "a10a", code: .truncated, offset: 0),
        Case(hex: "a20a01", code: .truncated, offset: 0),
        Case(hex: "a20a010b", code: .truncated, offset: 0),
        Case(hex: "a20a010b18", code: .truncated, offset: 5),
        Case(hex: "62c328", code: .invalidUTF8, offset: 0),
        Case(hex: "63eda080", code: .invalidUTF8, offset: 0),
        Case(hex: "61ff", code: .invalidUTF8, offset: 0),
        Case(hex: "f818", code: .invalidSimpleValue, offset: 0),
        Case(hex: "f800", code: .invalidSimpleValue, offset: 0),
        Case(hex: "fa3fc00000", code: .nonPreferredFloat, offset: 0),
        Case(hex: "fb3ff8000000000000", code: .nonPreferredFloat, offset: 0),
        Case(hex: "fb3ff19999a0000000", code: .nonPreferredFloat, offset: 0),
        Case(hex: "f97e01", code: .nonCanonicalNaN, offset: 0),
        Case(hex: "f9fe00", code: .nonCanonicalNaN, offset: 0),
        Case(hex: "fa7fc00000", code: .nonCanonicalNaN, offset: 0),
        Case(hex: "fb7ff8000000000000", code: .nonCanonicalNaN, offset: 0),
        Case(hex: "81", code: .truncated, offset: 0),
        Case(hex: "8201", code: .truncated, offset: 0),
        Case(hex: "9bffffffffffffffff", code: .sizeLimitExceeded, offset: 0),
        Case(hex: "5bffffffffffffffff00", code: .sizeLimitExceeded, offset: 0),
        Case(hex: "5a0001000000", code: .truncated, offset: 0),
        Case(hex: "8163", code: .truncated, offset: 1),
        Case(hex: "d9", code: .truncated, offset: 1),
        Case(hex: "c1", code: .truncated, offset: 1),
    ]

    @Test(arguments: cases)
    func refused(c: Case) {
        do {
            let v = try CBORDecoder.decodeStrict(TestSupport.bytes(hex: c.hex))
            Issue.record("accepted \(c.hex) as \(v)")
        } catch {
            #expect(error.code == c.code, "\(error)")
            #expect(error.offset == c.offset, "\(error)")
        }
    }

    static func nested(_ depth: Int) -> [UInt8] { [UInt8](repeating: 0x81, count: depth) + [0x00] }

    @Test func depthLimitBoundary() throws {
        let limit = CBORDecoder.defaultMaxDepth
        #expect(throws: Never.self) { try CBORDecoder.decodeStrict(Self.nested(limit)) }
        #expect(throws: CBORError(.depthLimitExceeded, at: limit)) {
            try CBORDecoder.decodeStrict(Self.nested(limit + 1))
        }
        // Tags count as nesting too.
        let tags = [UInt8](repeating: 0xc1, count: limit + 1) + [0x00]
        #expect(throws: CBORError(.depthLimitExceeded, at: limit)) { try CBORDecoder.decodeStrict(tags) }
        // Very deep input fails cleanly instead of exhausting the stack.
        #expect(throws: CBORError.self) { try CBORDecoder.decodeStrict(Self.nested(1_000_000)) }
    }

    @Test func sizeLimitBoundaries() throws {
        let small = CBORDecoder(limits: .init(maxStringBytes: 4, maxCollectionCount: 3, maxInputBytes: 16))
        #expect(try small.decode([0x44, 1, 2, 3, 4]) == .bytes([1, 2, 3, 4]))
        #expect(throws: CBORError(.sizeLimitExceeded, at: 0)) { try small.decode([0x45, 1, 2, 3, 4, 5]) }
        #expect(try small.decode([0x83, 1, 2, 3]) == [1, 2, 3])
        #expect(throws: CBORError(.sizeLimitExceeded, at: 0)) { try small.decode([0x84, 1, 2, 3, 4]) }
        let input = CBORDecoder(limits: .init(maxInputBytes: 16))
        #expect(try input.decode([0x4f] + [UInt8](repeating: 0, count: 15)) == .bytes([UInt8](repeating: 0, count: 15)))
        #expect(throws: CBORError(.sizeLimitExceeded, at: 0)) {
            try input.decode([0x50] + [UInt8](repeating: 0, count: 16))
        }
    }

    @Test func canonicalFloatsAndSimpleValuesAreAccepted() throws {
        for hex in [
            "f90000", "f98000", "f93e00", "f97bff", "fa47c35000", "fb3ff199999999999a", "f97c00", "f97e00", "f90001",
            "f7", "f0", "f820", "f8ff",
        ] {
            let bytes = TestSupport.bytes(hex: hex)
            #expect(CBOREncoder.encode(try CBORDecoder.decodeStrict(bytes)) == bytes, "\(hex)")
        }
    }

    /// Mutating valid encodings: the decoder never crashes, and anything strict accepts is canonical.
    @Test func mutationsNeverCrashAndStrictAcceptanceImpliesCanonical() {
        var gen = CBORGenerator(rng: SeededRandom(seed: 2024))
        var rng = SeededRandom(seed: 99)
        var accepted = 0
        for _ in 0..<20_000 {
            var bytes = CBOREncoder.encode(gen.value())
            switch Int.random(in: 0..<4, using: &rng) {
            case 0:
                if !bytes.isEmpty {
                    bytes[Int.random(in: 0..<bytes.count, using: &rng)] ^= UInt8.random(in: 1...255, using: &rng)
                }
            case 1: if !bytes.isEmpty { bytes.removeLast(Int.random(in: 1...bytes.count, using: &rng)) }
            case 2:
                bytes.insert(UInt8.random(in: 0...255, using: &rng), at: Int.random(in: 0...bytes.count, using: &rng))
            default: bytes += rng.bytes(Int.random(in: 1...4, using: &rng))
            }
            if let v = try? CBORDecoder.decodeStrict(bytes) {
                accepted += 1
                if CBOREncoder.encode(v) != bytes {
                    Issue.record("strict accepted non-canonical \(TestSupport.hex(bytes))")
                    return
                }
            }
            _ = try? CBORDecoder(mode: .lenient).decode(bytes)
        }
        #expect(accepted > 100, "the mutations should leave some valid items")
    }
}
