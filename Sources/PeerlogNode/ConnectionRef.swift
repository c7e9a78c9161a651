import PeerlogModel

/// What the hub knows of one established connection; the closures hop to its event loop.
struct ConnectionRef: Sendable {
    let id: UInt64
    let outbound: Bool
    let remote: String
    let peer: DeviceCertificate
    let since: UInt64
    let send: @Sendable ([UInt8]) -> Void
    let close: @Sendable (String) -> Void
}
