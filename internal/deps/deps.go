//go:build tools

// Package deps pins the modules the project builds on before every package imports them.
package deps

import (
	_ "github.com/HdrHistogram/hdrhistogram-go"
	_ "github.com/anishathalye/porcupine"
	_ "github.com/cockroachdb/pebble"
	_ "github.com/go-zookeeper/zk"
	_ "github.com/google/btree"
	_ "github.com/lni/dragonboat/v4"
	_ "github.com/lni/dragonboat/v4/plugin/tan"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/prometheus/client_golang/prometheus/promhttp"
	_ "go.uber.org/goleak"
	_ "gonum.org/v1/plot"
	_ "gonum.org/v1/plot/plotter"
	_ "gonum.org/v1/plot/vg"
)
