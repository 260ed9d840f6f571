// SPDX-License-Identifier: MIT
//
// s-go N - calls main.work N times and prints "work=N". Go code: its
// runtime walks and copies goroutine stacks, so return probes are refused
// there and entry probes must count exactly. Built by the tests
// (tests/e2e/test-trace.c) when a Go toolchain is installed; cgo makes it
// dynamically linked, so that the agent can be preloaded into it.
package main

// static int c_one(void) { return 1; }
import "C"

import (
	"fmt"
	"os"
	"strconv"
)

var calls int

//go:noinline
func work(i int) int {
	calls++
	return i * 2
}

func main() {
	n := int(C.c_one())
	if len(os.Args) > 1 {
		n, _ = strconv.Atoi(os.Args[1])
	}
	sum := 0
	for i := 0; i < n; i++ {
		sum += work(i)
	}
	fmt.Printf("work=%d sum=%d\n", calls, sum)
}
