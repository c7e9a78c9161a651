// The Peerlog secure channel (docs/PROTOCOL.md §14): Noise XX over a length-framed byte
// stream, with certificate payloads, authorization, fragmentation, implicit rekey and close
// records. A pure state machine: the NIO layer feeds bytes in and performs the returned actions.
import PeerlogModel

/// What the machine asks its driver to do, in order.
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
