import PeerlogModel
import Synchronization

/// Bytes of blob chunks a connection has queued and not yet handed to the socket.
final class BulkBacklog: Sendable {
    let bytes = Atomic<Int>(0)
}

/// What the hub knows of one established connection: the machine's view of it, and closures
/// that hop to its event loop.
struct ConnectionRef: Sendable {
    let info: NodeConnection
    let send: @Sendable ([UInt8]) -> Void
    /// Sends a blob chunk behind everything `send` queues (PeerHandler.sendBulk).
    let sendBulk: @Sendable ([UInt8]) -> Void
    /// What `sendBulk` has queued on this connection and the socket has not taken yet.
    let bulkBacklog: BulkBacklog
    let close: @Sendable (NodeCloseReason) -> Void

    /// `sendBulk` nil: bulk goes as any message (a test's in-memory wire).
    init(
        info: NodeConnection, send: @escaping @Sendable ([UInt8]) -> Void,
        sendBulk: (@Sendable ([UInt8]) -> Void)? = nil, bulkBacklog: BulkBacklog = BulkBacklog(),
        close: @escaping @Sendable (NodeCloseReason) -> Void
    ) {
        self.info = info
        self.send = send
        self.sendBulk = sendBulk ?? send
        self.bulkBacklog = bulkBacklog
        self.close = close
    }

    var id: UInt64 { info.id }
    var peer: DeviceCertificate { info.peer }
}
