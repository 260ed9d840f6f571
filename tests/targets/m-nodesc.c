/* SPDX-License-Identifier: MIT */
/* m-nodesc.c - a shared object that is no probe module (no utrace_module). */
int m_nodesc_answer(void);

int m_nodesc_answer(void)
{
	return 42;
}
