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
