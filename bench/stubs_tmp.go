package bench

import "context"

func runCreate(ctx context.Context, e *env) error  { return nil }
func runBarrier(ctx context.Context, e *env) error { return nil }
func runShards(ctx context.Context, e *env) error  { return nil }
func runSizing(ctx context.Context, e *env) error  { return nil }
