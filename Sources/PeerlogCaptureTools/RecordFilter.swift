import PeerlogCapture

/// Which records of a capture to show (`peerlog capture show --peer --group --type
/// --connection`); every criterion left nil or empty lets all records through.
package struct RecordFilter: Sendable {
    /// Only this connection.
    package var connection: UInt64?
    /// Only these message types (`hello`, `receipts`, …, `opened`, `closed`).
    package var types: Set<String>
    /// Only this peer: a device id, or a prefix of it (with or without its leading `b`).
    package var peer: String?
    /// Only messages about this group: an id, or a prefix of it (with or without its `b`).
    package var group: String?

    /// `types` may hold comma-separated lists, as typed on a command line.
    package init(connection: UInt64? = nil, types: [String] = [], peer: String? = nil, group: String? = nil) {
        self.connection = connection
        self.types = Set(types.flatMap { $0.split(separator: ",").map(String.init) })
        self.peer = peer
        self.group = group
    }

    /// Whether `view` passes every criterion.
    package func matches(_ view: RecordView) -> Bool {
        if let connection, view.record.connection != connection { return false }
        if !types.isEmpty, !types.contains(view.type) { return false }
        if let peer, !Self.matchesID(view.record.peer.string, peer) { return false }
        if let group { guard let g = view.group, Self.matchesID(g.string, group) else { return false } }
        return true
    }

    /// `asked` is a prefix of the id's text, or of the text after its one-letter multibase prefix.
    static func matchesID(_ full: String, _ asked: String) -> Bool {
        full.hasPrefix(asked) || full.dropFirst().hasPrefix(asked)
    }
}
