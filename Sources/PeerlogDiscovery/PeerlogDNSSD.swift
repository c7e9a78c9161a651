/// How Peerlog appears in DNS-SD: its service type and TXT record.
public enum PeerlogDNSSD {
    public static let type = "_peerlog._tcp"

    /// TXT keys: "v" protocol version ("1"), "dev" device id text, "id" identity id text,
    /// "net" network id (omitted when empty).
    public static func txt(device: String, identity: String, network: String) -> [String: String] {
        var txt = ["v": "1", "dev": device, "id": identity]
        if !network.isEmpty { txt["net"] = network }
        return txt
    }
}
