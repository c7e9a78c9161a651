import Foundation

/// A `peerlog daemon` process for the multi-process benchmarks (loopback, no discovery).
struct BenchDaemon {
    let process: Process
    let address: String

    /// The `peerlog` binary: $PEERLOG_BIN, else one beside peerlog-bench, else the main package's
    /// build in the same configuration (`.build/release/peerlog` in a directory above this one).
    static var binary: String {
        get throws {
            if let path = ProcessInfo.processInfo.environment["PEERLOG_BIN"], !path.isEmpty { return path }
            let here = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
                .deletingLastPathComponent()
            let configuration = here.lastPathComponent
            if FileManager.default.isExecutableFile(atPath: here.appendingPathComponent("peerlog").path) {
                return here.appendingPathComponent("peerlog").path
            }
            var directory = here
            while directory.path != "/" {
                directory = directory.deletingLastPathComponent()
                let path = directory.appendingPathComponent(".build/\(configuration)/peerlog").path
                if FileManager.default.isExecutableFile(atPath: path) { return path }
            }
            throw BenchError(
                "no peerlog binary: build it in the same configuration (swift build -c \(configuration), which builds peerlog and peerlog-full) or set PEERLOG_BIN"
            )
        }
    }

    /// Starts a daemon (or, with `command: ["relay", "run"]`, a relay) and waits for its
    /// "listening on" line.
    init(home: String, listen: String = "127.0.0.1:0", command: [String] = ["daemon"], _ extra: [String]) throws {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: try Self.binary)
        p.arguments =
            command + ["--home", home, "--listen", listen, "--log-level", "warning"]
            + (command == ["daemon"] ? ["--no-discovery"] : []) + extra
        let out = Pipe()
        p.standardOutput = out
        // Warnings (a killed peer's connections, …) go to HOME/daemon.stderr, not the figures.
        _ = FileManager.default.createFile(atPath: home + "/daemon.stderr", contents: nil)
        p.standardError = FileHandle(forWritingAtPath: home + "/daemon.stderr")
        try p.run()
        // The "listening on" line; an `--http` line may come before or after it.
        var line = ""
        while !line.contains("listening on") {
            let data = out.fileHandleForReading.availableData
            if data.isEmpty { break }
            line += String(decoding: data, as: UTF8.self)
        }
        let first = line.split(separator: "\n").first { $0.contains("listening on") } ?? ""
        guard let address = first.split(separator: " ").last?.trimmingCharacters(in: .whitespacesAndNewlines),
            address.contains(":")
        else {
            p.waitUntilExit()
            let stderr = (try? String(contentsOfFile: home + "/daemon.stderr", encoding: .utf8)) ?? ""
            throw BenchError("daemon said: \(line) \(stderr)")
        }
        process = p
        self.address = address
    }

    /// SIGTERM by pid (Foundation's `terminate()` was seen to leave the daemon running), then
    /// wait up to 10 s, then SIGKILL.
    func stop() {
        let pid = process.processIdentifier
        kill(pid, SIGTERM)
        for _ in 0..<200 where kill(pid, 0) == 0 {
            var status: Int32 = 0
            if waitpid(pid, &status, WNOHANG) == pid { return }
            usleep(50_000)
        }
        kill(pid, SIGKILL)
    }

    /// A crash: SIGKILL, reaped.
    func kill9() {
        let pid = process.processIdentifier
        kill(pid, SIGKILL)
        var status: Int32 = 0
        waitpid(pid, &status, 0)
    }
}
