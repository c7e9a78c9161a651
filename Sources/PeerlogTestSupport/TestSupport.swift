import Foundation
import PeerlogSequencer
import Synchronization

/// Helpers shared by the test targets: paths, a seeded RNG, and running real processes
/// (the Python interop peers and the built `peerlog` binary).
public enum TestSupport {
    /// The repository root (this file lives in Sources/PeerlogTestSupport/).
    public static let repoRoot: String = {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { url.deleteLastPathComponent() }
        return url.path
    }()

    /// The path of the test vector file `name` under Tests/Vectors/; whether it exists is not checked.
    public static func vectorPath(_ name: String) -> String { repoRoot + "/Tests/Vectors/" + name }

    /// The Python of the venv that tools/setup.sh creates; tests fail clearly without it.
    public static var python: String {
        ProcessInfo.processInfo.environment["PEERLOG_PYTHON"] ?? repoRoot + "/.venv/bin/python"
    }

    /// The `peerlog` binary built alongside the tests.
    public static var peerlogBinary: String {
        ProcessInfo.processInfo.environment["PEERLOG_BIN"] ?? repoRoot + "/.build/debug/peerlog"
    }

    /// How a process ended and what it wrote.
    public struct ProcessResult: Sendable {
        /// The exit status, or the signal number when a signal ended it (`Process.terminationStatus`).
        public let status: Int32
        /// Everything written to standard output, as UTF-8 ("" when unreadable).
        public let stdout: String
        /// Everything written to standard error, as UTF-8 ("" when unreadable).
        public let stderr: String
    }

    /// A process could not run or did not end as required (missing binary, time limit, non-zero
    /// exit of a helper script).
    public struct ProcessError: Error, CustomStringConvertible {
        /// What went wrong, with the program and, where there is one, its stderr.
        public let description: String
        /// An error with this text.
        public init(description: String) { self.description = description }
    }

    /// Runs `body` (setenv, unsetenv, or reading the environment to pass on a child's copy of)
    /// while no other test changes the environment: a concurrent setenv(3) made a launch read
    /// freed memory.
    public static func withEnvironmentLocked<T>(_ body: () throws -> T) rethrows -> T {
        try environmentLock.withLock(body)
    }

    private static let environmentLock = NSRecursiveLock()

    /// Runs `executable` with `arguments` to completion, `input` on its stdin and `environment`
    /// merged over the test process's environment (a `ChildProcess`: clean signal mask).
    /// Throws `ProcessError` when the file is not executable, or when it runs longer than
    /// `timeout` seconds (it is then killed); a non-zero exit is not an error: look at `status`.
    public static func run(
        _ executable: String, _ arguments: [String], input: String = "", environment: [String: String] = [:],
        timeout: TimeInterval = 120
    ) throws -> ProcessResult {
        guard FileManager.default.isExecutableFile(atPath: executable) else {
            throw ProcessError(description: "\(executable) is missing; run tools/setup.sh first")
        }
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try Data(input.utf8).write(to: URL(fileURLWithPath: dir + "/in"))
        let env = withEnvironmentLocked { ProcessInfo.processInfo.environment.merging(environment) { $1 } }
        let child = try ChildProcess(
            executable, arguments, environment: env, stdin: dir + "/in", stdout: dir + "/out", stderr: dir + "/err",
            lifetime: timeout + 30)
        let deadline = Date().addingTimeInterval(timeout)
        while child.isRunning {
            if Date() > deadline {
                child.stop(grace: 5)
                throw ProcessError(description: "\(executable) \(arguments) timed out after \(timeout)s")
            }
            usleep(2_000)
        }
        let out = (try? String(contentsOfFile: dir + "/out", encoding: .utf8)) ?? ""
        let err = (try? String(contentsOfFile: dir + "/err", encoding: .utf8)) ?? ""
        return ProcessResult(status: child.status ?? -1, stdout: out, stderr: err)
    }

    /// Runs `tools/interop/<script>` with the venv's Python; throws unless it exits 0.
    public static func python(_ script: String, _ arguments: [String] = [], input: String = "") throws -> String {
        let r = try run(python, [repoRoot + "/tools/interop/" + script] + arguments, input: input)
        guard r.status == 0 else { throw ProcessError(description: "\(script) exited \(r.status): \(r.stderr)") }
        return r.stdout
    }

