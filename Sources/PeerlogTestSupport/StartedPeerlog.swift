import Foundation

/// A `peerlog` process started without waiting for it, so several can run at the same
/// moment (races between processes); `wait` collects its result. Killed if never waited for.
public final class StartedPeerlog: @unchecked Sendable {
    /// The arguments given to the `peerlog` binary.
    public let arguments: [String]
    private let process: ChildProcess
    private let dir: String

    /// Starts the built `peerlog` binary with `arguments`, stdin empty, output to files in a fresh
    /// temporary directory. Throws when the directory cannot be made or the process cannot start.
    public init(_ arguments: [String]) throws {
        self.arguments = arguments
        dir = try TestSupport.temporaryDirectory()
        _ = FileManager.default.createFile(atPath: dir + "/out", contents: nil)
        _ = FileManager.default.createFile(atPath: dir + "/err", contents: nil)
        process = try ChildProcess(TestSupport.peerlogBinary, arguments, stdout: dir + "/out", stderr: dir + "/err")
    }

    /// Everything written to stdout so far.
    public var stdout: String { (try? String(contentsOfFile: dir + "/out", encoding: .utf8)) ?? "" }
    /// Everything written to stderr so far.
    public var stderr: String { (try? String(contentsOfFile: dir + "/err", encoding: .utf8)) ?? "" }
    /// Whether the process is still running.
    public var isRunning: Bool { process.isRunning }

    /// Waits for the exit (SIGKILL after `timeout`) and returns status and output.
    public func wait(timeout: TimeInterval = 60) -> TestSupport.ProcessResult {
        let status = process.wait(timeout: timeout)
        return TestSupport.ProcessResult(status: status, stdout: stdout, stderr: stderr)
    }

    /// SIGTERM (the daemon's graceful stop), then `wait`.
    public func stop(timeout: TimeInterval = 10) -> TestSupport.ProcessResult {
        process.signal(SIGTERM)
        return wait(timeout: timeout)
    }

    deinit { try? FileManager.default.removeItem(atPath: dir) }
}
