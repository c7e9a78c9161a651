import PeerlogCrypto

/// What a pairing session is for: linking another device of the same identity, or inviting another
/// person into a group (docs/PROTOCOL.md §20).
public enum PairingPurpose: String, Sendable, Hashable {
    /// Link a new device to the host's identity (`peerlog device link` / `peerlog init --join`).
    case link
    /// Invite another person's identity into a group (`peerlog invite create` / `invite join`).
    case invite
}

/// A pairing code, `N-DDDD-DDDD` (docs/PROTOCOL.md §20.1): a public nameplate `N` (1...999, decimal,
/// no leading zero) that says which session a guest wants and is advertised over DNS-SD, then
/// ``secretDigits`` secret random decimal digits in two groups of four. The PAKE password is the
/// code's canonical text, ``description``.
///
/// An online attacker who does not know the code gets one guess per exchange and ``PairingLimits``'s
/// `maxAttempts` (3) exchanges before the code dies, so wins with probability ``guessProbability``
/// = 3 / 10⁸ = 3×10⁻⁸; the PAKE gives an offline attacker nothing to test guesses against.
public struct PairingCode: Sendable, Hashable, CustomStringConvertible {
    /// Number of secret decimal digits (8: 10⁸ equally likely secrets).
    public static let secretDigits = 8
    /// Smallest nameplate.
    public static let minNameplate = 1
    /// Largest nameplate (three decimal digits).
    public static let maxNameplate = 999
    /// The chance that an online attacker who does not know the code pairs before it dies:
    /// `maxAttempts / 10^secretDigits` = 3 / 10⁸ = 3×10⁻⁸ with the default limits.
    public static let guessProbability: Double = Double(PairingLimits().maxAttempts) / 100_000_000

    /// The public session number, 1...999.
    public let nameplate: Int
    // The secret, 0..<10^8, shown as 8 digits with leading zeros.
    private let secret: UInt32

    private init(nameplate: Int, secret: UInt32) {
        self.nameplate = nameplate
        self.secret = secret
    }

    /// A fresh code for `nameplate` (1...999; traps otherwise: the caller picks it) with a secret drawn
    /// uniformly from 0..<10⁸ by the operating system's generator.
    public static func generate(nameplate: Int) -> PairingCode {
        precondition((minNameplate...maxNameplate).contains(nameplate), "nameplate must be 1...999")
        return PairingCode(nameplate: nameplate, secret: SecureRandom.uniform(100_000_000))
    }

    /// Parses `N-DDDD-DDDD`. Spaces around the code are ignored, and a run of spaces may stand for a
    /// dash (`12 3456 7890`). Anything else throws a `PairingError` with code `invalidCode` whose
    /// message shows the expected form.
    public init(parsing text: String) throws {
        let groups = Self.groups(of: text)
        guard let groups, groups.count == 3,
            let first = groups[0].first, first != "0", groups[0].count <= 3,
            groups[1].count == 4, groups[2].count == 4,
            let nameplate = Int(groups[0]), let secret = UInt32(groups[1] + groups[2])
        else {
            throw PairingError(
                .invalidCode,
                "a pairing code looks like 12-3456-7890: a number from 1 to 999, then two groups of four digits")
        }
        self.init(nameplate: nameplate, secret: secret)
    }

    // Splits on dashes or runs of spaces after trimming spaces; nil when a character is neither an ASCII
    // digit nor a separator, or when two dashes (or a dash and spaces) meet.
    private static func groups(of text: String) -> [String]? {
        let trimmed = text.drop { $0 == " " }.reversed().drop { $0 == " " }.reversed()
        var groups: [String] = [""]
        var previousWasSpace = false
        for c in trimmed {
            if c == "-" {
                guard !groups[groups.count - 1].isEmpty else { return nil }
                groups.append("")
                previousWasSpace = false
            } else if c == " " {
                if !previousWasSpace {
                    guard !groups[groups.count - 1].isEmpty else { return nil }
                    groups.append("")
                }
                previousWasSpace = true
            } else if c.isASCII, c.isNumber {
                groups[groups.count - 1].append(c)
                previousWasSpace = false
            } else {
                return nil
            }
        }
        return groups.contains { $0.isEmpty } ? nil : groups
    }

    /// The canonical text, `N-DDDD-DDDD` (e.g. `7-0042-9137`): what people read and type, and the
    /// PAKE password.
    public var description: String {
        let digits = String(secret)
        let padded = String(repeating: "0", count: Self.secretDigits - digits.count) + digits
        return "\(nameplate)-\(padded.prefix(4))-\(padded.suffix(4))"
    }

    /// The PAKE password (PRS): the UTF-8 bytes of ``description``.
    var password: [UInt8] { Array(description.utf8) }
}
