import Peerlog

/// Command-line options, parsed by hand to keep the example to one import.
struct NotesOptions {
    static let usage = """
        usage: peerlog-notes [--home DIR] [--name DEVICE] [--listen HOST:PORT | --no-listen]
                             [--peer HOST:PORT]... [--allow IDENTITY]... [--no-discovery]
          --home       where this device's keys and notes live (default: the peerlog home)
          --listen     where to accept peers (default 0.0.0.0:7300: the LAN)
          --peer       a peer to dial besides those found on the LAN
          --allow      an identity you expect an invitation from
          --no-discovery  do not advertise or browse the LAN (mDNS)
        """

    var home = Peerlog.defaultHome
    var name: String?
    var network = NetworkOptions()

    struct UsageError: Error, CustomStringConvertible { let description: String }

    init<S: Collection<String>>(_ arguments: S) throws {
        network.listen = PeerAddress(host: "0.0.0.0", port: 7300)
        var rest = Array(arguments)[...]
        func value(_ flag: String) throws -> String {
            guard let v = rest.popFirst() else { throw UsageError(description: "\(flag) needs a value") }
            return v
        }
        while let flag = rest.popFirst() {
            switch flag {
            case "--home": home = try value(flag)
            case "--name": name = try value(flag)
            case "--listen": network.listen = try PeerAddress(parsing: try value(flag), listening: true)
            case "--no-listen": network.listen = nil
            case "--peer": network.peers.append(try PeerAddress(parsing: try value(flag)))
            case "--allow": network.allow.insert(try IdentityID(string: try value(flag)))
            case "--no-discovery": network.discovery = false
            case "--help", "-h": throw UsageError(description: "options")
            default: throw UsageError(description: "unknown option \(flag)")
            }
        }
    }
}
