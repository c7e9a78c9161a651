// The Noise Protocol Framework (noiseprotocol.org/noise.html, revision 34): pure state machines.
