#if canImport(Glibc)
import Glibc
#endif

/// `peerlog-full`, the whole CLI, installed beside the launcher.
enum FullCommand {
    /// Its file name; it must sit in the launcher's directory.
    static let name = "peerlog-full"

    /// Whether every argument is UTF-8. `CommandLine.arguments` replaces bad bytes with U+FFFD,
    /// so the launcher leaves any other case to the full CLI, which names the argument.
    static var argumentsAreUTF8: Bool {
        (1..<Int(CommandLine.argc)).allSatisfy { index in
            guard let pointer = CommandLine.unsafeArgv[index] else { return true }
            return String(validatingCString: pointer) != nil
        }
    }

    /// Executes `peerlog-full` with this process's arguments (the first, as typed, too) and
    /// environment: same pid, same standard streams. Returns only on failure, exiting 127.
    static func replaceProcess() -> Never {
        let path = directory + "/" + name
        execv(path, CommandLine.unsafeArgv)
        let reason = String(cString: strerror(errno))
        let message =
            "peerlog: cannot run \(path): \(reason) (peerlog runs \(name) for this command: `swift build` "
            + "builds both; install them side by side)\n"
        _ = message.withCString { write(2, $0, strlen($0)) }
        exit(127)
    }

    /// The launcher's own directory, from `/proc/self/exe` (symlinks resolved, so a link to
    /// the launcher finds `peerlog-full` beside the real file).
    private static var directory: String {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let n = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard n > 0 else { return "." }
        let path = String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }
}
