import PeerlogEngine
import PeerlogModel

extension SequencerAuthority {
    /// An elected authority among `voters`: 1 to `Peerlog.maxVoters` devices, none listed
    /// twice. The voters are sorted, so every device that builds it builds the same receipt.
    public static func elected(among voters: [DeviceID]) throws -> SequencerAuthority {
        guard (1...GroupLimits.maxVoters).contains(voters.count) else {
            throw PeerlogError(.invalidValue, "elected takes 1 to \(GroupLimits.maxVoters) voter devices")
        }
        guard Set(voters).count == voters.count else { throw PeerlogError(.invalidValue, "a voter is listed twice") }
        return .elected(voters: voters.sorted())
    }

    /// The authority written as words, as `peerlog group sequencer` takes it: `solo DEVICE`,
    /// `elected DEVICE…` (see `elected(among:)`) or `relay ADDRESS KEY`, devices as device
    /// id text. The error says which word is wrong.
    public init(kind: String, arguments: [String]) throws {
        func device(_ text: String) throws -> DeviceID {
            do { return try DeviceID(string: text) } catch {
                throw PeerlogError(.invalidValue, "\(text) is not a device id (`peerlog id` prints one): \(error)")
            }
        }
        switch kind {
        case "solo":
            guard arguments.count == 1 else { throw PeerlogError(.invalidValue, "solo takes one device") }
            self = .solo(try device(arguments[0]))
        case "elected":
            guard (1...GroupLimits.maxVoters).contains(arguments.count) else {
                throw PeerlogError(.invalidValue, "elected takes 1 to \(GroupLimits.maxVoters) voter devices")
            }
            self = try .elected(among: try arguments.map(device))
        case "relay":
            guard arguments.count == 2 else { throw PeerlogError(.invalidValue, "relay takes ADDRESS KEY") }
            self = .relay(key: try device(arguments[1]), address: arguments[0])
        default:
            throw PeerlogError(.invalidValue, "the sequencer is solo, elected or relay, not \(kind)")
        }
    }
}
