/// The release this build is: what `peerlog --version` prints.
public enum PeerlogVersion {
    /// The version text.
    public static let current = "0.1.0"
}
