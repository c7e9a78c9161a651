/// Which side of the Noise XX handshake this end plays: the dialer initiates.
public enum ChannelRole: Sendable { case initiator, responder }
