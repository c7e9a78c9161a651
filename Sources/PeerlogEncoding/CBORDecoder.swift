/// Decodes CBOR. In `.strict` mode (for signed data) anything that is not in core
/// deterministic encoding (RFC 8949 §4.2.1) is refused with a precise error; `.lenient`
/// accepts any well-formed item (indefinite lengths, longer forms, any key order) for
/// diagnostic tools. Both modes enforce the limits and refuse trailing bytes.
public struct CBORDecoder: Sendable {
    /// `.strict` refuses anything that is not core deterministic encoding, as signed and hashed data
    /// must be (docs/PROTOCOL.md §1); `.lenient` accepts any well-formed item, for diagnostic tools.
    public enum Mode: Sendable { case strict, lenient }

    /// Named limits. Every collection count is also bounded by the bytes left in the input,
    /// so a forged length cannot make the decoder allocate more than the input size.
    public struct Limits: Sendable {
        /// Maximum nesting of arrays, maps and tags.
        public var maxDepth: Int
        /// Maximum bytes of one byte or text string.
        public var maxStringBytes: Int
        /// Maximum elements of one array or entries of one map.
        public var maxCollectionCount: Int
        /// Maximum size of the whole input.
        public var maxInputBytes: Int

        /// The defaults are PROTOCOL.md §1's: nesting 32, 16 MiB per string, 1,048,576 elements per
        /// collection, 64 MiB of input.
        public init(
            maxDepth: Int = CBORDecoder.defaultMaxDepth, maxStringBytes: Int = 16 << 20,
            maxCollectionCount: Int = 1 << 20, maxInputBytes: Int = 64 << 20
        ) {
            self.maxDepth = maxDepth
            self.maxStringBytes = maxStringBytes
            self.maxCollectionCount = maxCollectionCount
            self.maxInputBytes = maxInputBytes
        }
    }

    /// Default nesting limit: generous for any Peerlog format, small enough to stop stack exhaustion.
    public static let defaultMaxDepth = 32

    /// Strict or lenient; see `Mode`.
    public var mode: Mode
    /// Enforced in both modes; input over a limit throws a `CBORError` at the offending offset.
    public var limits: Limits

    /// A decoder, strict with PROTOCOL.md §1's default limits unless told otherwise.
    public init(mode: Mode = .strict, limits: Limits = Limits()) {
        self.mode = mode
        self.limits = limits
    }

    /// Decodes exactly one data item that spans all of `input`.
    public func decode(_ input: [UInt8]) throws(CBORError) -> CBOR {
        guard input.count <= limits.maxInputBytes else {
            throw CBORError(.sizeLimitExceeded, at: 0, "input is \(input.count) bytes, limit \(limits.maxInputBytes)")
        }
        var reader = Reader(input: input, mode: mode, limits: limits)
        let value = try reader.item(depth: 0)
        guard reader.offset == input.count else {
            throw CBORError(.trailingBytes, at: reader.offset, "\(input.count - reader.offset) extra bytes")
        }
        return value
    }

    /// Strict decoding with default limits.
    public static func decodeStrict(_ input: [UInt8]) throws(CBORError) -> CBOR {
        try CBORDecoder().decode(input)
    }
}

private struct Reader {
    let input: [UInt8]
    let mode: CBORDecoder.Mode
    let limits: CBORDecoder.Limits
    var offset = 0

    init(input: [UInt8], mode: CBORDecoder.Mode, limits: CBORDecoder.Limits) {
        self.input = input
        self.mode = mode
        self.limits = limits
    }

    var strict: Bool { mode == .strict }
    var remaining: Int { input.count - offset }

    mutating func byte() throws(CBORError) -> UInt8 {
        guard offset < input.count else { throw CBORError(.truncated, at: offset) }
        defer { offset += 1 }
        return input[offset]
    }

    mutating func bigEndian(_ n: Int) throws(CBORError) -> UInt64 {
        guard remaining >= n else { throw CBORError(.truncated, at: offset, "need \(n) bytes, have \(remaining)") }
        var v: UInt64 = 0
        for i in 0..<n { v = v << 8 | UInt64(input[offset + i]) }
        offset += n
        return v
    }

