//go:build !purego

#include "textflag.h"

// The multipliers of init_by_array's two mixing loops, and the step of the
// second loop's position counter.
DATA mulFirst<>+0(SB)/4, $1664525
GLOBL mulFirst<>(SB), RODATA|NOPTR, $4
DATA mulSecond<>+0(SB)/4, $1566083941
GLOBL mulSecond<>(SB), RODATA|NOPTR, $4
DATA one<>+0(SB)/4, $1
GLOBL one<>(SB), RODATA|NOPTR, $4
DATA two<>+0(SB)/4, $2
GLOBL two<>(SB), RODATA|NOPTR, $4

// MIX4 sets Y10-Y13 to (p ^ p>>30) * Y8 for the four chains' previous
// words p in Y0-Y3: the part of a step both loops share.
#define MIX4 \
	VPSRLD $30, Y0, Y10; \
	VPSRLD $30, Y1, Y11; \
	VPSRLD $30, Y2, Y12; \
	VPSRLD $30, Y3, Y13; \
	VPXOR Y0, Y10, Y10; \
	VPXOR Y1, Y11, Y11; \
	VPXOR Y2, Y12, Y12; \
	VPXOR Y3, Y13, Y13; \
	VPMULLD Y8, Y10, Y10; \
	VPMULLD Y8, Y11, Y11; \
	VPMULLD Y8, Y12, Y12; \
	VPMULLD Y8, Y13, Y13

// func mixWide(h *[wideLanes]uint32, s *[mtN][wideLanes]uint32, base *[mtN]uint32)
//
// init_by_array's two mixing loops for 32 one-word keys, as firstFloats
// runs them for four: four chains of eight lanes (Y0-Y3), each step
// VPSRLD, VPXOR, VPMULLD, VPXOR, then VPADDD of the keys (Y4-Y7) in the
// first loop or VPSUBD of the position (Y9) in the second. Row i of s is
// word i of every lane; the second loop writes its words back in place.
TEXT ·mixWide(SB), NOSPLIT, $0-24
	MOVQ h+0(FP), AX
	MOVQ s+8(FP), DI
	MOVQ base+16(FP), SI
	VMOVDQU 0(AX), Y4
	VMOVDQU 32(AX), Y5
	VMOVDQU 64(AX), Y6
	VMOVDQU 96(AX), Y7
	VPBROADCASTD mulFirst<>(SB), Y8

	// First loop, positions 1…623, from word 0 of init_genrand.
	VPBROADCASTD 0(SI), Y0
	VMOVDQA Y0, Y1
	VMOVDQA Y0, Y2
	VMOVDQA Y0, Y3
	MOVQ $1, CX
	LEAQ 128(DI), DX

first:
	VPBROADCASTD (SI)(CX*4), Y9
	MIX4
	VPXOR Y9, Y10, Y10
	VPXOR Y9, Y11, Y11
	VPXOR Y9, Y12, Y12
	VPXOR Y9, Y13, Y13
	VPADDD Y4, Y10, Y0
	VPADDD Y5, Y11, Y1
	VPADDD Y6, Y12, Y2
	VPADDD Y7, Y13, Y3
	VMOVDQU Y0, 0(DX)
	VMOVDQU Y1, 32(DX)
	VMOVDQU Y2, 64(DX)
	VMOVDQU Y3, 96(DX)
	ADDQ $128, DX
	INCQ CX
	CMPQ CX, $624
	JL first

	// After the wrap the first loop mixes position 1 a second time.
	MIX4
	VPXOR 128(DI), Y10, Y10
	VPXOR 160(DI), Y11, Y11
	VPXOR 192(DI), Y12, Y12
	VPXOR 224(DI), Y13, Y13
	VPADDD Y4, Y10, Y0
	VPADDD Y5, Y11, Y1
	VPADDD Y6, Y12, Y2
	VPADDD Y7, Y13, Y3
	VMOVDQU Y0, 128(DI)
	VMOVDQU Y1, 160(DI)
	VMOVDQU Y2, 192(DI)
	VMOVDQU Y3, 224(DI)

	// Second loop, positions 2…623; Y9 holds the position in every lane.
	VPBROADCASTD mulSecond<>(SB), Y8
	VPBROADCASTD two<>(SB), Y9
	VPBROADCASTD one<>(SB), Y14
	MOVQ $2, CX
	LEAQ 256(DI), DX

second:
	MIX4
	VPXOR 0(DX), Y10, Y10
	VPXOR 32(DX), Y11, Y11
	VPXOR 64(DX), Y12, Y12
	VPXOR 96(DX), Y13, Y13
	VPSUBD Y9, Y10, Y0
	VPSUBD Y9, Y11, Y1
	VPSUBD Y9, Y12, Y2
	VPSUBD Y9, Y13, Y3
	VMOVDQU Y0, 0(DX)
	VMOVDQU Y1, 32(DX)
	VMOVDQU Y2, 64(DX)
	VMOVDQU Y3, 96(DX)
	VPADDD Y14, Y9, Y9
	ADDQ $128, DX
	INCQ CX
	CMPQ CX, $624
	JL second

	VZEROUPPER
	RET

