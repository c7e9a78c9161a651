/// A JSON value that keeps numbers as their exact text and objects in insertion order, so
/// output is deterministic and 64-bit integers survive. Strict parser (RFC 8259), bounded depth.
public indirect enum JSON: Hashable, Sendable {
    case null
    case bool(Bool)
    /// The number's literal text.
    case number(String)
    case string(String)
    case array([JSON])
    /// Members in order. The parser refuses duplicate keys; a value built in code may hold them.
    case object([(String, JSON)])

    /// An integer as a JSON number, exact at any width (no `Double` round trip).
    public static func int<I: BinaryInteger>(_ v: I) -> JSON { .number(String(v)) }

    /// The value of member `key` when this is an object (the first such member); nil otherwise.
    public subscript(key: String) -> JSON? {
        if case .object(let entries) = self { return entries.first { $0.0 == key }?.1 }
        return nil
    }

    /// Structural equality: numbers compare by their text (`1.0` is not `1`), objects member by member
    /// in order.
    public static func == (l: JSON, r: JSON) -> Bool {
        switch (l, r) {
        case (.null, .null): true
        case (.bool(let a), .bool(let b)): a == b
        case (.number(let a), .number(let b)): a == b
        case (.string(let a), .string(let b)): a == b
        case (.array(let a), .array(let b)): a == b
        case (.object(let a), .object(let b)):
            a.count == b.count && zip(a, b).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
        default: false
        }
    }

    /// Hashes the compact serialization, so equal values hash alike.
    public func hash(into h: inout Hasher) { h.combine(serialized()) }
}

// MARK: - Serialization

extension JSON: CustomStringConvertible {
    /// The compact serialization (`serialized()`).
    public var description: String { serialized() }

    /// Compact JSON, or indented with two spaces when `pretty`.
    public func serialized(pretty: Bool = false) -> String {
        var out = ""
        write(&out, indent: pretty ? 0 : nil)
        return out
    }

    private func write(_ out: inout String, indent: Int?) {
        switch self {
        case .null: out += "null"
        case .bool(let b): out += b ? "true" : "false"
        case .number(let n): out += n
        case .string(let s): JSON.quote(s, into: &out)
        case .array(let items):
            writeList(items.count, open: "[", close: "]", &out, indent) { i, o, ind in items[i].write(&o, indent: ind) }
        case .object(let entries):
            writeList(entries.count, open: "{", close: "}", &out, indent) { i, o, ind in
                JSON.quote(entries[i].0, into: &o)
                o += indent == nil ? ":" : ": "
                entries[i].1.write(&o, indent: ind)
            }
        }
    }

    private func writeList(
        _ count: Int, open: String, close: String, _ out: inout String, _ indent: Int?,
        _ item: (Int, inout String, Int?) -> Void
    ) {
        out += open
        guard count > 0 else {
            out += close
            return
        }
        for i in 0..<count {
            if i > 0 { out += "," }
            if let indent { out += "\n" + String(repeating: "  ", count: indent + 1) }
            item(i, &out, indent.map { $0 + 1 })
        }
        if let indent { out += "\n" + String(repeating: "  ", count: indent) }
        out += close
    }

    /// A quoted string: JSON escapes, also used by CBOR diagnostic notation (same rules, RFC 8949 §8).
    static func quote(_ s: String, into out: inout String) {
        out += "\""
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20 || scalar.value == 0x7f:
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        out += "\""
    }
}

// MARK: - Parsing

extension JSON {
    /// Maximum nesting accepted by the parser.
    public static let maxDepth = 64

    /// Parses one JSON text (RFC 8259): only whitespace around the value, no duplicate object keys,
    /// nesting at most `maxDepth`, valid UTF-8 and paired surrogates in strings. Numbers keep their
    /// literal text. Throws `JSONParseError` with the byte offset of the first problem.
    public static func parse(_ text: String) throws(JSONParseError) -> JSON {
        var p = JSONParser(bytes: Array(text.utf8))
        p.skipSpace()
        let v = try p.value(depth: 0)
        p.skipSpace()
        guard p.i == p.bytes.count else { throw p.fail("unexpected text after the value") }
        return v
    }
}

private struct JSONParser {
    let bytes: [UInt8]
    var i = 0

    func fail(_ reason: String, file: String = #fileID, line: Int = #line) -> JSONParseError {
        JSONParseError(offset: i, reason: reason, file: file, line: line)
    }

    mutating func skipSpace() {
        while i < bytes.count, [0x20, 0x09, 0x0a, 0x0d].contains(bytes[i]) { i += 1 }
    }

    mutating func literal(_ word: String, _ v: JSON) throws(JSONParseError) -> JSON {
        let w = Array(word.utf8)
        guard i + w.count <= bytes.count, Array(bytes[i..<i + w.count]) == w else { throw fail("expected \(word)") }
        i += w.count
        return v
    }

