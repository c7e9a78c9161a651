import PeerlogModel

/// What the hub knows of one established connection: the machine's view of it, and closures
/// that hop to its event loop.
struct ConnectionRef: Sendable {
    let info: NodeConnection
    let send: @Sendable ([UInt8]) -> Void
    let close: @Sendable (NodeCloseReason) -> Void

    var id: UInt64 { info.id }
    var peer: DeviceCertificate { info.peer }
}
