import Logging
import PeerlogCapture
import PeerlogNode
import ServiceLifecycle

/// The node of a `Peerlog` as a swift-service-lifecycle `Service`: put it in a `ServiceGroup`
/// for signal handling and graceful shutdown (`peerlog daemon` does), or call
/// `Peerlog.run(_:onListening:)`, which runs one until its task is cancelled.
public final class PeerlogService: Service, Sendable {
    let peerlog: Peerlog
    /// The node itself, for the CLI's `--http` status server.
    package let node: PeerlogNode

    init(peerlog: Peerlog, node: PeerlogNode) {
        self.peerlog = peerlog
        self.node = node
        // `peerlog put` calls find the node on the home's control socket and hand it the write.
        node.takeControlWrites { [weak peerlog] put in
            await peerlog?.answer(put) ?? ControlReply.error("the node's replica is closed")
        }
    }

    /// Records every decrypted message in and out to a pcapng file (docs/TOOLS.md); the file
    /// holds plaintext. `maxBytes` rotates files, `omitBodies` leaves receipt bodies out.
    package func startCapture(path: String, maxBytes: Int? = nil, omitBodies: Bool = false) throws {
        do { try node.startCapture(path: path, options: .init(maxBytes: maxBytes, omitBodies: omitBodies)) } catch {
            throw PeerlogError(.network, "cannot capture to \(path): \(error)")
        }
    }

    /// Runs the node until graceful shutdown or cancellation; one at a time per `Peerlog`.
    public func run() async throws {
        let started = peerlog.running.withLock { current -> Bool in
            guard current == nil else { return false }
            current = node
            return true
        }
        guard started else { throw PeerlogError(.network, "this Peerlog is running its node already") }
        defer { peerlog.running.withLock { $0 = nil } }
        do { try await node.run() } catch let error as NodeError {
            throw PeerlogError(.network, "\(error)")
        }
    }
}

extension Peerlog {
    /// The node for this replica as a `Service`, configured by `options`. The home must be
    /// writable. `onListening` is called once the listener is bound, with the actual address
    /// (port 0 asks for any).
    public func service(
        _ options: NetworkOptions = NetworkOptions(), onListening: (@Sendable (PeerAddress?) -> Void)? = nil
    ) throws -> PeerlogService {
        guard replica.store.access == .readWrite else {
            throw PeerlogError(.home, "\(home) is read-only: a node must write its store")
        }
        var logger = Logger(label: "peerlog")
        logger.logLevel = options.logLevel
        do {
            // What pairings taught this home (peers, inviters, invitations to accept).
            var configuration = options.configuration
            try PairingsFile(home: home).apply(to: &configuration)
            return PeerlogService(
                peerlog: self,
                node: try PeerlogNode(
                    home: home, configuration: configuration, logger: logger, replica: replica,
                    onListening: onListening))
        } catch {
            throw PeerlogError(.network, "cannot start the node in \(home): \(error)")
        }
    }
}
