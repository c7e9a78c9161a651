import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Talks to a running daemon's control socket (blocking; used by the CLI).
public enum ControlClient {
    public static let timeoutSeconds = 5

    /// Sends one request and returns the reply document.
    public static func request(_ request: ControlRequest, socketPath: String) throws -> [UInt8] {
        try exchange(request.line, socketPath: socketPath)
    }

    private static func exchange(_ line: String, socketPath: String) throws -> [UInt8] {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw NodeError.controlSocket("socket(): \(String(cString: strerror(errno)))") }
        defer { Glibc.close(fd) }
        var tv = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        let path = Array(socketPath.utf8)
        guard path.count < MemoryLayout.size(ofValue: addr.sun_path) else { throw NodeError.controlSocket("path too long: \(socketPath)") }
        withUnsafeMutableBytes(of: &addr.sun_path) { raw in
            raw.copyBytes(from: path)
            raw[path.count] = 0
        }
        let connected = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard connected == 0 else {
            throw NodeError.controlSocket("no daemon answers at \(socketPath) (\(String(cString: strerror(errno)))); start one with `peerlog daemon`")
        }
        let out = Array((line + "\n").utf8)
        guard out.withUnsafeBytes({ send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) == out.count else {
            throw NodeError.controlSocket("cannot send request: \(String(cString: strerror(errno)))")
        }
        var reply: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n == 0 { break }
            guard n > 0 else { throw NodeError.controlSocket("no reply within \(timeoutSeconds) s: \(String(cString: strerror(errno)))") }
            reply += chunk[..<n]
            guard reply.count <= 16 << 20 else { throw NodeError.controlSocket("reply over 16 MiB") }
        }
        return reply
    }

    /// Whether something answers at the path (a daemon already runs for this home).
    public static func isAnswering(socketPath: String) -> Bool {
        (try? request(.ping, socketPath: socketPath)) != nil
    }

    public static func status(socketPath: String) throws -> NodeStatus {
        try decode(NodeStatus.self, request(.status, socketPath: socketPath))
    }

    /// A reply document as `T`, or the daemon's `{"error": …}` as a thrown error.
    public static func decode<T: Decodable>(_ type: T.Type, _ reply: [UInt8]) throws -> T {
        if let error = try? JSONDecoder().decode([String: String].self, from: Data(reply)), let message = error["error"] {
            throw NodeError.controlSocket(message)
        }
        do { return try JSONDecoder().decode(T.self, from: Data(reply)) } catch {
            throw NodeError.controlSocket("unreadable reply: \(error)")
        }
    }
}
