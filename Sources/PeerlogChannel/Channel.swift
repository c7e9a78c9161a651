// The secure channel: framing, handshake payloads, authorization, fragmentation, rekey, close.
