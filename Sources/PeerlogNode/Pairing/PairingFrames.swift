/// Pairing messages on TCP: each preceded by its length as a 4-byte big-endian unsigned
/// integer, at most `maxBytes` (docs/PROTOCOL.md §20.9). Shared by the host's handler and the
/// guest's client.
struct PairingFrames {
    /// What a length prefix announced beyond the limit.
    struct TooLarge: Error, CustomStringConvertible {
        let length: Int
        let limit: Int
        var description: String { "pairing message of \(length) bytes, limit \(limit)" }
    }

    let maxBytes: Int
    private var buffer: [UInt8] = []

    init(maxBytes: Int) { self.maxBytes = maxBytes }

    /// The frame for `message`.
    static func frame(_ message: [UInt8]) -> [UInt8] {
        let n = UInt32(message.count)
        return [UInt8(n >> 24), UInt8(n >> 16 & 0xff), UInt8(n >> 8 & 0xff), UInt8(n & 0xff)] + message
    }

    /// Takes bytes as they arrive; returns the messages they complete.
    mutating func append(_ bytes: [UInt8]) throws -> [[UInt8]] {
        buffer += bytes
        var messages: [[UInt8]] = []
        while buffer.count >= 4 {
            let length = buffer[0..<4].reduce(0) { $0 << 8 | Int($1) }
            guard length <= maxBytes else { throw TooLarge(length: length, limit: maxBytes) }
            guard buffer.count >= 4 + length else { break }
            messages.append(Array(buffer[4..<(4 + length)]))
            buffer.removeFirst(4 + length)
        }
        return messages
    }
}