    /// Runs the built `peerlog` binary.
    public static func peerlog(_ arguments: [String], environment: [String: String] = [:]) throws -> ProcessResult {
        try run(peerlogBinary, arguments, environment: environment)
    }

    /// Runs `peerlog ARGUMENTS` and kills it with SIGKILL as soon as `killAt` says so of what it
    /// has printed on stdout so far (checked every millisecond; say, once it acknowledged a number
    /// of writes: a kill test counts progress, never time), or after `timeout` seconds. Returns
    /// what it printed by then, whether the signal ended it (false: it finished first) and its
    /// exit status when it finished.
    public static func peerlogKilled(
        _ arguments: [String], timeout: TimeInterval = 120, when killAt: (String) -> Bool
    ) throws -> (
        stdout: String, killed: Bool, status: Int32
    ) {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let child = try ChildProcess(peerlogBinary, arguments, stdout: dir + "/out", lifetime: timeout + 30)
        let deadline = Date().addingTimeInterval(timeout)
        func printed() -> String { (try? String(contentsOfFile: dir + "/out", encoding: .utf8)) ?? "" }
        while child.isRunning && Date() < deadline && !killAt(printed()) { usleep(1_000) }
        let status = child.kill9()
        return (printed(), child.endedBySignal, status)
    }

    /// `peerlogKilled(_:when:)` killing after `microseconds`, for tests whose assertions hold
    /// wherever the kill lands (all or nothing), never for ones that need progress by then.
    public static func peerlogKilled(
        _ arguments: [String], after microseconds: UInt32
    ) throws -> (stdout: String, killed: Bool, status: Int32) {
        let at = Date().addingTimeInterval(Double(microseconds) / 1_000_000)
        return try peerlogKilled(arguments) { _ in Date() >= at }
    }

    /// How many lines of `stdout` start with "ok " (what `peerlog debug append-loop` prints per
    /// acknowledged write).
    public static func acknowledgedLines(_ stdout: String) -> Int {
        stdout.split(separator: "\n").count { $0.hasPrefix("ok ") }
    }

    /// A fresh private directory under the system temporary directory.
    public static func temporaryDirectory() throws -> String {
        let path = NSTemporaryDirectory() + "peerlog-test-" + UUID().uuidString
        try FileManager.default.createDirectory(
            atPath: path, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        removeAtExit(path)
        return path
    }

    /// Removes `path` when the test process exits (suites are structs: they have no `deinit` to
    /// clean up in), unless `PEERLOG_KEEP_TEST_DIRS` is set to look at what a failed test left.
    public static func removeAtExit(_ path: String) {
        _ = registerCleanup
        createdPaths.withLock { $0.append(path) }
    }

    private static let createdPaths = Mutex<[String]>([])
    private static let registerCleanup: Void = {
        atexit {
            guard ProcessInfo.processInfo.environment["PEERLOG_KEEP_TEST_DIRS"] == nil else { return }
            for path in TestSupport.createdPaths.withLock({ $0 }) { try? FileManager.default.removeItem(atPath: path) }
        }
    }()

    /// Lowercase hex, two digits per byte, no separators.
    public static func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

    /// The bytes of `hex` (two digits per byte, either case). Traps on an odd length or a non-hex
    /// digit: for literals in tests only.
    public static func bytes(hex: String) -> [UInt8] {
        var out = [UInt8]()
        var i = hex.startIndex
        while i < hex.endIndex {
            let j = hex.index(i, offsetBy: 2)
            out.append(UInt8(hex[i..<j], radix: 16)!)
            i = j
        }
        return out
    }
}

/// A small seeded generator so property tests are reproducible from a printed seed: the
/// sequencer's SplitMix64 (one implementation; equal seeds give the sequences they always did).
public typealias SeededRandom = SequencerRNG

extension SequencerRNG {
    /// `n` bytes drawn from this generator: the same seed gives the same bytes.
    public mutating func bytes(_ n: Int) -> [UInt8] { (0..<n).map { _ in UInt8.random(in: 0...255, using: &self) } }
}
