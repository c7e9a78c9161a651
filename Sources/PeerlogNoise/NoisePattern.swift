/// Handshake patterns (spec §7). Adding one means adding a case and its row in `definition`.
public enum NoisePattern: String, Sendable, CaseIterable {
    case nn, xx, ik, xk

    /// The pattern named `name`, in any case (`XX` or `xx`); nil for patterns not supported here.
    public init?(name: String) { self.init(rawValue: name.lowercased()) }

    /// The upper-case name used in protocol names, e.g. `XX`.
    public var name: String { rawValue.uppercased() }

    enum Token: Sendable { case e, s, ee, es, se, ss }

    struct Definition: Sendable {
        /// Pre-message keys known to the other side beforehand (spec §7.1), as `s` or `e` tokens.
        var initiatorPre: [Token] = []
        var responderPre: [Token] = []
        /// Message patterns; index 0 is sent by the initiator, then directions alternate.
        var messages: [[Token]]
    }

    var definition: Definition {
        switch self {
        case .nn: Definition(messages: [[.e], [.e, .ee]])
        case .xx: Definition(messages: [[.e], [.e, .ee, .s, .es], [.s, .se]])
        case .ik: Definition(responderPre: [.s], messages: [[.e, .es, .s, .ss], [.e, .ee, .se]])
        case .xk: Definition(responderPre: [.s], messages: [[.e, .es], [.e, .ee], [.s, .se]])
        }
    }
}
