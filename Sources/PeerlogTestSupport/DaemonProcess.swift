import Foundation

/// A real `peerlog daemon` process on loopback, for tests: started on a free port, stopped
/// with SIGTERM (SIGKILL after a time limit) and never left running.
public final class DaemonProcess: @unchecked Sendable {
    public let home: String
    public private(set) var port = 0
    public private(set) var device = ""
    private let process = Process()
    private let outPath: String
    private let errPath: String

    /// Starts the daemon and waits (up to `timeout`) for its "listening on" line.
    public init(home: String, listenPort: Int = 0, arguments: [String] = [], timeout: TimeInterval = 30) throws {
        self.home = home
        outPath = home + "/daemon.stdout"
        errPath = home + "/daemon.stderr"
        _ = FileManager.default.createFile(atPath: outPath, contents: nil)
        _ = FileManager.default.createFile(atPath: errPath, contents: nil)
        process.executableURL = URL(fileURLWithPath: TestSupport.peerlogBinary)
        process.arguments = ["daemon", "--home", home, "--listen", "127.0.0.1:\(listenPort)"] + arguments
        process.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: outPath))
        process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: errPath))
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            let out = stdout
            if let range = out.range(of: "listening on 127.0.0.1:") {
                let rest = out[range.upperBound...].prefix { $0.isNumber }
                port = Int(rest) ?? 0
                if let d = out.range(of: "device ") { device = String(out[d.upperBound...].prefix { !$0.isWhitespace }) }
                break
            }
            guard process.isRunning else {
                throw TestSupport.ProcessError(description: "daemon exited \(process.terminationStatus) before listening: \(stderr)")
            }
            guard Date() < deadline else {
                stop()
                throw TestSupport.ProcessError(description: "daemon did not listen within \(timeout) s: \(stderr)")
            }
            usleep(20_000)
        }
    }

    public var address: String { "127.0.0.1:\(port)" }
    public var stdout: String { (try? String(contentsOfFile: outPath, encoding: .utf8)) ?? "" }
    public var stderr: String { (try? String(contentsOfFile: errPath, encoding: .utf8)) ?? "" }
    public var isRunning: Bool { process.isRunning }
    public var pid: Int32 { process.processIdentifier }

    /// SIGTERM, then SIGKILL if it has not exited within `grace`; returns the exit status.
    @discardableResult
    public func stop(grace: TimeInterval = 10) -> Int32 {
        guard process.isRunning else { return process.terminationStatus }
        process.terminate()
        let deadline = Date().addingTimeInterval(grace)
        while process.isRunning && Date() < deadline { usleep(10_000) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
        return process.terminationStatus
    }

    public func kill9() {
        guard process.isRunning else { return }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    deinit { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }
}

extension TestSupport {
    /// A loopback port nothing listens on right now (for daemons that must know each
    /// other's ports before they start).
    public static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        addr.sin_port = 0
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        let ok = withUnsafeMutablePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, len) == 0 && getsockname(fd, $0, &len) == 0 }
        }
        guard ok else { throw ProcessError(description: "no free port") }
        return Int(UInt16(bigEndian: addr.sin_port))
    }

    /// Polls `condition` every 50 ms until it holds or `timeout` passes.
    public static func waitUntil(timeout: TimeInterval, _ condition: () throws -> Bool) rethrows -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if try condition() { return true }
            usleep(50_000)
        }
        return try condition()
    }
}