// func cpuid(leaf, sub uint32) (eax, ebx, ecx, edx uint32)
TEXT ·cpuid(SB), NOSPLIT, $0-24
	MOVL leaf+0(FP), AX
	MOVL sub+4(FP), CX
	CPUID
	MOVL AX, eax+8(FP)
	MOVL BX, ebx+12(FP)
	MOVL CX, ecx+16(FP)
	MOVL DX, edx+20(FP)
	RET

// func xcr0() uint32
TEXT ·xcr0(SB), NOSPLIT, $0-4
	MOVL $0, CX
	XGETBV
	MOVL AX, ret+0(FP)
	RET

// MD5 of eight single-block messages, one per 32-bit lane (RFC 1321 §3.4).
// Every step is a = b + ((a + f(b,c,d) + X[k] + T[i]) <<< s); the message
// word and T are added first, as they do not wait on the previous step.
// Y0-Y3 hold a, b, c, d of every lane; Y4 and Y5 are scratch; Y15 is all
// ones. SI points at the message words ([16][8]uint32, word k of every
// lane at 32*k), DX at the table T with each word repeated in every lane.

// ROT sets a to b + (a <<< s).
#define ROT(a, b, s) \
	VPSLLD $s, a, Y5; \
	VPSRLD $(32-s), a, a; \
	VPOR Y5, a, a; \
	VPADDD b, a, a

// F(x,y,z) = xy v not(x) z, computed as z ^ (x & (y ^ z)).
#define STEPF(a, b, c, d, k, i, s) \
	VPADDD (k*32)(SI), a, a; \
	VPADDD (i*32)(DX), a, a; \
	VPXOR c, d, Y4; \
	VPAND b, Y4, Y4; \
	VPXOR d, Y4, Y4; \
	VPADDD Y4, a, a; \
	ROT(a, b, s)

// G(x,y,z) = xz v y not(z), computed as y ^ (z & (x ^ y)).
#define STEPG(a, b, c, d, k, i, s) \
	VPADDD (k*32)(SI), a, a; \
	VPADDD (i*32)(DX), a, a; \
	VPXOR b, c, Y4; \
	VPAND d, Y4, Y4; \
	VPXOR c, Y4, Y4; \
	VPADDD Y4, a, a; \
	ROT(a, b, s)

// H(x,y,z) = x xor y xor z.
#define STEPH(a, b, c, d, k, i, s) \
	VPADDD (k*32)(SI), a, a; \
	VPADDD (i*32)(DX), a, a; \
	VPXOR c, d, Y4; \
	VPXOR b, Y4, Y4; \
	VPADDD Y4, a, a; \
	ROT(a, b, s)

// I(x,y,z) = y xor (x v not(z)).
#define STEPI(a, b, c, d, k, i, s) \
	VPADDD (k*32)(SI), a, a; \
	VPADDD (i*32)(DX), a, a; \
	VPXOR Y15, d, Y4; \
	VPOR b, Y4, Y4; \
	VPXOR c, Y4, Y4; \
	VPADDD Y4, a, a; \
	ROT(a, b, s)

