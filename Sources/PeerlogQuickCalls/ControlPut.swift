/// `put GROUP KEY VALUE` on the control socket: a plain `peerlog put` handed to the home's
/// running daemon, which already holds the store open, so the call costs its write and not a
/// store opened per process (docs/CLI.md, "the launcher").
///
/// On the wire each field is the lowercase hex of its UTF-8 bytes, so a key or value with
/// spaces or newlines stays one line: `put 6e6f746573 6b 76`. No field is empty (the daemon
/// trims the line; the CLI writes an empty value itself). The reply is `Stored`'s document once
/// stored, or `{"error":…}` when the write was refused and nothing was written (the CLI then
/// runs the command itself, for its exact message and exit status).
public struct ControlPut: Sendable, Hashable {
    /// The group as the user typed it: its id, or its name.
    public var group: String
    /// The entity key.
    public var key: String
    /// The value, stored as text.
    public var value: String

    /// A request; `line` is longer than the socket takes when the three are over about 2 KB.
    public init(group: String, key: String, value: String) {
        self.group = group
        self.key = key
        self.value = value
    }

    /// The request line, without its newline.
    public var line: String { "put " + [group, key, value].map(Hex.encode).joined(separator: " ") }

    /// What a malformed request is told.
    public static let usage = "usage: put GROUP KEY VALUE, each the hex of its UTF-8 text"

    /// The request in the words after `put`; nil unless they are three non-empty hex fields of
    /// UTF-8 text.
    public static func parse(_ words: [Substring]) -> ControlPut? {
        let fields = words.map(Hex.decodeText)
        guard fields.count == 3, let group = fields[0], let key = fields[1], let value = fields[2],
            !group.isEmpty, !key.isEmpty, !value.isEmpty
        else { return nil }
        return ControlPut(group: group, key: key, value: value)
    }

    /// The daemon's reply once the write is stored: `{"group":ID,"cid":CID,"type":TYPE,"seq":N|null}`,
    /// written by `reply` and read by `init?(reply:)`, the one grammar both sides use.
    public struct Stored: Sendable, Hashable {
        /// The group's id.
        public var group: String
        /// The receipt's CID.
        public var cid: String
        /// The receipt's type.
        public var type: String
        /// Its seq when committed at once; nil while tentative.
        public var seq: UInt64?

        /// A stored write; every text is plain ASCII without quotes or backslashes (ids, CIDs,
        /// receipt types), so the reply needs no escaping.
        public init(group: String, cid: String, type: String, seq: UInt64?) {
            (self.group, self.cid, self.type, self.seq) = (group, cid, type, seq)
        }

        /// The reply document.
        public var reply: [UInt8] {
            let seq = seq.map(String.init) ?? "null"
            return Array(#"{"group":"\#(group)","cid":"\#(cid)","type":"\#(type)","seq":\#(seq)}"#.utf8)
        }

        /// The stored write a reply reports; nil for any other reply (an error, or none).
        public init?(reply: [UInt8]) {
            let text = String(decoding: reply, as: UTF8.self)
            guard text.hasPrefix(#"{"group":""#), let group = Self.field("group", in: text),
                let cid = Self.field("cid", in: text), let type = Self.field("type", in: text),
                let seqText = Self.field("seq", in: text)
            else { return nil }
            let seq = UInt64(seqText)
            guard seq != nil || seqText == "null" else { return nil }
            self.init(group: group, cid: cid, type: type, seq: seq)
        }

        /// What follows `"name":` in `text`: a string's content up to its closing quote, or a
        /// number (or `null`) up to `,` or `}`.
        private static func field(_ name: String, in text: String) -> String? {
            let bytes = Array(text.utf8)
            let marker = Array("\"\(name)\":".utf8)
            guard bytes.count >= marker.count,
                let at = (0...bytes.count - marker.count).first(where: { bytes[$0...].starts(with: marker) })
            else { return nil }
            var rest = bytes[(at + marker.count)...]
            let quoted = rest.first == UInt8(ascii: "\"")
            if quoted { rest = rest.dropFirst() }
            let ends: [UInt8] = quoted ? [UInt8(ascii: "\"")] : [UInt8(ascii: ","), UInt8(ascii: "}")]
            guard let end = rest.firstIndex(where: ends.contains) else { return nil }
            return String(decoding: rest[..<end], as: UTF8.self)
        }
    }

    /// Lowercase hex of UTF-8 text, and back.
    enum Hex {
        static func encode(_ text: String) -> String {
            let digits = Array("0123456789abcdef".utf8)
            var out = [UInt8]()
            out.reserveCapacity(text.utf8.count * 2)
            for byte in text.utf8 {
                out.append(digits[Int(byte >> 4)])
                out.append(digits[Int(byte & 15)])
            }
            return String(decoding: out, as: UTF8.self)
        }

        /// Nil for an odd length, a character that is not a hex digit, or bytes that are not UTF-8.
        static func decodeText(_ hex: Substring) -> String? {
            let chars = Array(hex.utf8)
            guard chars.count % 2 == 0 else { return nil }
            var bytes = [UInt8]()
            bytes.reserveCapacity(chars.count / 2)
            var i = 0
            while i < chars.count {
                guard let high = nibble(chars[i]), let low = nibble(chars[i + 1]) else { return nil }
                bytes.append(high << 4 | low)
                i += 2
            }
            return String(validating: bytes, as: UTF8.self)
        }

        private static func nibble(_ c: UInt8) -> UInt8? {
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): c - UInt8(ascii: "a") + 10
            default: nil
            }
        }
    }
}
