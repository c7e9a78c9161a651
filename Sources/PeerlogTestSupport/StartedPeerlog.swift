import Foundation

/// A `peerlog` process started without waiting for it, so several can run at the same
/// moment (races between processes); `wait` collects its result. Killed if never waited for.
public final class StartedPeerlog: @unchecked Sendable {
    /// The arguments given to the `peerlog` binary.
    public let arguments: [String]
    private let process = Process()
    private let dir: String

    /// Starts the built `peerlog` binary with `arguments`, stdin empty, output to files in a fresh
    /// temporary directory. Throws when the directory cannot be made or the process cannot start.
    public init(_ arguments: [String]) throws {
        self.arguments = arguments
        dir = try TestSupport.temporaryDirectory()
        _ = FileManager.default.createFile(atPath: dir + "/out", contents: nil)
        _ = FileManager.default.createFile(atPath: dir + "/err", contents: nil)
        process.executableURL = URL(fileURLWithPath: TestSupport.peerlogBinary)
        process.arguments = arguments
        process.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: dir + "/out"))
        process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: dir + "/err"))
        process.standardInput = FileHandle.nullDevice
        try TestSupport.launch(process)
    }

    /// Everything written to stdout so far.
    public var stdout: String { (try? String(contentsOfFile: dir + "/out", encoding: .utf8)) ?? "" }
    /// Everything written to stderr so far.
    public var stderr: String { (try? String(contentsOfFile: dir + "/err", encoding: .utf8)) ?? "" }
    /// Whether the process is still running.
    public var isRunning: Bool { process.isRunning }

    /// Waits for the exit (SIGKILL after `timeout`) and returns status and output.
    public func wait(timeout: TimeInterval = 60) -> TestSupport.ProcessResult {
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning && Date() < deadline { usleep(5_000) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
        TestSupport.closeStreams(of: process)
        return TestSupport.ProcessResult(status: process.terminationStatus, stdout: stdout, stderr: stderr)
    }

    /// SIGTERM (the daemon's graceful stop), then `wait`.
    public func stop(timeout: TimeInterval = 10) -> TestSupport.ProcessResult {
        if process.isRunning { process.terminate() }
        return wait(timeout: timeout)
    }

    deinit {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        try? FileManager.default.removeItem(atPath: dir)
    }
}
