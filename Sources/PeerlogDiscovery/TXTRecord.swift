// DNS TXT rdata (RFC 6763 §6): a sequence of length-prefixed "key=value" strings. Written by
// hand rather than with TXTRecordCreate so it is testable without the C library.

enum TXTRecord {
    /// Encodes entries sorted by key (deterministic bytes). Entries that cannot be carried are
    /// dropped: an empty key, a key with '=' or outside printable ASCII, a string over 255
    /// bytes, or anything past the 65535-byte limit of DNSServiceRegister's txtLen.
    /// No entries encode as a single empty string, the smallest legal TXT record.
    static func encode(_ entries: [String: String]) -> [UInt8] {
        var out: [UInt8] = []
        for key in entries.keys.sorted() {
            let keyBytes = Array(key.utf8)
            guard !keyBytes.isEmpty, keyBytes.allSatisfy({ $0 >= 0x20 && $0 <= 0x7E && $0 != UInt8(ascii: "=") }) else {
                continue
            }
            let item = keyBytes + [UInt8(ascii: "=")] + Array(entries[key]!.utf8)
            guard item.count <= 255, out.count + 1 + item.count <= 65535 else { continue }
            out.append(UInt8(item.count))
            out += item
        }
        return out.isEmpty ? [0] : out
    }

    /// Decodes rdata leniently, as received from any host on the link: a string whose length
    /// runs past the end stops decoding; empty strings and empty keys are skipped; a key
    /// without '=' maps to ""; the first of repeated keys (compared case-insensitively) wins;
    /// invalid UTF-8 is replaced, not rejected.
    static func decode<Bytes: Collection>(_ bytes: Bytes) -> [String: String] where Bytes.Element == UInt8 {
        let data = Array(bytes)
        var result: [String: String] = [:]
        var seen: Set<String> = []
        var i = 0
        while i < data.count {
            let length = Int(data[i])
            i += 1
            guard length <= data.count - i else { break }
            let item = data[i..<(i + length)]
            i += length
            let eq = item.firstIndex(of: UInt8(ascii: "="))
            let key = String(decoding: item[..<(eq ?? item.endIndex)], as: UTF8.self)
            guard !key.isEmpty, seen.insert(key.lowercased()).inserted else { continue }
            result[key] = eq.map { String(decoding: item[item.index(after: $0)...], as: UTF8.self) } ?? ""
        }
        return result
    }
}
