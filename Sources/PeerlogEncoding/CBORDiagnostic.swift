/// CBOR diagnostic notation (RFC 8949 §8), with map entries in deterministic order.
extension CBOR: CustomStringConvertible {
    /// Diagnostic notation on one line (`diagnostic()`), e.g. `{"a": h'00', "b": [1, -2]}`.
    public var description: String { diagnostic() }

    /// Diagnostic notation on one line, or indented when `pretty` is true.
    public func diagnostic(pretty: Bool = false) -> String {
        var out = ""
        write(to: &out, indent: pretty ? 0 : nil)
        return out
    }

    private func write(to out: inout String, indent: Int?) {
        switch self {
        case .unsigned(let v): out += String(v)
        case .negative(let n): out += n == UInt64.max ? "-18446744073709551616" : "-\(n + 1)"
        case .bytes(let b): out += "h'\(hexDigits(b))'"
        case .text(let s): out += quoted(s)
        case .array(let items):
            writeCollection(
                items.map { item in { (o: inout String, i: Int?) in item.write(to: &o, indent: i) } }, open: "[",
                close: "]", to: &out, indent: indent)
        case .map(let entries):
            let sorted = entries.map { (CBOREncoder.encode($0.key), $0.key, $0.value) }.sorted {
                $0.0.lexicographicallyPrecedes($1.0)
            }
            writeCollection(
                sorted.map { entry in
                    { (o: inout String, i: Int?) in
                        entry.1.write(to: &o, indent: i)
                        o += ": "
                        entry.2.write(to: &o, indent: i)
                    }
                }, open: "{", close: "}", to: &out, indent: indent)
        case .tagged(let tag, let inner):
            out += "\(tag)("
            inner.write(to: &out, indent: indent)
            out += ")"
        case .bool(let b): out += b ? "true" : "false"
        case .null: out += "null"
        case .undefined: out += "undefined"
        case .simple(let v): out += "simple(\(v))"
        case .float(let d): out += Self.diagnosticFloat(d)
        }
    }

    private func writeCollection(
        _ parts: [(inout String, Int?) -> Void], open: String, close: String, to out: inout String, indent: Int?
    ) {
        out += open
        guard let indent, !parts.isEmpty else {
            for (i, part) in parts.enumerated() {
                if i > 0 { out += ", " }
                part(&out, nil)
            }
            out += close
            return
        }
        let pad = String(repeating: "  ", count: indent + 1)
        for (i, part) in parts.enumerated() {
            out += (i == 0 ? "\n" : ",\n") + pad
            part(&out, indent + 1)
        }
        out += "\n" + String(repeating: "  ", count: indent) + close
    }

    static func diagnosticFloat(_ d: Double) -> String {
        if d.isNaN { return "NaN" }
        if d.isInfinite { return d < 0 ? "-Infinity" : "Infinity" }
        let s = "\(d)"
        return s.contains(where: { $0 == "." || $0 == "e" }) ? s : s + ".0"
    }

    private func quoted(_ s: String) -> String {
        var out = ""
        JSON.quote(s, into: &out)
        return out
    }
}

func hexDigits(_ bytes: [UInt8]) -> String {
    let digits = Array("0123456789abcdef".utf8)
    var out = [UInt8]()
    out.reserveCapacity(bytes.count * 2)
    for b in bytes {
        out.append(digits[Int(b >> 4)])
        out.append(digits[Int(b & 0xf)])
    }
    return String(decoding: out, as: UTF8.self)
}
