#if canImport(Glibc)
import Glibc
#endif

/// The command line as the kernel passed it. Swift's `CommandLine.arguments` (and so the
/// argument parser) replaces invalid UTF-8 with U+FFFD, which would store a different key
/// than the one typed without a word; so the raw bytes are checked before parsing.
enum RawArguments {
    /// One line naming the first argument that is not valid UTF-8, or nil when all are.
    static func invalidUTF8Problem() -> String? {
        for index in 1..<Int(CommandLine.argc) {
            guard let pointer = CommandLine.unsafeArgv[index] else { continue }
            let bytes = Array(
                UnsafeBufferPointer(
                    start: UnsafeRawPointer(pointer).assumingMemoryBound(to: UInt8.self), count: strlen(pointer)))
            if String(validating: bytes, as: UTF8.self) == nil {
                return
                    "argument \(index) (\(escaped(bytes))) is not valid UTF-8; peerlog takes keys, names and values as UTF-8 text"
            }
        }
        return nil
    }

    /// ASCII as it is, every other byte as \xHH, so the line shows exactly what was given.
    static func escaped(_ bytes: [UInt8]) -> String {
        bytes.map {
            (0x20..<0x7f).contains($0) && $0 != 0x5c
                ? String(UnicodeScalar($0)) : "\\x" + String($0, radix: 16, uppercase: true).leftPadded(to: 2)
        }.joined()
    }
}

private extension String {
    func leftPadded(to width: Int) -> String { String(repeating: "0", count: max(0, width - count)) + self }
}
