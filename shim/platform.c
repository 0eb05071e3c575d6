/* platform.c - the shim's code that is x86-64's alone (platform.h lists
 * the rest of what it assumes). */
#include "platform.h"

/* The size of the access the instruction at pc makes, from its encoding:
 * the common moves, arithmetic and SSE/AVX/AVX-512 loads and stores (a
 * masked store counted whole); 0 when it is none of them. */
unsigned asp__access_size(const unsigned char *pc)
{
	unsigned opsize = 4, rex_w = 0, vex_l = 0, sse = 0, n = 0;
	for (;; pc++, n++) {
		if (n > 14)
			return 0;
		if (*pc == 0x66)
			opsize = 2, sse = 0x66;
		else if (*pc == 0xF2 || *pc == 0xF3)
			sse = *pc;
		else if (*pc == 0xF0 || *pc == 0x2E || *pc == 0x3E || *pc == 0x26 || *pc == 0x64 ||
		         *pc == 0x65 || *pc == 0x36)
			;
		else
			break;
	}
	if ((*pc & 0xF0) == 0x40) {
		rex_w = (*pc >> 3) & 1;
		pc++;
	}
	if (*pc == 0xC5 || *pc == 0xC4) {	/* VEX: vmovdqu and kin */
		vex_l = *pc == 0xC5 ? (pc[1] >> 2) & 1 : (pc[2] >> 2) & 1;
		unsigned op = *pc == 0xC5 ? pc[2] : pc[3];
		if (op == 0x6F || op == 0x7F || op == 0x10 || op == 0x11 || op == 0x28 || op == 0x29 ||
		    op == 0xE7 || op == 0x74 || op == 0xD7 || op == 0xDA || op == 0xEB)
			return vex_l ? 32 : 16;
		return 0;
	}
	if (*pc == 0x62 && (pc[1] & 3) == 1) {	/* EVEX, map 0F: AVX-512's moves */
		unsigned op = pc[4], ll = (pc[3] >> 5) & 3;
		if (ll < 3 && (op == 0x6F || op == 0x7F || op == 0x10 || op == 0x11 || op == 0x28 ||
		               op == 0x29 || op == 0xE7 || op == 0x2B))
			return 16u << ll;
		return 0;
	}
	unsigned w = rex_w ? 8 : opsize;
	unsigned op = *pc;
	if (op == 0x0F) {
		op = pc[1];
		switch (op) {
		case 0xB6: case 0xBE: return 1;		/* movzx, movsx byte */
		case 0xB7: case 0xBF: return 2;
		case 0x10: case 0x11:			/* movups/movss/movsd */
			return sse == 0xF3 ? 4 : sse == 0xF2 ? 8 : 16;
		case 0x28: case 0x29: case 0x6F: case 0x7F: case 0xE7: case 0x2B:
			return 16;
		case 0xD6: case 0x7E: case 0x12: case 0x13: case 0x16: case 0x17:
			return 8;
		default: return 0;
		}
	}
	if (op == 0x63)				/* movsxd */
		return 4;
	if (op <= 0x3F && (op & 7) <= 3)		/* add, or, adc, sbb, and, sub, xor, cmp */
		return op & 1 ? w : 1;
	switch (op) {
	case 0x88: case 0x8A: case 0xC6: case 0x80: case 0xF6: case 0xFE: case 0x84: case 0x86:
	case 0xA4: case 0xAA: case 0xAC: case 0xA6: case 0xAE:
		return 1;
	case 0x89: case 0x8B: case 0xC7: case 0x81: case 0x83: case 0xF7: case 0xFF: case 0x85:
	case 0x87: case 0xA5: case 0xAB: case 0xAD: case 0xA7: case 0xAF: case 0xD1: case 0xD3:
	case 0xC1:
		return w;
	default:
		return 0;
	}
}

long asp__raw_syscall(long n, long a, long b, long c, long d, long e, long f)
{
	long r;
	register long r10 __asm__("r10") = d;
	register long r8 __asm__("r8") = e;
	register long r9 __asm__("r9") = f;
	__asm__ __volatile__("syscall" : "=a"(r) : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10),
	                     "r"(r8), "r"(r9) : "rcx", "r11", "memory");
	return r;
}
