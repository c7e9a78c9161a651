import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Minimal blocking TCP on loopback for the two-process benchmarks (the bench does not pull
/// in NIO: what is measured is the channel, not an event loop).
struct BlockingSocket {
    let fd: Int32

    static func listen() throws -> (BlockingSocket, Int) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        let ok = withUnsafeMutablePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, len) == 0 && Glibc.listen(fd, 1) == 0 && getsockname(fd, $0, &len) == 0
            }
        }
        guard ok else { throw BenchError("listen: \(String(cString: strerror(errno)))") }
        return (BlockingSocket(fd: fd), Int(UInt16(bigEndian: addr.sin_port)))
    }

    func accept() throws -> BlockingSocket {
        let c = Glibc.accept(fd, nil, nil)
        guard c >= 0 else { throw BenchError("accept: \(String(cString: strerror(errno)))") }
        return BlockingSocket(fd: c)
    }

    static func connect(port: Int) throws -> BlockingSocket {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        addr.sin_port = UInt16(port).bigEndian
        let ok = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
        guard ok else { throw BenchError("connect: \(String(cString: strerror(errno)))") }
        return BlockingSocket(fd: fd)
    }

    func write(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes {
                Glibc.send(fd, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL))
            }
            guard n > 0 else { throw BenchError("send: \(String(cString: strerror(errno)))") }
            offset += n
        }
    }

    /// Writes all of `bytes` (several frames at once: one `send(2)` for the lot).
    func write(_ bytes: UnsafeRawBufferPointer) throws {
        var offset = 0
        while offset < bytes.count {
            let n = Glibc.send(fd, bytes.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL))
            guard n > 0 else { throw BenchError("send: \(String(cString: strerror(errno)))") }
            offset += n
        }
    }

    /// Reads into a buffer the caller reuses; 0 at end of stream.
    func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        let n = recv(fd, buffer.baseAddress, buffer.count, 0)
        guard n >= 0 else { throw BenchError("recv: \(String(cString: strerror(errno)))") }
        return n
    }

    /// Up to 64 KiB; empty at end of stream. (Reads stay below glibc's mmap threshold, 128 KiB:
    /// bigger buffers are mapped and unmapped on every call, and page faults then dominate.)
    func read() throws -> [UInt8] {
        let max = 1 << 16
        let bytes = try [UInt8](unsafeUninitializedCapacity: max) { buffer, count in
            let n = recv(fd, buffer.baseAddress, max, 0)
            guard n >= 0 else { throw BenchError("recv: \(String(cString: strerror(errno)))") }
            count = n
        }
        return bytes
    }

    func close() { Glibc.close(fd) }
}

struct BenchError: Error, CustomStringConvertible {
    let description: String
    init(_ d: String) { description = d }
}