// func md5Wide(out *[md5Lanes]uint32, x *md5Block, t *[64][md5Lanes]uint32)
//
// out[l] is word D of lane l's digest (its bytes 12-15, little-endian):
// all a key needs, so A, B and C are not finished.
TEXT ·md5Wide(SB), NOSPLIT, $0-24
	MOVQ out+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ t+16(FP), DX
	VPCMPEQD Y15, Y15, Y15

	// The initial words A, B, C, D.
	MOVL $0x67452301, AX
	VMOVD AX, X0
	VPBROADCASTD X0, Y0
	MOVL $0xefcdab89, AX
	VMOVD AX, X1
	VPBROADCASTD X1, Y1
	MOVL $0x98badcfe, AX
	VMOVD AX, X2
	VPBROADCASTD X2, Y2
	MOVL $0x10325476, AX
	VMOVD AX, X3
	VPBROADCASTD X3, Y3
	VMOVDQA Y3, Y6 // D, added back at the end

	// Round 1: X[i], shifts 7 12 17 22.
	STEPF(Y0, Y1, Y2, Y3, 0, 0, 7)
	STEPF(Y3, Y0, Y1, Y2, 1, 1, 12)
	STEPF(Y2, Y3, Y0, Y1, 2, 2, 17)
	STEPF(Y1, Y2, Y3, Y0, 3, 3, 22)
	STEPF(Y0, Y1, Y2, Y3, 4, 4, 7)
	STEPF(Y3, Y0, Y1, Y2, 5, 5, 12)
	STEPF(Y2, Y3, Y0, Y1, 6, 6, 17)
	STEPF(Y1, Y2, Y3, Y0, 7, 7, 22)
	STEPF(Y0, Y1, Y2, Y3, 8, 8, 7)
	STEPF(Y3, Y0, Y1, Y2, 9, 9, 12)
	STEPF(Y2, Y3, Y0, Y1, 10, 10, 17)
	STEPF(Y1, Y2, Y3, Y0, 11, 11, 22)
	STEPF(Y0, Y1, Y2, Y3, 12, 12, 7)
	STEPF(Y3, Y0, Y1, Y2, 13, 13, 12)
	STEPF(Y2, Y3, Y0, Y1, 14, 14, 17)
	STEPF(Y1, Y2, Y3, Y0, 15, 15, 22)

	// Round 2: X[(1+5i) mod 16], shifts 5 9 14 20.
	STEPG(Y0, Y1, Y2, Y3, 1, 16, 5)
	STEPG(Y3, Y0, Y1, Y2, 6, 17, 9)
	STEPG(Y2, Y3, Y0, Y1, 11, 18, 14)
	STEPG(Y1, Y2, Y3, Y0, 0, 19, 20)
	STEPG(Y0, Y1, Y2, Y3, 5, 20, 5)
	STEPG(Y3, Y0, Y1, Y2, 10, 21, 9)
	STEPG(Y2, Y3, Y0, Y1, 15, 22, 14)
	STEPG(Y1, Y2, Y3, Y0, 4, 23, 20)
	STEPG(Y0, Y1, Y2, Y3, 9, 24, 5)
	STEPG(Y3, Y0, Y1, Y2, 14, 25, 9)
	STEPG(Y2, Y3, Y0, Y1, 3, 26, 14)
	STEPG(Y1, Y2, Y3, Y0, 8, 27, 20)
	STEPG(Y0, Y1, Y2, Y3, 13, 28, 5)
	STEPG(Y3, Y0, Y1, Y2, 2, 29, 9)
	STEPG(Y2, Y3, Y0, Y1, 7, 30, 14)
	STEPG(Y1, Y2, Y3, Y0, 12, 31, 20)

	// Round 3: X[(5+3i) mod 16], shifts 4 11 16 23.
	STEPH(Y0, Y1, Y2, Y3, 5, 32, 4)
	STEPH(Y3, Y0, Y1, Y2, 8, 33, 11)
	STEPH(Y2, Y3, Y0, Y1, 11, 34, 16)
	STEPH(Y1, Y2, Y3, Y0, 14, 35, 23)
	STEPH(Y0, Y1, Y2, Y3, 1, 36, 4)
	STEPH(Y3, Y0, Y1, Y2, 4, 37, 11)
	STEPH(Y2, Y3, Y0, Y1, 7, 38, 16)
	STEPH(Y1, Y2, Y3, Y0, 10, 39, 23)
	STEPH(Y0, Y1, Y2, Y3, 13, 40, 4)
	STEPH(Y3, Y0, Y1, Y2, 0, 41, 11)
	STEPH(Y2, Y3, Y0, Y1, 3, 42, 16)
	STEPH(Y1, Y2, Y3, Y0, 6, 43, 23)
	STEPH(Y0, Y1, Y2, Y3, 9, 44, 4)
	STEPH(Y3, Y0, Y1, Y2, 12, 45, 11)
	STEPH(Y2, Y3, Y0, Y1, 15, 46, 16)
	STEPH(Y1, Y2, Y3, Y0, 2, 47, 23)

	// Round 4: X[7i mod 16], shifts 6 10 15 21.
	STEPI(Y0, Y1, Y2, Y3, 0, 48, 6)
	STEPI(Y3, Y0, Y1, Y2, 7, 49, 10)
	STEPI(Y2, Y3, Y0, Y1, 14, 50, 15)
	STEPI(Y1, Y2, Y3, Y0, 5, 51, 21)
	STEPI(Y0, Y1, Y2, Y3, 12, 52, 6)
	STEPI(Y3, Y0, Y1, Y2, 3, 53, 10)
	STEPI(Y2, Y3, Y0, Y1, 10, 54, 15)
	STEPI(Y1, Y2, Y3, Y0, 1, 55, 21)
	STEPI(Y0, Y1, Y2, Y3, 8, 56, 6)
	STEPI(Y3, Y0, Y1, Y2, 15, 57, 10)
	STEPI(Y2, Y3, Y0, Y1, 6, 58, 15)
	STEPI(Y1, Y2, Y3, Y0, 13, 59, 21)
	STEPI(Y0, Y1, Y2, Y3, 4, 60, 6)
	STEPI(Y3, Y0, Y1, Y2, 11, 61, 10)

	// The last two steps write C and B, which no key reads: D is final.
	VPADDD Y6, Y3, Y3
	VMOVDQU Y3, 0(DI)
	VZEROUPPER
	RET
