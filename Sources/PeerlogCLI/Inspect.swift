import ArgumentParser
import PeerlogCapture
import PeerlogCaptureTools
import PeerlogCrypto
import PeerlogEncoding
import PeerlogModel

struct Inspect: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "inspect",
        abstract: "Decode and verify a receipt, envelope, certificate or revocation file.",
        discussion: "Exit status: 0 when the signature verifies, 2 when it does not, 1 when the file cannot be decoded."
    )

    @Argument(help: "The file to inspect.") var file: String
    @OptionGroup var output: OutputOptions
    @Flag(help: "Print the signed payload in CBOR diagnostic notation.") var diag = false
    @OptionGroup var keys: EpochKeyLogOption

    /// Largest file read: the biggest container Peerlog produces, with room to spare.
    static let maxFileBytes = 1 << 20

    func run() throws {
        let data = try FileIO.read(file, maxBytes: Self.maxFileBytes)
        let outer: CBOR
        do { outer = try CBORDecoder.decodeStrict(data) } catch { throw CLIError("\(file): \(error)") }
        guard let kind = SignedObjectKind(container: outer) else {
            let keys = SignedObjectKind.keys(of: outer).sorted().joined(separator: ", ")
            throw CLIError(
                "\(file): not a receipt, envelope or certificate (nor a revocation; top-level keys: \(keys))")
        }
        let keyLog = try keys.load()
        let report: InspectReport
        do {
            report =
                switch kind {
                case .receipt: InspectReport(receipt: try Receipt(encoded: data), keys: keyLog)
                case .envelope: InspectReport(envelope: try Envelope(encoded: data))
                case .certificate: InspectReport(certificate: try DeviceCertificate(encoded: data))
                case .revocation: InspectReport(revocation: try DeviceRevocation(encoded: data))
                }
        } catch { throw CLIError("\(file): \(error)") }

        if output.json {
            print(report.json.serialized(pretty: true))
        } else {
            report.printText(diag: diag)
        }
        if case .invalid = report.verification { throw ExitCode(2) }
    }
}

struct InspectReport {
    let kind: String
    let cid: CID
    let verification: VerificationResult
    let fields: [(String, JSON)]
    let payload: CBOR

    /// A receipt; a sealed body (§22.3) is shown opened (`plaintext`) when `keys` hold its key.
    init(receipt r: Receipt, keys: EpochKeyLog) {
        var opening: [(String, JSON)] = []
        switch keys.open(r) {
        case .plain: break
        case .sealed(let id): opening = [("sealed", .string("under epoch key \(id), not given (--keylog)"))]
        case .opened(let body): opening = [("plaintext", body.json)]
        case .broken(let why): opening = [("sealed", .string("does not open: \(why)"))]
        }
        self.init(
            kind: "receipt", cid: r.cid, verification: r.verify(), payload: r.payloadValue,
            fields: [
                ("group", .string(r.group.string)),
                ("type", .string(r.type)),
                ("author", .string(r.author.string)),
                ("identity", .string(r.identity.string)),
                ("device_name", .string(r.certificate.name)),
                ("counter", .int(r.counter)),
                ("hlc", .int(r.hlc.packed)),
                ("hlc_time", .string(formatMillis(r.hlc.physical))),
                ("parents", .array(r.parents.map { .string($0.string) })),
                ("body", r.body.json),
            ] + opening)
    }

    init(envelope e: Envelope) {
        var fields: [(String, JSON)] = [
            ("group", .string(e.group.string)),
            ("seq", .int(e.seq)),
            ("receipt", .string(e.receipt.string)),
            ("term", .int(e.term)),
            ("sequencer", .string(e.sequencer.string)),
            ("received_at", .int(e.receivedAt)),
            ("received_time", .string(formatMillis(e.receivedAt))),
        ]
        // A batched run item (PROTOCOL.md §3.5): the run its one signature covers.
        if let run = e.run {
            fields += [
                ("run_first_seq", .int(run.firstSeq)), ("run_count", .int(run.count)),
                ("run_root", .string(hexString(run.root))),
                ("path_hashes", .int(UInt64(e.path.count))),
            ]
        }
        self.init(
            kind: "envelope", cid: CID(hashing: e.payload), verification: e.verify(), payload: e.payloadValue,
            fields: fields)
    }

    init(certificate c: DeviceCertificate) {
        self.init(
            kind: "certificate", cid: c.cid, verification: c.verify(), payload: c.payloadValue,
            fields: [
                ("identity", .string(c.identity.string)),
                ("device", .string(c.device.string)),
                ("name", .string(c.name)),
                ("noise_key", .string(hexString(c.noiseKey.rawRepresentation))),
                ("created", .int(c.createdAt)),
                ("created_time", .string(formatMillis(c.createdAt))),
            ])
    }

    init(revocation r: DeviceRevocation) {
        self.init(
            kind: "revocation", cid: r.cid, verification: r.verify(), payload: r.payloadValue,
            fields: [
                ("identity", .string(r.identity.string)),
                ("device", .string(r.device.string)),
                ("created", .int(r.createdAt)),
                ("created_time", .string(formatMillis(r.createdAt))),
            ])
    }

    init(kind: String, cid: CID, verification: VerificationResult, payload: CBOR, fields: [(String, JSON)]) {
        self.kind = kind
        self.cid = cid
        self.verification = verification
        self.payload = payload
        self.fields = fields
    }

    var signatureText: String {
        switch verification {
        case .valid: "valid"
        case .invalid(let why): "INVALID (\(why))"
        }
    }

    var json: JSON {
        var status: [(String, JSON)] = [("valid", .bool(verification.isValid))]
        if case .invalid(let why) = verification { status.append(("reason", .string(why))) }
        return .object(
            [("kind", .string(kind)), ("cid", .string(cid.string)), ("signature", .object(status))] + fields)
    }

    func printText(diag: Bool) {
        let rows =
            [("kind", kind), ("cid", cid.string), ("signature", signatureText)]
            + fields.map { name, value in
                if case .string(let s) = value { return (name, s) }
                return (name, value.serialized())
            }
        let width = rows.map(\.0.count).max()! + 2
        for (name, value) in rows {
            print(name + ":" + String(repeating: " ", count: width - name.count - 1) + value)
        }
        if diag {
            print("payload (CBOR diagnostic notation):")
            print(payload.diagnostic(pretty: true))
        }
    }
}