    /// The argument for additional information `ai` (0...27), checked for shortest form.
    mutating func argument(_ ai: UInt8, headAt start: Int) throws(CBORError) -> UInt64 {
        switch ai {
        case 0..<24: return UInt64(ai)
        case 24...27: break
        default: throw CBORError(.reservedAdditionalInfo, at: start, "additional information \(ai)")
        }
        // 1, 2, 4 or 8 bytes follow; the shortest form of a value below the minimum is shorter:
        // 24 for one byte, then 0x100, 0x1_0000 and 0x1_0000_0000 (2^(4·size)).
        let size = 1 << Int(ai - 24)
        let value = try bigEndian(size)
        let minimum: UInt64 = size == 1 ? 24 : 1 << UInt64(4 * size)
        if strict && value < minimum {
            throw CBORError(.nonShortestArgument, at: start, "\(value) encoded in \(offset - start - 1) bytes")
        }
        return value
    }

    mutating func length(_ ai: UInt8, headAt start: Int, limit: Int, what: String) throws(CBORError) -> Int {
        let n = try argument(ai, headAt: start)
        guard n <= UInt64(limit) else { throw CBORError(.sizeLimitExceeded, at: start, "\(what) \(n), limit \(limit)") }
        return Int(n)
    }

    mutating func item(depth: Int) throws(CBORError) -> CBOR {
        let start = offset
        let head = try byte()
        let major = head >> 5
        let ai = head & 0x1f
        if ai == 31 {
            return try indefinite(major: major, at: start, depth: depth)
        }
        switch major {
        case 0: return .unsigned(try argument(ai, headAt: start))
        case 1: return .negative(try argument(ai, headAt: start))
        case 2: return .bytes(try stringBytes(ai, headAt: start))
        case 3: return .text(try definiteText(ai, headAt: start))
        case 4:
            let count = try length(ai, headAt: start, limit: limits.maxCollectionCount, what: "array of items")
            guard count <= remaining else {
                throw CBORError(.truncated, at: start, "array of \(count) items in \(remaining) bytes")
            }
            try checkDepth(depth + 1, at: start)
            var items = [CBOR]()
            items.reserveCapacity(count)
            for _ in 0..<count { items.append(try item(depth: depth + 1)) }
            return .array(items)
        case 5:
            let count = try length(ai, headAt: start, limit: limits.maxCollectionCount, what: "map of entries")
            guard count <= remaining / 2 else {
                throw CBORError(.truncated, at: start, "map of \(count) entries in \(remaining) bytes")
            }
            try checkDepth(depth + 1, at: start)
            return try mapEntries(count: count, depth: depth + 1)
        case 6:
            let tag = try argument(ai, headAt: start)
            try checkDepth(depth + 1, at: start)
            return .tagged(tag, try item(depth: depth + 1))
        default:
            return try simpleOrFloat(ai, at: start)
        }
    }

    func checkDepth(_ depth: Int, at offset: Int) throws(CBORError) {
        guard depth <= limits.maxDepth else {
            throw CBORError(.depthLimitExceeded, at: offset, "limit \(limits.maxDepth)")
        }
    }

    mutating func stringBytes(_ ai: UInt8, headAt start: Int) throws(CBORError) -> [UInt8] {
        let n = try length(ai, headAt: start, limit: limits.maxStringBytes, what: "string of bytes")
        guard n <= remaining else { throw CBORError(.truncated, at: start, "string of \(n) bytes, \(remaining) left") }
        defer { offset += n }
        return Array(input[offset..<offset + n])
    }

    /// A definite-length text string, validated where it lies (no copy of its bytes first:
    /// most are map keys short enough to be held inside the `String` itself).
    mutating func definiteText(_ ai: UInt8, headAt start: Int) throws(CBORError) -> String {
        let n = try length(ai, headAt: start, limit: limits.maxStringBytes, what: "string of bytes")
        guard n <= remaining else { throw CBORError(.truncated, at: start, "string of \(n) bytes, \(remaining) left") }
        defer { offset += n }
        guard let s = String(validating: input[offset..<offset + n], as: UTF8.self) else {
            throw CBORError(.invalidUTF8, at: start)
        }
        return s
    }

    func text(_ bytes: [UInt8], at start: Int) throws(CBORError) -> String {
        guard let s = String(validating: bytes, as: UTF8.self) else { throw CBORError(.invalidUTF8, at: start) }
        return s
    }

