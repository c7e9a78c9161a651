import ArgumentParser
import Peerlog
import PeerlogCrypto
import PeerlogEncoding
import PeerlogModel

struct Id: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "id", abstract: "Print this node's identity, device id and certificate.")

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

/// UTC ISO 8601 with milliseconds (`WallClock.iso8601(millis:)`).
func formatMillis(_ ms: UInt64) -> String { WallClock.iso8601(millis: ms) }
