// The Peerlog secure channel (docs/protocol-transport.md): Noise XX over a length-framed byte
// stream, with certificate payloads, authorization, fragmentation, implicit rekey and close
// records. A pure state machine: the NIO layer feeds bytes in and performs the returned actions.
import PeerlogModel

public struct ChannelConfiguration: Sendable {
    /// Bound into the Noise prologue: peers with different network ids cannot complete a handshake.
    public var networkID: String = ""
    /// Largest application message sent or reassembled.
    public var maxMessageBytes: Int = 4_194_304
    /// Each direction rekeys its cipher after every this many transport frames (0: never).
    public var rekeyInterval: UInt64 = 4096
    /// How long the NIO layer waits for the handshake before calling `handshakeTimedOut()`.
    public var handshakeTimeout: Duration = .seconds(10)

    public init(networkID: String = "", maxMessageBytes: Int = 4_194_304, rekeyInterval: UInt64 = 4096, handshakeTimeout: Duration = .seconds(10)) {
        self.networkID = networkID
        self.maxMessageBytes = maxMessageBytes
        self.rekeyInterval = rekeyInterval
        self.handshakeTimeout = handshakeTimeout
    }
}

public enum ChannelRole: Sendable { case initiator, responder }

public enum AuthorizationDecision: Sendable, Equatable {
    case allow
    case deny(String)
}

public enum ChannelAction: Sendable, Equatable {
    /// Bytes to put on the wire (one or more complete frames).
    case write([UInt8])
    /// Handshake done and peer authorized; application messages may flow.
    case established(DeviceCertificate)
    /// One complete decrypted application message.
    case deliver([UInt8])
    /// The connection is over; the NIO layer closes the socket after flushing writes that precede it.
    case closed(ChannelCloseReason)
}

public enum ChannelCloseReason: Sendable, Equatable, CustomStringConvertible {
    /// We closed (and sent a close record if established).
    case local(String)
    /// The peer's close record.
    case remote(String)
    case protocolError(String)
    case unauthorized(String)
    /// The stream ended without a close record.
    case truncated
    case handshakeTimeout
    /// We closed because the peer reached a resource limit; the text names the limit.
    case resourceLimit(String)

    public var description: String {
        switch self {
        case .local(let r): r.isEmpty ? "closed" : "closed: \(r)"
        case .remote(let r): r.isEmpty ? "closed by peer" : "closed by peer: \(r)"
        case .protocolError(let r): "protocol error: \(r)"
        case .unauthorized(let r): "not authorized: \(r)"
        case .truncated: "connection ended without a close record"
        case .handshakeTimeout: "handshake timed out"
        case .resourceLimit(let r): "resource limit: \(r)"
        }
    }
}

/// Errors thrown to the local caller of `send`; the connection itself is unaffected. The one
/// error type of `PeerlogChannel`, in the shape of `SequencerError`: a ``code`` over a private
/// enum (so codes can be added), where it was raised, and equality on the code only.
public struct ChannelError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What went wrong; compare against the static members.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: Hashable, Sendable { case notEstablished, closed, emptyMessage, messageTooLarge }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// The handshake has not completed yet.
        public static let notEstablished = Code(.notEstablished)
        /// The channel was closed.
        public static let closed = Code(.closed)
        /// Application messages must hold at least one byte.
        public static let emptyMessage = Code(.emptyMessage)
        /// The message is over the configured `maxMessageBytes`.
        public static let messageTooLarge = Code(.messageTooLarge)

        /// The code's name, e.g. `messageTooLarge`.
        public var description: String { "\(base)" }
    }

    /// The kind of failure.
    public let code: Code
    /// The sentence for people (sizes, never contents).
    public let description: String
    /// Where the error was raised.
    public let file: String
    /// Where the error was raised.
    public let line: Int

    init(_ code: Code, _ description: String, file: String, line: Int) {
        self.code = code
        self.description = description
        self.file = file
        self.line = line
    }

    /// Errors are equal when their codes are.
    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.code == rhs.code }
    /// Hashes the code only, consistent with `==`.
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }

    package static func notEstablished(file: String = #fileID, line: Int = #line) -> Self { Self(.notEstablished, "channel is not established", file: file, line: line) }
    package static func closed(file: String = #fileID, line: Int = #line) -> Self { Self(.closed, "channel is closed", file: file, line: line) }
    package static func emptyMessage(file: String = #fileID, line: Int = #line) -> Self { Self(.emptyMessage, "empty application messages are invalid", file: file, line: line) }
    package static func messageTooLarge(size: Int, limit: Int, file: String = #fileID, line: Int = #line) -> Self {
        Self(.messageTooLarge, "message of \(size) bytes exceeds \(limit) bytes", file: file, line: line)
    }
}

/// Counters for logs and tests. Frames and bytes include the handshake and framing.
public struct ChannelStatistics: Sendable, Equatable {
    public var framesIn: UInt64 = 0
    public var framesOut: UInt64 = 0
    public var bytesIn: UInt64 = 0
    public var bytesOut: UInt64 = 0
    public var messagesIn: UInt64 = 0
    public var messagesOut: UInt64 = 0
    public var rekeysIn: UInt64 = 0
    public var rekeysOut: UInt64 = 0
    public init() {}
}

/// One application message, or a connection opening or closing, seen by a capture tap
/// (called by the NIO layer).
public struct TapRecord: Sendable {
    public enum Direction: String, Sendable { case inbound, outbound }
    public enum Kind: Sendable {
        /// `message` is an application message sent or received.
        case message
        /// Established; `message` is the peer's certificate container, `direction` is
        /// outbound when we dialed.
        case opened
        /// Closed; `message` is the UTF-8 reason.
        case closed
    }
    /// Milliseconds since the Unix epoch.
    public let time: UInt64
    public let kind: Kind
    public let direction: Direction
    public let connection: UInt64
    public let local: DeviceID
    public let peer: DeviceID
    public let message: [UInt8]

    public init(time: UInt64, kind: Kind = .message, direction: Direction, connection: UInt64, local: DeviceID, peer: DeviceID, message: [UInt8]) {
        self.time = time
        self.kind = kind
        self.direction = direction
        self.connection = connection
        self.local = local
        self.peer = peer
        self.message = message
    }
}

public typealias Tap = @Sendable (TapRecord) -> Void

/// What a key log records for one connection (docs/PROTOCOL.md §17.5): the initiator's
/// ephemeral key (clear text in handshake message 1) names it; the two transport keys at
/// nonce 0 decrypt it. Whoever holds these can read the whole connection.
public struct TransportKeys: Sendable, Equatable {
    public let initiatorEphemeral: [UInt8]
    public let initiatorToResponder: [UInt8]
    public let responderToInitiator: [UInt8]

    public init(initiatorEphemeral: [UInt8], initiatorToResponder: [UInt8], responderToInitiator: [UInt8]) {
        self.initiatorEphemeral = initiatorEphemeral
        self.initiatorToResponder = initiatorToResponder
        self.responderToInitiator = responderToInitiator
    }
}
