import PeerlogNode

/// The node running on a home in another process (`peerlog daemon`), reached through its
/// control socket: status, peers, and capture. Each call is one blocking request of at most
/// `ControlClient.timeoutSeconds` (5 s).
public struct PeerlogDaemon: Sendable {
    /// The daemon's control socket.
    public let controlSocket: String

    /// The daemon of `home`, at `controlSocket` (default: `HOME/peerlog.sock`).
    public init(home: String, controlSocket: String? = nil) {
        var configuration = NodeConfiguration()
        configuration.controlSocket = controlSocket
        self.controlSocket = configuration.controlSocketPath(home: home)
    }

    /// What the daemon is doing: peers, each group's committed seq and tentative count,
    /// discovery, capture.
    public func status() throws -> NodeStatus {
        try network { try ControlClient.status(socketPath: controlSocket) }
    }

    /// The status document exactly as the daemon wrote it (JSON, keys sorted).
    package func statusDocument() throws -> String {
        try network { String(decoding: try ControlClient.request(.status, socketPath: controlSocket), as: UTF8.self) }
    }

    /// Starts recording every decrypted message in and out to `path` (absolute; replaced if it
    /// exists). `maxBytes` rotates files, `omitBodies` leaves receipt bodies out.
    package func startCapture(path: String, maxBytes: Int? = nil, omitBodies: Bool = false) throws -> CaptureStatus {
        try network {
            let request = ControlRequest.captureStart(path: path, maxBytes: maxBytes, omitBodies: omitBodies)
            return try ControlClient.decode(
                CaptureStatus.self, ControlClient.request(request, socketPath: controlSocket))
        }
    }

    /// Stops the running capture; what it recorded.
    package func stopCapture() throws -> CaptureStatus {
        try network {
            try ControlClient.decode(CaptureStatus.self, ControlClient.request(.captureStop, socketPath: controlSocket))
        }
    }

    private func network<T>(_ body: () throws -> T) throws -> T {
        do { return try body() } catch { throw PeerlogError(.network, "\(error)") }
    }
}
