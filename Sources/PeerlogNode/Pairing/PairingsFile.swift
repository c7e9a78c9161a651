import Foundation
import PeerlogModel

/// `HOME/pairings.conf`: what pairings taught this home, in the configuration file's grammar
/// (`NodeConfiguration.load(file:)`), read by every node started on the home after its
/// `daemon.conf`: `peer = HOST:PORT` (where a linked or inviting device listens),
/// `allow = IDENTITY` (an inviter, before its group arrives) and `accept = GROUP` (an
/// invitation to accept when it arrives; removed once accepted).
public struct PairingsFile: Sendable {
    /// The file's path.
    public let path: String

    /// The file of `home`.
    public init(home: String) { path = home + "/pairings.conf" }

    /// Adds `key = value` lines not already there (written whole: temporary file, then rename).
    public func add(_ entries: [(key: String, value: String)]) throws {
        var lines = try read()
        for (key, value) in entries where !lines.contains("\(key) = \(value)") { lines.append("\(key) = \(value)") }
        try write(lines)
    }

    /// Removes `accept = GROUP`.
    public func remove(accept group: GroupID) throws {
        let lines = try read()
        let kept = lines.filter { $0 != "accept = \(group.string)" }
        if kept.count != lines.count { try write(kept) }
    }

    /// Applies the file to `configuration` (nothing when there is none).
    public func apply(to configuration: inout NodeConfiguration) throws {
        guard FileIO.exists(path) else { return }
        try configuration.load(file: path)
    }

    private func read() throws -> [String] {
        guard FileIO.exists(path) else { return [] }
        let bytes = try FileIO.read(path, maxBytes: 1 << 20)
        return String(decoding: bytes, as: UTF8.self).split(separator: "\n").map(String.init)
    }

    private func write(_ lines: [String]) throws {
        let text = "# Written by peerlog pairing (docs/TOOLS.md); same grammar as daemon.conf.\n"
        let body = lines.filter { !$0.hasPrefix("#") }.joined(separator: "\n")
        try FileIO.writeNew(Array((text + body + "\n").utf8), to: path, mode: 0o600, overwrite: true)
    }
}
