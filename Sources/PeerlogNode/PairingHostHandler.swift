import NIOCore
import PeerlogModel
import PeerlogPairing

/// One guest's connection to a pairing session: frames in and out (`PairingFrames`), the
/// `PairingHostExchange` between them, the grant in the middle, a deadline around it all.
/// Runs on the connection's event loop; the grant (SQLite writes) runs off it.
final class PairingHostHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let host: PairingHost
    private let nameplate: Int
    private var frames: PairingFrames
    private var exchange: PairingHostExchange?
    private var remote = "?"
    private var ended = false
    private var deadline: Scheduled<Void>?
    /// Closing waits for this, so the last message (a grant or a refusal) leaves first.
    private var lastWrite: EventLoopFuture<Void>?

    init(host: PairingHost, nameplate: Int, maxBytes: Int) {
        self.host = host
        self.nameplate = nameplate
        frames = PairingFrames(maxBytes: maxBytes)
    }

    func channelActive(context: ChannelHandlerContext) {
        remote = context.remoteAddress.map { "\($0.ipAddress ?? "?"):\($0.port ?? 0)" } ?? "?"
        switch host.begin(nameplate: nameplate, now: WallClock.nowMillis(), remote: remote) {
        case .success(let started):
            exchange = started
            send(context, started.opening)
            let timeout = PairingLimits().exchangeTimeout.components.seconds
            let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
            deadline = context.eventLoop.scheduleTask(in: .seconds(timeout)) {
                let (handler, context) = loopBound.value
                handler.end(context, .failure(PairingError(.unexpectedMessage, "no answer within \(timeout) s")))
            }
        case .failure(let error):
            ended = true
            send(context, error.wireMessage)
            closeAfterWrites(context)
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var buffer = unwrapInboundIn(data)
        guard !ended, let bytes = buffer.readBytes(length: buffer.readableBytes) else { return }
        let messages: [[UInt8]]
        do { messages = try frames.append(bytes) } catch {
            end(context, .failure(PairingError(.malformed, "\(error)")))
            return
        }
        for message in messages where !ended { handle(message, context) }
    }

    func channelInactive(context: ChannelHandlerContext) {
        if !ended { end(context, .failure(PairingError(.unexpectedMessage, "the guest closed the connection"))) }
    }

    private func handle(_ message: [UInt8], _ context: ChannelHandlerContext) {
        guard var exchange else { return }
        let step = exchange.receive(message)
        self.exchange = exchange
        switch step {
        case .send(let reply):
            send(context, reply)
        case .failed(let error, let reply):
            if let reply { send(context, reply) }
            end(context, .failure(error))
        case .guestPayload(let payload):
            let transcript = exchange.transcriptHash ?? []
            let localHost = context.localAddress?.ipAddress
            let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
            let (host, nameplate) = (host, nameplate)
            // The grant writes to the store: off the event loop.
            Task.detached {
                let outcome = Result {
                    try host.grant(
                        nameplate: nameplate, guestPayload: payload, transcriptHash: transcript, localHost: localHost)
                }
                loopBound.eventLoop.execute {
                    let (handler, context) = loopBound.value
                    handler.granted(outcome, context)
                }
            }
        }
    }

    private func granted(_ outcome: Result<PairingGrants.Granted, any Error>, _ context: ChannelHandlerContext) {
        guard !ended, var exchange else { return }
        switch outcome {
        case .success(let granted):
            do {
                send(context, try exchange.finish(hostPayload: granted.payload))
                self.exchange = exchange
                end(context, .success(granted.summary + " (confirmation \(exchange.confirmation ?? "?"))"))
            } catch {
                end(context, .failure(PairingError(.badPayload, "\(error)")))
            }
        case .failure(let error):
            let reason = (error as? PairingError)?.description ?? "\(error)"
            send(context, exchange.refuse(reason: reason))
            self.exchange = exchange
            end(context, .failure(PairingError(.refused, reason)))
        }
    }

    private func end(_ context: ChannelHandlerContext, _ outcome: Result<String, PairingError>) {
        guard !ended else { return }
        ended = true
        deadline?.cancel()
        host.finished(nameplate: nameplate, remote: remote, outcome: outcome, now: WallClock.nowMillis())
        closeAfterWrites(context)
    }

    private func closeAfterWrites(_ context: ChannelHandlerContext) {
        let channel = context.channel
        guard let lastWrite else { return channel.close(promise: nil) }
        lastWrite.whenComplete { _ in channel.close(promise: nil) }
    }

    private func send(_ context: ChannelHandlerContext, _ message: [UInt8]) {
        lastWrite = context.writeAndFlush(
            wrapOutboundOut(context.channel.allocator.buffer(bytes: PairingFrames.frame(message))))
    }
}
