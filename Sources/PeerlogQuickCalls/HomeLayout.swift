#if canImport(Glibc)
import Glibc
#endif

/// Where a home keeps what the launcher, the CLI and the node all name: one definition, read
/// without Foundation so the launcher can use it.
public enum HomeLayout {
    /// `$PEERLOG_HOME`, else `$XDG_DATA_HOME/peerlog`, else `~/.local/share/peerlog` (an empty
    /// variable counts as unset).
    public static var defaultHome: String {
        func env(_ name: String) -> String? {
            getenv(name).map { String(cString: $0) }.flatMap { $0.isEmpty ? nil : $0 }
        }
        if let home = env("PEERLOG_HOME") { return home }
        if let xdg = env("XDG_DATA_HOME") { return xdg + "/peerlog" }
        return (getenv("HOME").map { String(cString: $0) } ?? ".") + "/.local/share/peerlog"
    }

    /// The home's store.
    public static func store(_ home: String) -> String { home + "/replica.sqlite" }

    /// The home's control socket, unless a daemon's configuration names another.
    public static func controlSocket(_ home: String) -> String { home + "/peerlog.sock" }

    /// Longest request line a control socket reads, its newline included.
    public static let maxControlRequestBytes = 4096
}