    mutating func mapEntries(count: Int, depth: Int) throws(CBORError) -> CBOR {
        var dict = [CBOR: CBOR](minimumCapacity: count)
        var previousKey: ArraySlice<UInt8>? = nil
        for _ in 0..<count {
            let keyStart = offset
            let key = try item(depth: depth)
            let keyBytes = input[keyStart..<offset]
            if strict, let previous = previousKey {
                if previous == keyBytes { throw CBORError(.duplicateMapKey, at: keyStart) }
                if !previous.lexicographicallyPrecedes(keyBytes) { throw CBORError(.unsortedMapKeys, at: keyStart) }
            }
            previousKey = keyBytes
            let value = try item(depth: depth)
            if dict.updateValue(value, forKey: key) != nil { throw CBORError(.duplicateMapKey, at: keyStart) }
        }
        return .map(dict)
    }

    mutating func indefinite(major: UInt8, at start: Int, depth: Int) throws(CBORError) -> CBOR {
        switch major {
        case 2, 3, 4, 5:
            if strict { throw CBORError(.indefiniteLength, at: start) }
        case 7:
            throw CBORError(.unexpectedBreak, at: start)
        default:
            throw CBORError(.reservedAdditionalInfo, at: start, "additional information 31 with major type \(major)")
        }
        try checkDepth(depth + 1, at: start)
        switch major {
        case 2, 3:
            var joined = [UInt8]()
            while try !atBreak() {
                let chunkStart = offset
                let head = try byte()
                guard head >> 5 == major, head & 0x1f != 31 else {
                    throw CBORError(.invalidIndefiniteChunk, at: chunkStart)
                }
                joined += try stringBytes(head & 0x1f, headAt: chunkStart)
                guard joined.count <= limits.maxStringBytes else {
                    throw CBORError(.sizeLimitExceeded, at: chunkStart, "string limit \(limits.maxStringBytes)")
                }
            }
            return major == 2 ? .bytes(joined) : .text(try text(joined, at: start))
        case 4:
            var items = [CBOR]()
            while try !atBreak() {
                guard items.count < limits.maxCollectionCount else {
                    throw CBORError(.sizeLimitExceeded, at: offset, "array limit \(limits.maxCollectionCount)")
                }
                items.append(try item(depth: depth + 1))
            }
            return .array(items)
        default:
            var dict = [CBOR: CBOR]()
            while try !atBreak() {
                guard dict.count < limits.maxCollectionCount else {
                    throw CBORError(.sizeLimitExceeded, at: offset, "map limit \(limits.maxCollectionCount)")
                }
                let keyStart = offset
                let key = try item(depth: depth + 1)
                let value = try item(depth: depth + 1)
                if dict.updateValue(value, forKey: key) != nil { throw CBORError(.duplicateMapKey, at: keyStart) }
            }
            return .map(dict)
        }
    }

    /// Consumes a break code (0xff) if one is next.
    mutating func atBreak() throws(CBORError) -> Bool {
        guard offset < input.count else { throw CBORError(.truncated, at: offset, "missing break") }
        if input[offset] == 0xff {
            offset += 1
            return true
        }
        return false
    }

    mutating func simpleOrFloat(_ ai: UInt8, at start: Int) throws(CBORError) -> CBOR {
        switch ai {
        case 0..<24: return .simpleValue(ai)
        case 24:
            let v = try byte()
            // RFC 8949 §3.3: 0xf8 followed by a byte below 0x20 is not well-formed (RFC 7049 allowed it).
            if v < 32 {
                if strict { throw CBORError(.invalidSimpleValue, at: start, "simple(\(v))") }
                return .simpleValue(v)
            }
            return .simple(v)
        case 25:
            let bits = UInt16(try bigEndian(2))
            let d = FloatBits.double(fromHalf: bits)
            if strict && d.isNaN && bits != 0x7e00 { throw CBORError(.nonCanonicalNaN, at: start) }
            return .float(d)
        case 26:
            let f = Float(bitPattern: UInt32(try bigEndian(4)))
            let d = Double(f)
            if strict {
                if d.isNaN { throw CBORError(.nonCanonicalNaN, at: start) }
                if FloatBits.halfBits(exactly: d) != nil {
                    throw CBORError(.nonPreferredFloat, at: start, "fits in half precision")
                }
            }
            return .float(d)
        case 27:
            let d = Double(bitPattern: try bigEndian(8))
            if strict {
                if d.isNaN { throw CBORError(.nonCanonicalNaN, at: start) }
                if Float(exactly: d) != nil {
                    throw CBORError(.nonPreferredFloat, at: start, "fits in a shorter float")
                }
            }
            return .float(d)
        default:
            throw CBORError(.reservedAdditionalInfo, at: start, "additional information \(ai)")
        }
    }
}
