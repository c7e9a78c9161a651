import ArgumentParser
import Peerlog
import PeerlogModel
#if canImport(Glibc)
import Glibc
#endif

/// `--home DIR`: where a node keeps its keys and store.
struct HomeOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("Node directory (default: $PEERLOG_HOME, else $XDG_DATA_HOME/peerlog, else ~/.local/share/peerlog).", valueName: "dir"))
    var home: String?

    var path: String {
        if let home { return home }
        if let env = getenv("PEERLOG_HOME").map({ String(cString: $0) }), !env.isEmpty { return env }
        if let xdg = getenv("XDG_DATA_HOME").map({ String(cString: $0) }), !xdg.isEmpty { return xdg + "/peerlog" }
        let user = getenv("HOME").map { String(cString: $0) } ?? "."
        return user + "/.local/share/peerlog"
    }

    /// The replica in this home through the facade; the init hint when it has no identity. A
    /// home that is not writable opens read-only, for the reading commands.
    func open(rebuildViews: Bool = true) async throws -> Peerlog {
        try requireIdentity(initCommand: "peerlog init")
        return try await Peerlog.open(home: path, create: false, rebuildViews: rebuildViews)
    }

    func loadDevice() throws -> LocalDevice { try LocalDevice.load(home: path) }

    /// Fails with the init hint when the home holds no identity. Checked before opening, so
    /// that other failures (a locked or damaged store) never send the user to init.
    func requireIdentity(initCommand: String) throws {
        guard FileIO.exists(LocalDevice.paths(home: path).certificate) else {
            throw CLIError("\(path) is not initialised (run: \(initCommand) --home \(path))")
        }
    }
}

func hostName() -> String {
    var buf = [CChar](repeating: 0, count: 256)
    guard gethostname(&buf, buf.count) == 0 else { return "device" }
    let name = buf.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
    return name.isEmpty ? "device" : String(name.prefix(DeviceCertificate.maxNameBytes))
}

/// Writes to standard error.
func printError(_ message: String) {
    var err = StandardError()
    print(message, to: &err)
}

struct StandardError: TextOutputStream {
    mutating func write(_ string: String) {
        var bytes = Array(string.utf8)
        _ = bytes.withUnsafeMutableBytes { Glibc.write(2, $0.baseAddress, $0.count) }
    }
}
