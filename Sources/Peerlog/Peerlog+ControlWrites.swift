import PeerlogEncoding
import PeerlogNode
import PeerlogQuickCalls

extension Peerlog {
    /// Writes a control socket `put` (a plain `peerlog put GROUP KEY VALUE` handed to the
    /// running node) exactly as the CLI would: the group resolved by id or name, the value
    /// stored as text. The reply names the group's id, the receipt, its type and its seq; a
    /// refused write writes nothing and replies `{"error":…}`.
    func answer(_ put: ControlPut) async -> [UInt8] {
        do {
            let group = try await groupID(put.group)
            let write = try await self.put(put.key, cbor: .text(put.value), in: group)
            return ControlPut.Stored(
                group: group.string, cid: write.cid.string, type: write.type, seq: write.seq
            ).reply
        } catch {
            return ControlReply.error("\(error)")
        }
    }
}
