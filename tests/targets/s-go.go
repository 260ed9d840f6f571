// SPDX-License-Identifier: MIT
//
// s-go N - calls main.work N times and prints "work=N". Go code: its
// runtime walks and copies goroutine stacks, so return probes are refused
// there and entry probes must count exactly. Built by the tests
// (tests/e2e/test-trace.c) when a Go toolchain is installed, twice: as Go
// links it by default (static: no dynamic loader, so no agent), and with
// -linkmode=external (dynamically linked: the agent can be preloaded).
package main

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
	n := 1
	if len(os.Args) > 1 {
		n, _ = strconv.Atoi(os.Args[1])
	}
	sum := 0
	for i := 0; i < n; i++ {
		sum += work(i)
	}
	fmt.Printf("work=%d sum=%d\n", calls, sum)
}
