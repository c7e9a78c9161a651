import ArgumentParser
import Peerlog
import PeerlogModel

#if canImport(Glibc)
import Glibc
#endif

/// `--home DIR`: where a node keeps its keys and store.
struct HomeOptions: ParsableArguments {
    @Option(
        name: .long,
        help: ArgumentHelp(
            "Node directory (default: $PEERLOG_HOME, else $XDG_DATA_HOME/peerlog, else ~/.local/share/peerlog).",
            valueName: "dir"))
    var home: String?

    var path: String { home ?? Peerlog.defaultHome }

    /// The replica in this home through the facade; the init hint when it has no identity. A
    /// home that is not writable opens read-only, for the reading commands.
    func open(rebuildViews: Bool = true) async throws -> Peerlog {
        try requireIdentity(initCommand: "peerlog init")
        return try await Peerlog.open(home: path, create: false, rebuildViews: rebuildViews)
    }

    /// `open()` for the commands that only read: a home whose store was never created reads as
    /// empty, and no file is created.
    func openForReading(rebuildViews: Bool = true) async throws -> Peerlog {
        try requireIdentity(initCommand: "peerlog init")
        return try await Peerlog.openForReading(home: path, rebuildViews: rebuildViews)
    }

    /// `open()`, and the id `group` names there.
    func open(_ group: GroupArgument) async throws -> (Peerlog, GroupID) {
        let peerlog = try await open()
        return (peerlog, try await group.resolve(in: peerlog))
    }

    /// `openForReading()`, and the id `group` names there.
    func openForReading(_ group: GroupArgument) async throws -> (Peerlog, GroupID) {
        let peerlog = try await openForReading()
        return (peerlog, try await group.resolve(in: peerlog))
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
