import PeerlogEngine
import PeerlogModel
import PeerlogPairing

/// What a pairing session is for, with its settings: the `pair open` control request
/// (`peerlog device link`, `peerlog invite create`).
public struct PairingOpenRequest: Sendable, Hashable {
    /// Longest lifetime a session may be given (one day); the default is
    /// `PairingLimits().defaultLifetime` (10 minutes).
    public static let maxLifetimeSeconds = 86_400

    /// Link a new device to this identity, or invite another person to a group.
    public enum Kind: Sendable, Hashable {
        /// Certify a new device of this identity; `sharesIdentityKey`: also hand it the identity
        /// key, so it can link and revoke devices too.
        case link(sharesIdentityKey: Bool)
        /// Add whoever joins to `group` as `role`.
        case invite(group: GroupID, role: Role)
    }

    /// What the session does.
    public var kind: Kind
    /// Seconds the code stays valid, 1...`maxLifetimeSeconds`.
    public var lifetimeSeconds: Int

    /// A request; `lifetimeSeconds` must be 1...`maxLifetimeSeconds` (checked by the node).
    public init(kind: Kind, lifetimeSeconds: Int) {
        self.kind = kind
        self.lifetimeSeconds = lifetimeSeconds
    }

    /// The purpose the PAKE is bound to.
    public var purpose: PairingPurpose {
        if case .link = kind { return .link }
        return .invite
    }

    var words: [String] {
        switch kind {
        case .link(let shares): ["link", "expires=\(lifetimeSeconds)", "identity-key=\(shares ? 1 : 0)"]
        case .invite(let group, let role):
            ["invite", "expires=\(lifetimeSeconds)", "role=\(role.rawValue)", group.string]
        }
    }

    static func parse(_ words: [String]) -> Result<PairingOpenRequest, ControlRequest.Invalid> {
        let usage =
            "usage: pair open link expires=SECONDS identity-key=0|1, or pair open invite expires=SECONDS role=ROLE GROUP"
        guard words.count >= 3, words[1].hasPrefix("expires="), let seconds = Int(words[1].dropFirst(8)),
            (1...maxLifetimeSeconds).contains(seconds)
        else { return .failure(.init(description: usage + " (expires 1...\(maxLifetimeSeconds))")) }
        switch words[0] {
        case "link" where words.count == 3 && ["identity-key=0", "identity-key=1"].contains(words[2]):
            return .success(
                .init(kind: .link(sharesIdentityKey: words[2] == "identity-key=1"), lifetimeSeconds: seconds))
        case "invite" where words.count == 4 && words[2].hasPrefix("role="):
            guard let role = Role(rawValue: String(words[2].dropFirst(5))) else {
                return .failure(
                    .init(
                        description: "unknown role \(words[2].dropFirst(5)) (known: \(Role.allCases.map(\.rawValue)))"))
            }
            guard let group = try? GroupID(string: words[3]) else {
                return .failure(.init(description: "not a group id: \(words[3])"))
            }
            return .success(.init(kind: .invite(group: group, role: role), lifetimeSeconds: seconds))
        default:
            return .failure(.init(description: usage))
        }
    }
}

/// A finished `peerlog invite join`, handed to the joiner's running node: admit the inviter,
/// dial it, and accept the invitation when it arrives.
public struct PairingAdoption: Sendable, Hashable {
    /// The inviter's identity, admitted from now on.
    public var identity: IdentityID
    /// Where the inviter's node listens.
    public var address: PeerAddress
    /// The group to accept once its invitation arrives (nil: none).
    public var accept: GroupID?

    /// An adoption of `identity` at `address`, accepting `accept` when it arrives.
    public init(identity: IdentityID, address: PeerAddress, accept: GroupID?) {
        self.identity = identity
        self.address = address
        self.accept = accept
    }

    var words: [String] { [identity.string, address.description] + (accept.map { [$0.string] } ?? []) }

    static func parse(_ words: [String]) -> Result<PairingAdoption, ControlRequest.Invalid> {
        let usage = "usage: pair adopt IDENTITY HOST:PORT [GROUP]"
        guard (2...3).contains(words.count), let identity = try? IdentityID(string: words[0]),
            let address = try? PeerAddress(parsing: words[1])
        else { return .failure(.init(description: usage)) }
        var group: GroupID?
        if words.count == 3 {
            guard let parsed = try? GroupID(string: words[2]) else { return .failure(.init(description: usage)) }
            group = parsed
        }
        return .success(.init(identity: identity, address: address, accept: group))
    }
}

/// An open pairing session as its host reports it: the code to pass on, and where the session
/// listens (the `pair open` reply, `peerlog device link --json`).
public struct PairingTicket: Codable, Sendable, Hashable {
    /// The short code (`N-DDDD-DDDD`), to read aloud or type on the other device.
    public var code: String
    /// The code's public part: which session a guest asks for.
    public var nameplate: Int
    /// `link` or `invite`.
    public var purpose: String
    /// When the code dies (milliseconds since 1970).
    public var expiresAt: UInt64
    /// HOST:PORT of the session's listener, for `--peer` where DNS-SD cannot reach.
    public var address: String
    /// For an invitation: the group's id.
    public var group: String?
    /// For an invitation: the role the joiner gets.
    public var role: String?
}
