import NIOCore
import PeerlogPairing

/// First on every connection the node's port accepts: the first byte tells a pairing guest
/// (`PairingPreamble.firstByte`) from a Noise peer, whose first byte is the high byte of a
/// handshake length and never that (docs/PROTOCOL.md §20.9). A Noise peer's bytes pass on
/// untouched and the sniffer leaves the pipeline; a guest's connection goes to a
/// `PairingHostHandler` placed in front of the `PeerHandler`, which lets go of it.
final class InboundSniffer: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer

    private let peer: PeerHandler
    private let pairing: () -> PairingHostHandler

    init(peer: PeerHandler, pairing: @escaping () -> PairingHostHandler) {
        self.peer = peer
        self.pairing = pairing
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let buffer = unwrapInboundIn(data)
        guard let first = buffer.getInteger(at: buffer.readerIndex, as: UInt8.self) else { return }
        if first == PairingPreamble.firstByte {
            peer.handOver()
            do {
                try context.pipeline.syncOperations.addHandler(pairing(), position: .after(self))
            } catch {
                context.close(promise: nil)
                return
            }
        }
        context.fireChannelRead(data)
        context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
    }
}
