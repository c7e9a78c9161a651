import Foundation
import PeerlogChannel

/// Talks to a running daemon's control socket (blocking; used by the CLI).
public enum ControlClient {
    /// Seconds each send and receive on the control socket may take before the request fails.
    public static let timeoutSeconds = 5

    /// Sends one request and returns the reply document.
    public static func request(_ request: ControlRequest, socketPath: String) throws -> [UInt8] {
        let socket: BlockingSocket
        do { socket = try BlockingSocket(unixPath: socketPath, timeoutSeconds: timeoutSeconds) } catch let failure
            as BlockingSocket.Failure
        {
            switch failure.step {
            case .connect:
                throw NodeError.controlSocket(
                    "no daemon answers at \(socketPath) (\(failure)); start one with `peerlog daemon`")
            case .path: throw NodeError.controlSocket("\(failure)")
            default: throw NodeError.controlSocket("socket(): \(failure)")
            }
        }
        do { try socket.send(Array((request.line + "\n").utf8)) } catch {
            throw NodeError.controlSocket("cannot send request: \(error)")
        }
        var reply: [UInt8] = []
        while true {
            let chunk: [UInt8]
            do { chunk = try socket.receive() } catch {
                throw NodeError.controlSocket("no reply within \(timeoutSeconds) s: \(error)")
            }
            if chunk.isEmpty { break }
            reply += chunk
            guard reply.count <= 16 << 20 else { throw NodeError.controlSocket("reply over 16 MiB") }
        }
        return reply
    }

    /// Tells the daemon at `socketPath`, if one runs, that this process wrote to its home's store,
    /// so it offers the writes to its peers now rather than at its next poll (250 ms). Does not
    /// wait for the answer; nothing happens when no daemon listens.
    public static func tellWrote(socketPath: String) {
        guard let socket = try? BlockingSocket(unixPath: socketPath, timeoutSeconds: 1) else { return }
        try? socket.send(Array((ControlRequest.wrote.line + "\n").utf8))
    }

    /// Whether something answers at the path (a daemon already runs for this home).
    public static func isAnswering(socketPath: String) -> Bool {
        (try? request(.ping, socketPath: socketPath)) != nil
    }

    /// The daemon's `status` document. Throws `NodeError` (`controlSocket`) when no daemon
    /// answers, it does not reply in time, or the reply is an error or does not decode.
    public static func status(socketPath: String) throws -> NodeStatus {
        try decode(NodeStatus.self, request(.status, socketPath: socketPath))
    }

    /// A reply document as `T`, or the daemon's `{"error": …}` as a thrown error.
    public static func decode<T: Decodable>(_ type: T.Type, _ reply: [UInt8]) throws -> T {
        if let error = try? JSONDecoder().decode([String: String].self, from: Data(reply)), let message = error["error"]
        {
            throw NodeError.controlSocket(message)
        }
        do { return try JSONDecoder().decode(T.self, from: Data(reply)) } catch {
            throw NodeError.controlSocket("unreadable reply: \(error)")
        }
    }
}
