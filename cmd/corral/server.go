package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/corral/corral/cluster"
)

func runServer(args []string) int {
	fs := flag.NewFlagSet("server", flag.ContinueOnError)
	cfgPath := fs.String("config", "zoo.cfg", "path to a zoo.cfg file")
	logLevel := fs.String("log-level", "info", "debug, info, warn or error")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(*logLevel)); err != nil {
		fmt.Fprintf(os.Stderr, "corral server: bad --log-level %q\n", *logLevel)
		return 2
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: lvl}))
	cfg, err := cluster.LoadConfig(*cfgPath, log)
	if err != nil {
		fmt.Fprintf(os.Stderr, "corral server: %v\n", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if os.Getenv("GOGC") == "" {
		gcDone := make(chan struct{})
		gcCtx, stopGC := context.WithCancel(context.Background())
		go func() { defer close(gcDone); paceGC(gcCtx, gcPaceEvery) }()
		defer func() { stopGC(); <-gcDone }()
	} else {
		log.Info("garbage collector target from GOGC", "GOGC", os.Getenv("GOGC"))
	}
	srv, err := cluster.Start(ctx, cfg, log)
	if err != nil {
		fmt.Fprintf(os.Stderr, "corral server: %v\n", err)
		return 1
	}
	select {
	case <-ctx.Done():
		log.Info("shutting down: handing over shard leaderships first")
		stop() // a second signal ends the process at once
		if n := srv.HandOffLeadership(context.Background()); n > 0 {
			log.Info("handed over shard leaderships", "shards", n)
		}
	case <-srv.Removed():
		log.Info("removed from the ensemble (every shard); shutting down")
	}
	srv.Close()
	return 0
}
