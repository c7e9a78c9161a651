import Dispatch
import NIOCore
import PeerlogModel
import PeerlogPairing

/// One guest's connection to the node's pairing sessions: the preamble naming the session
/// (`PairingPreamble`), then frames in and out (`PairingFrames`), the `PairingHostExchange`
/// between them, the grant in the middle, and `exchangeTimeout` for each message of the
/// guest's (not for the host's own grant). The guest's share spends
/// an attempt (`PairingHost.spend`); a connection that sends none costs nothing. Runs on the
/// connection's event loop; the grant (SQLite writes) runs on a dispatch queue, off the loop and
/// off Swift's cooperative pool (which a busy process can keep from it for minutes). Works on a channel that is
/// already active (handed over by `InboundSniffer` on the node's port) or becomes active.
final class PairingHostHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let host: PairingHost
    private var preamble: [UInt8] = []
    private var nameplate: Int?
    private var frames: PairingFrames
    private var exchange: PairingHostExchange?
    /// The guest's share spent an attempt and holds the session until this exchange ends.
    private var spent = false
    /// Messages held while a share waits out the per-source spacing.
    private var held: [[UInt8]] = []
    private var remote = "?"
    private var source = "?"
    private var started = false
    private var admitted = false
    private var ended = false
    private var deadline: Scheduled<Void>?
    /// Closing waits for this, so the last message (a grant or a refusal) leaves first.
    private var lastWrite: EventLoopFuture<Void>?

    init(host: PairingHost, maxBytes: Int) {
        self.host = host
        frames = PairingFrames(maxBytes: maxBytes)
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { start(context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        start(context)
    }

    private func start(_ context: ChannelHandlerContext) {
        guard !started else { return }
        started = true
        source = context.remoteAddress?.ipAddress ?? "?"
        remote = context.remoteAddress.map { "\($0.ipAddress ?? "?"):\($0.port ?? 0)" } ?? "?"
        guard host.guestConnected() else {
            ended = true
            return context.close(promise: nil)
        }
        admitted = true
        armDeadline(context)
    }

    /// The guest has `exchangeTimeout` for its next message; on expiry it is told why.
    private func armDeadline(_ context: ChannelHandlerContext) {
        deadline?.cancel()
        let timeout = PairingLimits().exchangeTimeout.components.seconds
        let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        deadline = context.eventLoop.scheduleTask(in: .seconds(timeout)) {
            let (handler, context) = loopBound.value
            let error = PairingError(.unexpectedMessage, "no message from the guest within \(timeout) s")
            handler.end(context, .failure(error), reply: error.wireMessage)
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var buffer = unwrapInboundIn(data)
        guard !ended, var bytes = buffer.readBytes(length: buffer.readableBytes) else { return }
        if deadline != nil { armDeadline(context) }
        if nameplate == nil {
            let needed = PairingPreamble.length - preamble.count
            preamble += bytes.prefix(needed)
            bytes.removeFirst(min(needed, bytes.count))
            guard preamble.count == PairingPreamble.length else { return }
            do { try open(context, nameplate: try PairingPreamble.nameplate(preamble)) } catch {
                return end(context, .failure(error), reply: error.wireMessage)
            }
            if ended { return }
        }
        let messages: [[UInt8]]
        do { messages = try frames.append(bytes) } catch {
            end(context, .failure(PairingError(.malformed, "\(error)")))
            return
        }
        for message in messages where !ended { take(message, context) }
    }

    func channelInactive(context: ChannelHandlerContext) {
        if !ended { end(context, .failure(PairingError(.unexpectedMessage, "the guest closed the connection"))) }
        if admitted {
            admitted = false
            host.guestDisconnected()
        }
    }

    private func open(_ context: ChannelHandlerContext, nameplate: Int) throws(PairingError) {
        self.nameplate = nameplate
        switch host.begin(nameplate: nameplate, now: WallClock.nowMillis(), remote: remote) {
        case .success(let started):
            exchange = started
            send(context, started.opening)
        case .failure(let error):
            ended = true
            send(context, error.wireMessage)
            closeAfterWrites(context)
        }
    }

    /// A guest message, in order: a share waits behind the per-source spacing, later messages
    /// wait behind the share.
    private func take(_ message: [UInt8], _ context: ChannelHandlerContext) {
        guard held.isEmpty else { return held.append(message) }
        guard let nameplate, let exchange, exchange.awaitsGuestShare, !spent else { return handle(message, context) }
        switch host.spend(nameplate: nameplate, source: source, now: WallClock.nowMillis()) {
        case .go:
            spent = true
            handle(message, context)
        case .refused(let error):
            end(context, .failure(error), reply: error.wireMessage, counts: false)
        case .wait(let millis):
            held.append(message)
            let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
            context.eventLoop.scheduleTask(in: .milliseconds(Int64(millis))) {
                let (handler, context) = loopBound.value
                let waiting = handler.held
                handler.held = []
                for message in waiting where !handler.ended { handler.take(message, context) }
            }
        }
    }

    private func handle(_ message: [UInt8], _ context: ChannelHandlerContext) {
        guard var exchange, let nameplate else { return }
        let step = exchange.receive(message)
        self.exchange = exchange
        switch step {
        case .send(let reply):
            send(context, reply)
        case .failed(let error, let reply):
            end(context, .failure(error), reply: reply)
        case .guestPayload(let payload):
            let transcript = exchange.transcriptHash ?? []
            let localHost = context.localAddress?.ipAddress
            let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
            let host = host
            // The host's own work: the guest's timeout does not run meanwhile.
            deadline?.cancel()
            deadline = nil
            // The grant writes to the store: off the event loop, on a dispatch queue.
            DispatchQueue.global().async {
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

    /// Ends the exchange: `reply` (a `pair_error`) leaves first, the host hears the outcome
    /// (`counts`: whether it is one for `status`), then the connection closes.
    private func end(
        _ context: ChannelHandlerContext, _ outcome: Result<String, PairingError>, reply: [UInt8]? = nil,
        counts: Bool = true
    ) {
        guard !ended else { return }
        ended = true
        deadline?.cancel()
        if let reply { send(context, reply) }
        if let nameplate {
            host.finished(
                nameplate: nameplate, remote: remote, source: source, spent: spent, outcome: outcome,
                record: counts, now: WallClock.nowMillis())
        }
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