    mutating func value(depth: Int) throws(JSONParseError) -> JSON {
        guard depth <= JSON.maxDepth else { throw fail("nesting deeper than \(JSON.maxDepth)") }
        guard i < bytes.count else { throw fail("unexpected end of input") }
        switch bytes[i] {
        case UInt8(ascii: "n"): return try literal("null", .null)
        case UInt8(ascii: "t"): return try literal("true", .bool(true))
        case UInt8(ascii: "f"): return try literal("false", .bool(false))
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "["):
            i += 1
            var items = [JSON]()
            skipSpace()
            if i < bytes.count, bytes[i] == UInt8(ascii: "]") {
                i += 1
                return .array(items)
            }
            while true {
                skipSpace()
                items.append(try value(depth: depth + 1))
                skipSpace()
                guard i < bytes.count else { throw fail("unterminated array") }
                if bytes[i] == UInt8(ascii: ",") {
                    i += 1
                    continue
                }
                guard bytes[i] == UInt8(ascii: "]") else { throw fail("expected , or ]") }
                i += 1
                return .array(items)
            }
        case UInt8(ascii: "{"):
            i += 1
            var entries = [(String, JSON)]()
            var seen = Set<String>()
            skipSpace()
            if i < bytes.count, bytes[i] == UInt8(ascii: "}") {
                i += 1
                return .object(entries)
            }
            while true {
                skipSpace()
                guard i < bytes.count, bytes[i] == UInt8(ascii: "\"") else { throw fail("expected a string key") }
                let keyAt = i
                let key = try string()
                guard seen.insert(key).inserted else {
                    throw JSONParseError(offset: keyAt, reason: "duplicate key \"\(key)\"")
                }
                skipSpace()
                guard i < bytes.count, bytes[i] == UInt8(ascii: ":") else { throw fail("expected :") }
                i += 1
                skipSpace()
                entries.append((key, try value(depth: depth + 1)))
                skipSpace()
                guard i < bytes.count else { throw fail("unterminated object") }
                if bytes[i] == UInt8(ascii: ",") {
                    i += 1
                    continue
                }
                guard bytes[i] == UInt8(ascii: "}") else { throw fail("expected , or }") }
                i += 1
                return .object(entries)
            }
        default:
            return .number(try number())
        }
    }

    mutating func number() throws(JSONParseError) -> String {
        let start = i
        func digits() -> Int {
            let s = i
            while i < bytes.count, (0x30...0x39).contains(bytes[i]) { i += 1 }
            return i - s
        }
        if i < bytes.count, bytes[i] == UInt8(ascii: "-") { i += 1 }
        guard i < bytes.count, (0x30...0x39).contains(bytes[i]) else { throw fail("expected a value") }
        if bytes[i] == 0x30 { i += 1 } else { _ = digits() }
        if i < bytes.count, bytes[i] == UInt8(ascii: ".") {
            i += 1
            guard digits() > 0 else { throw fail("expected digits after the decimal point") }
        }
        if i < bytes.count, bytes[i] == UInt8(ascii: "e") || bytes[i] == UInt8(ascii: "E") {
            i += 1
            if i < bytes.count, bytes[i] == UInt8(ascii: "+") || bytes[i] == UInt8(ascii: "-") { i += 1 }
            guard digits() > 0 else { throw fail("expected exponent digits") }
        }
        return String(decoding: bytes[start..<i], as: UTF8.self)
    }

    mutating func hex4() throws(JSONParseError) -> UInt32 {
        guard i + 4 <= bytes.count, let v = UInt32(String(decoding: bytes[i..<i + 4], as: UTF8.self), radix: 16) else {
            throw fail("bad \\u escape")
        }
        i += 4
        return v
    }

    mutating func string() throws(JSONParseError) -> String {
        i += 1  // opening quote
        var scalars = String.UnicodeScalarView()
        var run = [UInt8]()
        func flush() throws(JSONParseError) {
            guard let s = String(validating: run, as: UTF8.self) else { throw fail("invalid UTF-8") }
            scalars.append(contentsOf: s.unicodeScalars)
            run.removeAll(keepingCapacity: true)
        }
        while true {
            guard i < bytes.count else { throw fail("unterminated string") }
            let c = bytes[i]
            if c == UInt8(ascii: "\"") {
                i += 1
                try flush()
                return String(scalars)
            }
            if c < 0x20 { throw fail("control character in string") }
            if c != UInt8(ascii: "\\") {
                run.append(c)
                i += 1
                continue
            }
            try flush()
            i += 1
            guard i < bytes.count else { throw fail("unterminated escape") }
            let e = bytes[i]
            i += 1
            switch e {
            case UInt8(ascii: "\""): scalars.append("\"")
            case UInt8(ascii: "\\"): scalars.append("\\")
            case UInt8(ascii: "/"): scalars.append("/")
            case UInt8(ascii: "b"): scalars.append("\u{08}")
            case UInt8(ascii: "f"): scalars.append("\u{0c}")
            case UInt8(ascii: "n"): scalars.append("\n")
            case UInt8(ascii: "r"): scalars.append("\r")
            case UInt8(ascii: "t"): scalars.append("\t")
            case UInt8(ascii: "u"):
                var v = try hex4()
                if (0xd800...0xdbff).contains(v) {
                    guard i + 2 <= bytes.count, bytes[i] == UInt8(ascii: "\\"), bytes[i + 1] == UInt8(ascii: "u") else {
                        throw fail("unpaired surrogate")
                    }
                    i += 2
                    let low = try hex4()
                    guard (0xdc00...0xdfff).contains(low) else { throw fail("unpaired surrogate") }
                    v = 0x10000 + ((v - 0xd800) << 10) + (low - 0xdc00)
                }
                guard let s = Unicode.Scalar(v) else { throw fail("invalid code point") }
                scalars.append(s)
            default: throw fail("unknown escape")
            }
        }
    }
}
