import PeerlogModel

/// When two devices dial each other at once they end up with two connections. Both sides
/// must keep the same one without talking about it: the connection initiated by the device
/// whose id bytes sort lower survives.
public enum TieBreak {
    /// Whether a new connection should replace an existing one to the same peer device.
    /// `newIsOutbound` / `existingIsOutbound` are from the local side's point of view.
    public static func keepNew(local: DeviceID, peer: DeviceID, newIsOutbound: Bool, existingIsOutbound: Bool) -> Bool {
        // Same direction: the dialer gave up on the old connection (e.g. after a silent network
        // change), so the newer one is the live one.
        if newIsOutbound == existingIsOutbound { return true }
        let localInitiatesWinner = local.bytes.lexicographicallyPrecedes(peer.bytes)
        return newIsOutbound == localInitiatesWinner
    }
}
