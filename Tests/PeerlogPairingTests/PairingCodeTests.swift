import PeerlogCrypto
import PeerlogPairing
import Testing

struct PairingCodeTests {
    @Test func generatedCodesHaveTheFormAndRoundTrip() throws {
        for nameplate in [1, 42, 999] {
            let code = PairingCode.generate(nameplate: nameplate)
            let text = code.description
            #expect(text.hasPrefix("\(nameplate)-"))
            #expect(text.count == String(nameplate).count + 10)
            #expect(try PairingCode(parsing: text) == code)
            #expect(code.nameplate == nameplate)
        }
        // 20 codes of 10^8 possible secrets: all distinct (a repeat would mean a broken generator).
        let codes = Set((0..<20).map { _ in PairingCode.generate(nameplate: 5).description })
        #expect(codes.count == 20)
    }

    @Test func parsingTolerance() throws {
        let code = try PairingCode(parsing: "12-0034-5678")
        #expect(code.description == "12-0034-5678")
        #expect(try PairingCode(parsing: "  12-0034-5678 ") == code)
        #expect(try PairingCode(parsing: "12 0034 5678") == code)
        #expect(try PairingCode(parsing: "12  0034-5678") == code)
        #expect(try PairingCode(parsing: "1-0000-0000").nameplate == 1)
        #expect(try PairingCode(parsing: "999-9999-9999").nameplate == 999)
    }

    @Test(
        "invalid codes",
        arguments: [
            "0-1234-5678", "1000-1234-5678", "01-1234-5678", "1-1234-567", "1-1234-56789", "1-123-45678",
            "1-12345678", "1-1234-5678-9", "", "   ", "1--1234-5678", "-1-1234-5678", "1-1234-5678-", "a-1234-5678",
            "1-12a4-5678", "1 - 1234 - 5678", "1_1234_5678", "1-1234-５６７８", "1-1234-5678\n",
        ])
    func invalid(text: String) {
        #expect(throws: PairingError(.invalidCode)) { try PairingCode(parsing: text) }
    }

    @Test func invalidCodeMessageShowsTheForm() {
        do {
            _ = try PairingCode(parsing: "nope")
            Issue.record("parsed")
        } catch {
            #expect("\(error)".contains("12-3456-7890"))
        }
    }

    @Test func guessProbabilityIsAttemptsOverSecretSpace() {
        #expect(PairingCode.secretDigits == 8)
        #expect(PairingLimits().maxAttempts == 3)
        #expect(PairingCode.guessProbability == 3e-8)
    }
}
