//go:build nobench

package main

import (
	"fmt"
	"os"
)

// runBench in a binary built with -tags nobench (the container image, make image): the
// benchmark suite and its plotting are not linked in.
func runBench([]string) int {
	fmt.Fprintln(os.Stderr, "corral: this binary was built without the benchmarks (-tags nobench, as the container image is); use a default build (make build) to run corral bench")
	return 2
}
