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
        guard access(home + "/replica.sqlite", W_OK) == 0 else { return nil }
        let request = Array((put.line + "\n").utf8)
        guard request.count <= ControlPut.maxLineBytes, let fd = connect(to: home + "/peerlog.sock") else {
            return nil
        }
        defer { close(fd) }
        guard send(request, on: fd) else { return nil }
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
                        "the daemon at \(home)/peerlog.sock took the write but gave no answer (\(why)); "
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
        guard let answer = Answer(reply) else {
            return fail(
                "the daemon at \(home)/peerlog.sock took the write but gave no usable answer "
                    + "(\"\(String(decoding: reply.prefix(80), as: UTF8.self))\"); "
                    + "see `peerlog get \(put.group) \(put.key)` before writing again")
        }
        return write(json ? answer.json : answer.text(key: put.key), to: 1) ? 0 : 1
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
        return (home ?? defaultHome, put, json)
    }

    /// `Peerlog.defaultHome`, read without Foundation.
    static var defaultHome: String {
        func env(_ name: String) -> String? {
            getenv(name).map { String(cString: $0) }.flatMap { $0.isEmpty ? nil : $0 }
        }
        if let home = env("PEERLOG_HOME") { return home }
        if let xdg = env("XDG_DATA_HOME") { return xdg + "/peerlog" }
        return (getenv("HOME").map { String(cString: $0) } ?? ".") + "/.local/share/peerlog"
    }

    /// The daemon's reply to a stored write: `{"group":ID,"cid":CID,"type":TYPE,"seq":N|null}`.
    struct Answer {
        var group: String
        var cid: String
        var type: String
        var seq: UInt64?

        init?(_ reply: [UInt8]) {
            let text = String(decoding: reply, as: UTF8.self)
            guard text.hasPrefix(#"{"group":""#), let group = Self.field("group", in: text),
                let cid = Self.field("cid", in: text), let type = Self.field("type", in: text),
                let seq = Self.field("seq", in: text)
            else { return nil }
            self.group = group
            self.cid = cid
            self.type = type
            if seq == "null" {
                self.seq = nil
            } else {
                guard let n = UInt64(seq) else { return nil }
                self.seq = n
            }
        }

        /// What `put` prints: `Set "KEY"`, then the receipt and where it stands.
        func text(key: String) -> String {
            "Set \"\(key)\"\nreceipt \(cid): "
                + (seq.map { "committed at seq \($0)\n" } ?? "tentative (waiting for the group's sequencer)\n")
        }

        /// What `put --json` prints (the CLI's pretty JSON: two-space indent, `"key": value`).
        /// Every field is plain ASCII without quotes or backslashes, so none needs escaping.
        var json: String {
            let status = seq == nil ? "tentative" : "committed"
            let fields = [
                ("group", "\"\(group)\""), ("cid", "\"\(cid)\""), ("type", "\"\(type)\""),
                ("status", "\"\(status)\""), ("seq", seq.map(String.init) ?? "null"),
            ]
            return "{\n" + fields.map { "  \"\($0.0)\": \($0.1)" }.joined(separator: ",\n") + "\n}\n"
        }

        /// A string field's text, or a number's (or `null`): what follows `"name":` up to the
        /// closing quote, or up to `,` or `}`. The daemon writes no spaces and no escapes.
        private static func field(_ name: String, in text: String) -> String? {
            let marker = Array("\"\(name)\":".utf8)
            let bytes = Array(text.utf8)
            guard bytes.count >= marker.count,
                let at = (0...(bytes.count - marker.count)).first(where: {
                    bytes[$0..<$0 + marker.count].elementsEqual(marker)
                })
            else { return nil }
            var rest = bytes[(at + marker.count)...]
            let quoted = rest.first == UInt8(ascii: "\"")
            if quoted { rest = rest.dropFirst() }
            let ends: Set<UInt8> = quoted ? [UInt8(ascii: "\"")] : [UInt8(ascii: ","), UInt8(ascii: "}")]
            guard let end = rest.firstIndex(where: ends.contains) else { return nil }
            return String(decoding: rest[..<end], as: UTF8.self)
        }
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

    private static func send(_ bytes: [UInt8], on fd: Int32) -> Bool {
        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { return false }
            sent += n
        }
        return true
    }

    private static func write(_ text: String, to fd: Int32) -> Bool {
        let bytes = Array(text.utf8)
        var written = 0
        while written < bytes.count {
            let n = bytes[written...].withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { return false }
            written += n
        }
        return true
    }

    private static func fail(_ message: String) -> Int32 {
        _ = write("Error: \(message)\n", to: 2)
        return 1
    }
}
