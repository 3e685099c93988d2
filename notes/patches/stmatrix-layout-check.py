#!/usr/bin/env python3
"""Checks stmatrix-staging.patch's addressing on the CPU: for every box and every width of 1-32
n8 fragments, the stmatrix.x4 form writes the same packed accumulator pair to the same byte of
the 128-byte-swizzled staging box as the st.shared form in tc/width.rs. stmatrix semantics
(PTX ISA): lanes 8i..8i+8 give matrix i's row addresses; register i of lane 4r+k holds row r,
columns 2k and 2k+1 of matrix i."""


def old(bx, n8):
    m = {}
    for w in range(4):
        for lane in range(32):
            rr, q = 16 * w + lane // 4, lane % 4
            for c in range(8):
                j = 8 * bx + c
                if j < n8:
                    for h, r in enumerate([rr, rr + 8]):
                        m[r * 128 + ((c ^ (r % 8)) * 16) + 4 * q] = (w, lane, j, h)
    return m


def new(bx, n8):
    m = {}
    for w in range(4):
        for p in range(4):
            j = 8 * bx + 2 * p
            if j + 1 < n8:
                regs = lambda lane: [(w, lane, j, 0), (w, lane, j, 1), (w, lane, j + 1, 0), (w, lane, j + 1, 1)]
                for i in range(4):
                    for r in range(8):
                        lane = 8 * i + r
                        mm = lane // 8
                        row = 16 * w + 8 * (mm % 2) + lane % 8
                        c = 2 * p + mm // 2
                        base = row * 128 + ((c ^ (row % 8)) * 16)
                        for k in range(4):
                            m[base + 4 * k] = regs(4 * r + k)[i]
            elif j < n8:
                for lane in range(32):
                    rr, q = 16 * w + lane // 4, lane % 4
                    for h, r in enumerate([rr, rr + 8]):
                        m[r * 128 + (((2 * p) ^ (r % 8)) * 16) + 4 * q] = (w, lane, j, h)
    return m


for n8 in [1, 2, 4, 8, 16, 32]:
    for bx in range(4):
        assert old(bx, n8) == new(bx, n8), (n8, bx)
print("stmatrix addressing == st.shared layout for every box and width")
