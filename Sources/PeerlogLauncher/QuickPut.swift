import PeerlogQuickCalls

#if canImport(Glibc)
import Glibc
#endif

/// `peerlog put GROUP KEY VALUE` handed to the home's running daemon: the daemon holds the
/// store open and writes at once, so a script's put costs a small process and one write, not
/// the full CLI opening the store (docs/CLI.md). Only that plain form with at most `--home`
/// and `--json`, no field empty, goes this way, and only when a daemon answers and this
/// process could write the store itself; anything else, or a write the daemon refuses
/// (nothing is written then), runs the full command, which gives its own message and exit
/// status.
enum QuickPut {
    /// Seconds to wait for the daemon's reply once the request is sent. Past it the write may
    /// have happened, so the command fails rather than write again.
    static let replySeconds = 60

    /// The exit status when the daemon took the write; nil when the full command must run.
    static func run(_ arguments: ArraySlice<String>) -> Int32? {
        guard arguments.first == "put", let (home, put, json) = parse(arguments.dropFirst()) else { return nil }
        // Only what this process could write itself: a home it sees read-only (a read-only
        // mount, say) gets the full command's refusal, not a write through the daemon.
        guard access(HomeLayout.store(home), W_OK) == 0 else { return nil }
        let request = Array((put.line + "\n").utf8)
        let socket = HomeLayout.controlSocket(home)
        guard request.count <= HomeLayout.maxControlRequestBytes, let fd = connect(to: socket) else { return nil }
        defer { close(fd) }
        guard writeAll(request, { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) else { return nil }
        var reply = [UInt8]()
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 {
                guard n == 0 else {
                    let why =
                        errno == EAGAIN || errno == EWOULDBLOCK
                        ? "within \(replySeconds) s" : String(cString: strerror(errno))
                    return fail(
                        "the daemon at \(socket) took the write but gave no answer (\(why)); "
                            + "see `peerlog get \(put.group) \(put.key)` before writing again")
                }
                break
            }
            reply += chunk[0..<n]
        }
        // An error reply means nothing was written: the full command writes and reports. Any
        // other reply that is not a stored write (none: the daemon stopped mid-request) leaves
        // it unknown whether it wrote, so the call fails rather than write again.
        if reply.starts(with: Array(#"{"error":"#.utf8)) { return nil }
        guard let stored = ControlPut.Stored(reply: reply) else {
            return fail(
                "the daemon at \(socket) took the write but gave no usable answer "
                    + "(\"\(String(decoding: reply.prefix(80), as: UTF8.self))\"); "
                    + "see `peerlog get \(put.group) \(put.key)` before writing again")
        }
        return write(json ? Self.json(stored) : Self.text(stored, key: put.key), to: 1) ? 0 : 1
    }

    /// The home, the request and whether `--json` was given, when the arguments are the plain
    /// form: three positionals, at most `--home DIR` / `--home=DIR` and `--json`.
    static func parse(_ arguments: ArraySlice<String>) -> (home: String, put: ControlPut, json: Bool)? {
        var positionals = [String]()
        var home: String?
        var json = false
        var rest = arguments[...]
        while let argument = rest.popFirst() {
            if argument == "--home", home == nil, let value = rest.popFirst(), !value.hasPrefix("-") {
                home = value
            } else if argument.hasPrefix("--home="), home == nil {
                home = String(argument.dropFirst("--home=".count))
            } else if argument == "--json", !json {
                json = true
            } else if argument.hasPrefix("-") {
                return nil
            } else {
                positionals.append(argument)
            }
        }
        // An empty field cannot travel (the daemon trims its line): the full command takes it.
        guard positionals.count == 3, !positionals.contains(where: \.isEmpty) else { return nil }
        let put = ControlPut(group: positionals[0], key: positionals[1], value: positionals[2])
        return (home ?? HomeLayout.defaultHome, put, json)
    }

    /// What `put` prints: `Set "KEY"`, then the receipt and where it stands.
    static func text(_ stored: ControlPut.Stored, key: String) -> String {
        "Set \"\(key)\"\nreceipt \(stored.cid): "
            + (stored.seq.map { "committed at seq \($0)\n" } ?? "tentative (waiting for the group's sequencer)\n")
    }

    /// What `put --json` prints (the CLI's pretty JSON: two-space indent, `"key": value`).
    /// Every field is plain ASCII without quotes or backslashes, so none needs escaping.
    static func json(_ stored: ControlPut.Stored) -> String {
        let status = stored.seq == nil ? "tentative" : "committed"
        let fields = [
            ("group", "\"\(stored.group)\""), ("cid", "\"\(stored.cid)\""), ("type", "\"\(stored.type)\""),
            ("status", "\"\(status)\""), ("seq", stored.seq.map(String.init) ?? "null"),
        ]
        return "{\n" + fields.map { "  \"\($0.0)\": \($0.1)" }.joined(separator: ",\n") + "\n}\n"
    }

    /// A connected Unix socket, or nil when nothing listens there (no daemon: not an error).
    private static func connect(to path: String) -> Int32? {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { return nil }
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return nil }
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
        var timeout = timeval(tv_sec: replySeconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard connected == 0 else {
            close(fd)
            return nil
        }
        return fd
    }

    /// Hands all of `bytes` to `call` (`send` or `write`), again after a short or interrupted one.
    private static func writeAll(_ bytes: [UInt8], _ call: (UnsafeRawBufferPointer) -> Int) -> Bool {
        var done = 0
        while done < bytes.count {
            let n = bytes[done...].withUnsafeBytes(call)
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { return false }
            done += n
        }
        return true
    }

    private static func write(_ text: String, to fd: Int32) -> Bool {
        writeAll(Array(text.utf8)) { Glibc.write(fd, $0.baseAddress, $0.count) }
    }

    private static func fail(_ message: String) -> Int32 {
        _ = write("Error: \(message)\n", to: 2)
        return 1
    }
}
