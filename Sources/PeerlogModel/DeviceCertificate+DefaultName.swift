#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension DeviceCertificate {
    /// This machine's host name as a device name (the CLI's and the library's default): read
    /// with gethostname(2), which unlike Foundation's `ProcessInfo.hostName` is thread-safe on
    /// Linux; cut to `maxNameBytes` at a character boundary; "device" when there is none.
    public static func defaultName() -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count) == 0 else { return "device" }
        let name = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        var cut = ""
        for c in name where cut.utf8.count + String(c).utf8.count <= maxNameBytes { cut.append(c) }
        return cut.isEmpty ? "device" : cut
    }
}
