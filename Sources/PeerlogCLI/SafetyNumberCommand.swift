import ArgumentParser
import Peerlog
import PeerlogEncoding
import PeerlogModel

struct SafetyNumberCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "safety-number",
        abstract: "Show the safety number shared by this identity and another; compare it in person."
    )

    @OptionGroup var home: HomeOptions
    @Argument(help: "The other identity, as printed by `peerlog id`.") var other: String
    @OptionGroup var output: OutputOptions

    func run() throws {
        let me = try Peerlog.deviceInfo(home: home.path).identity
        let them: IdentityID
        do { them = try IdentityID(string: other) } catch { throw CLIError("not an identity: \(error)") }
        let number = SafetyNumber(me, them)
        if output.json {
            print(
                JSON.object([
                    ("identities", .array([.string(me.string), .string(them.string)])),
                    ("safety_number", .string(number.description)),
                ]).serialized())
        } else {
            print("Safety number for \(me.short) and \(them.short):")
            for line in number.lines { print("  " + line) }
            print("It is the same on both devices; if it differs, the identity is not the one you think.")
        }
    }
}
