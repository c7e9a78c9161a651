import ArgumentParser
import Peerlog
import PeerlogCrypto
import PeerlogEncoding

struct Id: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Print this node's identity, device id and certificate.")

    @OptionGroup var home: HomeOptions
    @OptionGroup var output: OutputOptions

    func run() throws {
        let d = try Peerlog.deviceInfo(home: home.path)
        if output.json {
            print(
                JSON.object([
                    ("identity", .string(d.identity.string)),
                    ("device", .string(d.device.string)),
                    ("name", .string(d.name)),
                    ("noise_key", .string(hexString(d.noiseKey))),
                    ("created_ms", .int(d.createdAt)),
                    ("certificate_cid", .string(d.certificateCID.string)),
                    ("certificate", .string(hexString(d.certificate))),
                ]).serialized(pretty: true))
        } else {
            print("identity:    \(d.identity)")
            print("device:      \(d.device)")
            print("name:        \(d.name)")
            print("noise key:   \(hexString(d.noiseKey))")
            print("created:     \(formatMillis(d.createdAt))")
            print("certificate: \(d.certificateCID) (\(d.certificatePath))")
        }
    }
}

/// UTC ISO 8601 with milliseconds, computed without Foundation.
func formatMillis(_ ms: UInt64) -> String {
    let days = Int64(ms / 86_400_000)
    let rem = Int64(ms % 86_400_000)
    // Civil-from-days (Howard Hinnant's algorithm).
    let z = days + 719_468
    let era = (z >= 0 ? z : z - 146_096) / 146_097
    let doe = z - era * 146_097
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
    let mp = (5 * doy + 2) / 153
    let d = doy - (153 * mp + 2) / 5 + 1
    let m = mp < 10 ? mp + 3 : mp - 9
    let y = yoe + era * 400 + (m <= 2 ? 1 : 0)
    func pad(_ v: Int64, _ n: Int) -> String {
        let s = String(v)
        return String(repeating: "0", count: max(0, n - s.count)) + s
    }
    return
        "\(pad(y, 4))-\(pad(m, 2))-\(pad(d, 2))T\(pad(rem / 3_600_000, 2)):\(pad(rem / 60_000 % 60, 2)):\(pad(rem / 1000 % 60, 2)).\(pad(rem % 1000, 3))Z"
}
