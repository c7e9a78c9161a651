import Foundation
import PeerlogEncoding
import PeerlogTestSupport
import Testing

/// RFC 8949 Appendix A, every item.
struct AppendixATests {
    struct Item: Sendable, CustomStringConvertible {
        let hex: String
        let roundtrip: Bool
        let decoded: JSON?
        let diagnostic: String?
        var description: String { hex }
    }

    static let items: [Item] = {
        let text = try! String(contentsOfFile: TestSupport.vectorPath("cbor/appendix_a.json"), encoding: .utf8)
        guard case .array(let entries) = try! JSON.parse(text) else { fatalError("vector file is not a JSON array") }
        return entries.map { e in
            guard case .string(let hex)? = e["hex"], case .bool(let rt)? = e["roundtrip"] else {
                fatalError("bad vector entry")
            }
            var diag: String? = nil
            if case .string(let d)? = e["diagnostic"] { diag = d }
            return Item(hex: hex, roundtrip: rt, decoded: e["decoded"], diagnostic: diag)
        }
    }()

    /// RFC 8949 §3.3 made `f8 18` (simple(24) in two bytes) not well-formed; RFC 7049, where the
    /// vector comes from, allowed it. Our strict decoder follows RFC 8949; the lenient one reads it.
    static let notWellFormedInRFC8949: Set<String> = ["f818"]

    @Test func vectorFileIsComplete() { #expect(Self.items.count == 82) }

    @Test("lenient decoding matches the expected value", arguments: items)
    func lenientDecode(item: Item) throws {
        let value = try CBORDecoder(mode: .lenient).decode(TestSupport.bytes(hex: item.hex))
        if let expected = item.decoded {
            #expect(Self.matches(value, expected), "decoded \(value), expected \(expected)")
        }
        if let diag = item.diagnostic, item.roundtrip {
            #expect(value.diagnostic() == diag)
        }
    }

    @Test("strict decoding: canonical items re-encode to the same bytes, others are refused", arguments: items)
    func strictDecode(item: Item) throws {
        let bytes = TestSupport.bytes(hex: item.hex)
        if Self.notWellFormedInRFC8949.contains(item.hex) {
            #expect(throws: CBORError(.invalidSimpleValue, at: 0)) { try CBORDecoder.decodeStrict(bytes) }
        } else if item.roundtrip {
            let value = try CBORDecoder.decodeStrict(bytes)
            #expect(TestSupport.hex(CBOREncoder.encode(value)) == item.hex)
        } else {
            do {
                _ = try CBORDecoder.decodeStrict(bytes)
                Issue.record("strict decoder accepted non-canonical \(item.hex)")
            } catch {
                #expect([.indefiniteLength, .nonPreferredFloat, .nonCanonicalNaN].contains(error.code), "\(error)")
                // The lenient reading re-encodes to canonical bytes that strict accepts.
                let canonical = CBOREncoder.encode(try CBORDecoder(mode: .lenient).decode(bytes))
                #expect(throws: Never.self) { try CBORDecoder.decodeStrict(canonical) }
            }
        }
    }

    /// Compares a CBOR value with the vector's JSON `decoded` field (numbers by exact text).
    static func matches(_ value: CBOR, _ json: JSON) -> Bool {
        switch (value, json) {
        case (.unsigned, .number(let n)), (.negative, .number(let n)):
            return value.json == .number(n)
        case (.tagged(2, .bytes(let b)), .number(let n)): return decimal(b) == n
        case (.tagged(3, .bytes(let b)), .number(let n)): return "-" + decimal(increment(b)) == n
        case (.float(let d), .number(let n)): return Double(n) == d
        case (.text(let s), .string(let t)): return s == t
        case (.bool(let a), .bool(let b)): return a == b
        case (.null, .null): return true
        case (.array(let a), .array(let b)): return a.count == b.count && zip(a, b).allSatisfy { matches($0, $1) }
        case (.map(let m), .object(let o)):
            return m.count == o.count && o.allSatisfy { k, v in m[.text(k)].map { matches($0, v) } ?? false }
        default: return false
        }
    }

    /// Big-endian unsigned bytes to decimal text.
    static func decimal(_ bytes: [UInt8]) -> String {
        var digits = bytes
        var out = ""
        while digits.contains(where: { $0 != 0 }) {
            var remainder = 0
            for i in digits.indices {
                let acc = remainder * 256 + Int(digits[i])
                digits[i] = UInt8(acc / 10)
                remainder = acc % 10
            }
            out = String(remainder) + out
        }
        return out.isEmpty ? "0" : out
    }

    static func increment(_ bytes: [UInt8]) -> [UInt8] {
        var b = bytes
        for i in b.indices.reversed() {
            if b[i] == 0xff {
                b[i] = 0
            } else {
                b[i] += 1
                return b
            }
        }
        return [1] + b
    }
}
