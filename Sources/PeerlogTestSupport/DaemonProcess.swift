import Foundation

/// A real `peerlog daemon` process on loopback, for tests: started on a free port, stopped
/// with SIGTERM (SIGKILL after a time limit) and never left running.
public final class DaemonProcess: @unchecked Sendable {
    /// The daemon's home directory, passed as `--home`.
    public let home: String
    /// The host it listens on (`listenHost`).
    public let host: String
    /// The port it reported listening on (the one the system chose when `listenPort` was 0).
    public private(set) var port = 0
    /// The device (or, for a relay, key) it printed after "device " or "key " at start; "" when none.
    public private(set) var device = ""
    private let process: ChildProcess
    private let outPath: String
    private let errPath: String

    /// Starts the daemon and waits (up to `timeout`) for its "listening on" line. `launcher`
    /// runs it through another program (e.g. `tools/lan.sh exec K --` for a namespace host).
    /// `discovery` stays off unless asked for: mDNS may only run inside namespaces the tests
    /// create (tools/lan.sh), never on the machine's real interfaces.
    /// `command` is `["daemon"]` or, for a relay, `["relay", "run"]` (which never uses discovery).
    public init(
        home: String, listenPort: Int = 0, listenHost: String = "127.0.0.1", arguments: [String] = [],
        launcher: [String] = [], discovery: Bool = false, environment: [String: String] = [:],
        timeout: TimeInterval = 30,
        command: [String] = ["daemon"]
    ) throws {
        self.home = home
        self.host = listenHost
        outPath = home + "/daemon.stdout"
        errPath = home + "/daemon.stderr"
        _ = FileManager.default.createFile(atPath: outPath, contents: nil)
        _ = FileManager.default.createFile(atPath: errPath, contents: nil)
        let isDaemon = command == ["daemon"]
        let command =
            command + ["--home", home, "--listen", "\(listenHost):\(listenPort)"]
            + (discovery || !isDaemon ? [] : ["--no-discovery"]) + arguments
        let argv = launcher.isEmpty ? command : Array(launcher.dropFirst()) + [TestSupport.peerlogBinary] + command
        let env = TestSupport.withEnvironmentLocked {
            ProcessInfo.processInfo.environment.merging(environment) { $1 }
        }
        process = try ChildProcess(
            launcher.first ?? TestSupport.peerlogBinary, argv, environment: env, stdout: outPath, stderr: errPath)
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            let out = stdout
            if let range = out.range(of: "listening on \(listenHost):") {
                let rest = out[range.upperBound...].prefix { $0.isNumber }
                port = Int(rest) ?? 0
                if let d = out.range(of: "device ") ?? out.range(of: "key ") {
                    device = String(out[d.upperBound...].prefix { !$0.isWhitespace })
                }
                break
            }
            guard process.isRunning else {
                throw TestSupport.ProcessError(
                    description: "daemon exited \(process.status ?? -1) before listening: \(stderr)")
            }
            guard Date() < deadline else {
                stop()
                throw TestSupport.ProcessError(description: "daemon did not listen within \(timeout) s: \(stderr)")
            }
            usleep(20_000)
        }
    }

    /// "host:port" of the listener, for other daemons to dial.
    public var address: String { "\(host):\(port)" }
    /// Everything the daemon has written to stdout so far.
    public var stdout: String { (try? String(contentsOfFile: outPath, encoding: .utf8)) ?? "" }
    /// Everything the daemon has written to stderr so far.
    public var stderr: String { (try? String(contentsOfFile: errPath, encoding: .utf8)) ?? "" }
    /// Whether the process is still running.
    public var isRunning: Bool { process.isRunning }
    /// The process id (of the launcher when `launcher` was given).
    public var pid: Int32 { process.pid }

    /// SIGTERM, then SIGKILL if it has not exited within `grace`; returns the exit status (the
    /// signal number when a signal ended it).
    @discardableResult
    public func stop(grace: TimeInterval = 10) -> Int32 {
        process.stop(grace: grace)
    }

    /// SIGKILL now, no grace: for crash tests. Returns once the process is gone; does nothing if it
    /// already exited.
    public func kill9() { process.kill9() }
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
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, len) == 0 && getsockname(fd, $0, &len) == 0
            }
        }
        guard ok else { throw ProcessError(description: "no free port") }
        return Int(UInt16(bigEndian: addr.sin_port))
    }

    /// Polls `condition` until it holds or `timeout` passes: every 50 ms, or, when a poll takes
    /// longer than 25 ms, after twice as long as it took (at most 1 s). A poll that runs the CLI
    /// costs a debug build about 0.1 s of CPU, and back to back such polls would take most of a
    /// core from the processes being waited for.
    public static func waitUntil(timeout: TimeInterval, _ condition: () throws -> Bool) rethrows -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            let started = Date()
            if try condition() { return true }
            let took = Date().timeIntervalSince(started)
            usleep(useconds_t(min(1, max(0.05, 2 * took)) * 1_000_000))
        }
        return try condition()
    }
}

extension TestSupport {
    /// Runs a command (`arguments[0]`: a path, or a name looked up in PATH) to completion through
    /// `ChildProcess`, which reaps the pid itself: for scripts that leave daemons behind
    /// (tools/lan.sh), whose exit Foundation's `Process` was seen never to notice. The status is
    /// the exit code, or 128 + the signal that ended it; killed after `timeout` seconds.
    public static func spawnAndWait(_ arguments: [String], timeout: TimeInterval = 60) throws -> ProcessResult {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        let program =
            arguments[0].contains("/")
            ? arguments[0]
            : path.split(separator: ":").map { "\($0)/\(arguments[0])" }.first {
                FileManager.default.isExecutableFile(atPath: $0)
            } ?? arguments[0]
        let child = try ChildProcess(
            program, Array(arguments.dropFirst()), stdout: dir + "/out", stderr: dir + "/err", lifetime: timeout + 30)
        let deadline = Date().addingTimeInterval(timeout)
        while child.isRunning && Date() < deadline { usleep(10_000) }
        if child.isRunning {
            child.kill9()
            throw ProcessError(description: "\(arguments) timed out after \(timeout) s")
        }
        let status = child.status ?? -1
        return ProcessResult(
            status: child.endedBySignal ? 128 + status : status,
            stdout: (try? String(contentsOfFile: dir + "/out", encoding: .utf8)) ?? "",
            stderr: (try? String(contentsOfFile: dir + "/err", encoding: .utf8)) ?? "")
    }
}

extension TestSupport {
    /// Runs the built `peerlog`; throws with its stderr unless it exits 0. Returns stdout.
    @discardableResult
    public static func peerlogOK(_ arguments: [String]) throws -> String {
        let r = try peerlog(arguments)
        guard r.status == 0 else {
            throw ProcessError(description: "peerlog \(arguments.joined(separator: " ")): \(r.stderr)")
        }
        return r.stdout
    }
}
