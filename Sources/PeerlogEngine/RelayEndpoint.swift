import PeerlogModel

/// A relay that sequences one of our groups: where to reach it and the key it must present.
public struct RelayEndpoint: Sendable, Hashable {
    public let key: DeviceID
    public let address: String
    public init(key: DeviceID, address: String) {
        self.key = key
        self.address = address
    }
}
