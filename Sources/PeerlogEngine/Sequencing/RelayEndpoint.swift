import PeerlogModel

/// A relay that sequences one of our groups: where to reach it and the key it must present.
public struct RelayEndpoint: Sendable, Hashable {
    /// The relay's device id, as the group's `relay` authority names it: who must answer at `address`.
    public let key: DeviceID
    /// Where to reach it: "host:port", 1...`GroupLimits.maxRelayAddressBytes` bytes.
    public let address: String
    /// An endpoint as given; neither field is checked here.
    public init(key: DeviceID, address: String) {
        self.key = key
        self.address = address
    }
}
