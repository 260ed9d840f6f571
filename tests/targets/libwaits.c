/* SPDX-License-Identifier: MIT */
/*
 * libwaits.so - 100 small functions, waits_fn_000 ... waits_fn_099, that
 * s-waits dlopen()s once its threads sit in their blocking calls: a glob
 * over them arms (and upgrades) 100 probes at once. Built at -O0 with frame
 * pointers: each prologue is long enough for a jmp.
 */
#define FN(n)                                             \
	__attribute__((noinline)) int waits_fn_##n(int x) \
	{                                                 \
		return x * 3 + 1;                         \
	}
#define FN10(d) \
	FN(d##0) FN(d##1) FN(d##2) FN(d##3) FN(d##4) FN(d##5) FN(d##6) FN(d##7) FN(d##8) FN(d##9)

FN10(00)
FN10(01)
FN10(02)
FN10(03)
FN10(04)
FN10(05)
FN10(06)
FN10(07)
FN10(08)
FN10(09)
