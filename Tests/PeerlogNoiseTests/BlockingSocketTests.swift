import Foundation
import PeerlogChannel
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The one blocking client socket of the tools: each failure names its step, and bytes make a
/// round trip through a loopback listener.
struct BlockingSocketTests {
    @Test func failuresNameTheirStep() throws {
        let long = "/tmp/" + String(repeating: "x", count: 200)
        let tooLong = #expect(throws: BlockingSocket.Failure.self) {
            try BlockingSocket(unixPath: long, timeoutSeconds: 1)
        }
        #expect(tooLong?.step == .path && tooLong?.description == "path too long: \(long)")
        let absent = #expect(throws: BlockingSocket.Failure.self) {
            try BlockingSocket(unixPath: NSTemporaryDirectory() + "absent-\(UUID().uuidString).sock", timeoutSeconds: 1)
        }
        #expect(absent?.step == .connect)
        let refused = #expect(throws: BlockingSocket.Failure.self) {
            try BlockingSocket(host: "127.0.0.1", port: try Self.closedPort())
        }
        #expect(refused?.step == .connect && refused?.description == "Connection refused")
    }

    @Test func bytesRoundTripOverLoopback() throws {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(listener) }
        let port = try Self.bind(listener)
        #expect(listen(listener, 1) == 0)
        let client = try BlockingSocket(host: "127.0.0.1", port: port)
        let server = accept(listener, nil, nil)
        #expect(server >= 0)
        try client.send(Array("ping".utf8))
        var buffer = [UInt8](repeating: 0, count: 16)
        let n = buffer.withUnsafeMutableBytes { recv(server, $0.baseAddress, $0.count, 0) }
        #expect(Array(buffer[..<n]) == Array("ping".utf8))
        #expect(!client.waitReadable(until: Date().addingTimeInterval(0.05)))
        _ = Array("pong".utf8).withUnsafeBytes { send(server, $0.baseAddress, $0.count, 0) }
        #expect(client.waitReadable(until: Date().addingTimeInterval(5)))
        #expect(try client.receive() == Array("pong".utf8))
        close(server)
        #expect(client.waitReadable(until: Date().addingTimeInterval(5)))
        #expect(try client.receive().isEmpty)
    }

    /// Binds to 127.0.0.1 on a free port and returns it.
    static func bind(_ fd: Int32) throws -> Int {
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        addr.sin_port = 0
        let bound = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0 else { throw BindFailed() }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return Int(UInt16(bigEndian: addr.sin_port))
    }

    /// A port nothing listens on (bound, then closed).
    static func closedPort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        return try bind(fd)
    }
}
struct BindFailed: Error {}
