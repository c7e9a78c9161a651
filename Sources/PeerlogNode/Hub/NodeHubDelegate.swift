import PeerlogEngine
import PeerlogPairing
import PeerlogQuickCalls

/// What the hub asks of the node around it: the one wiring point between them (the node is the
/// delegate, set once before the hub starts). Every call comes on the hub's executor except
/// `peerStatus` and `pairingStatus` (any thread, for `status`) and the control socket's pairing
/// requests.
protocol NodeHubDelegate: AnyObject, Sendable {
    /// Every dialer's state: static peers, relays, LAN peers.
    func peerStatus() -> [PeerStatus]
    /// The set of identities the node lets in changed.
    func membershipChanged()
    /// The relays our groups name changed.
    func relaysChanged(_ relays: Set<RelayEndpoint>)
    /// Group operations were stored or committed (invitations to accept may have arrived).
    func groupOperationsChanged()
    /// The node's pairing sessions (nil: none ran).
    func pairingStatus() -> PairingStatus?
    /// Answers the control socket's `pair open` (the reply document).
    func pairingOpen(_ request: PairingOpenRequest) async -> [UInt8]
    /// Answers the control socket's `pair adopt` (the reply document).
    func pairingAdopt(_ adoption: PairingAdoption) -> [UInt8]
    /// Answers the control socket's `put` (the reply document).
    func controlPut(_ put: ControlPut) async -> [UInt8]
}
