//go:build !nobench

package main

import "github.com/corral/corral/bench"

func runBench(args []string) int { return bench.Main(args) }
