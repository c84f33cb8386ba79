#!/usr/bin/env python3
# voicegap: the gap from the end of the first voice in a recording (the person, in
# `chorus demo -voice`'s DIR/room.wav) to the next voice (the first robot): 10 ms frames,
# RMS above 300 is a voice, pauses under 350 ms stay inside one. Usage: voicegap.py ROOM.wav
import sys, wave, struct
w = wave.open(sys.argv[1]); n = w.getnframes(); rate = w.getframerate(); ch = w.getnchannels()
data = w.readframes(n); samples = struct.unpack('<%dh' % (len(data)//2), data)[::ch]
fr = rate//100
loud = []
for i in range(0, len(samples)-fr, fr):
    seg = samples[i:i+fr]; e = (sum(s*s for s in seg)/fr) ** 0.5
    loud.append(e > 300)
segs = []; start = None; last = None
for i, l in enumerate(loud):
    if l:
        if start is None: start = i
        elif i - last > 35:  # a gap over 350 ms ends a segment
            segs.append((start, last)); start = i
        last = i
if start is not None: segs.append((start, last))
print("first gap after the person: %d ms" % ((segs[1][0] - segs[0][1]) * 10), [(a*10, b*10) for a, b in segs[:3]])
