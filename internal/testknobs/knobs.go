package testknobs

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Tag is the build tag of a binary that reads the knobs from its environment.
const Tag = "corraltesting"

// The environment variables a corraltesting build reads at start-up.
const (
	// ApplyDelayEnv is Knobs.ApplyDelay as a Go duration ("2ms").
	ApplyDelayEnv = "CORRAL_TESTING_APPLY_DELAY"
	// ApplyLagEnv is Knobs.ApplyLag as shardID:duration[,shardID:duration...] ("2:1ms,3:5ms").
	ApplyLagEnv = "CORRAL_TESTING_APPLY_LAG"
)

// Knobs are the test-only behaviours of one server. The zero value is production.
type Knobs struct {
	// ApplyDelay makes every replica of every data shard spend this long per applied write op
	// before it publishes the batch (replica.Config.ApplyDelayPerOp), as a shard whose apply were
	// that slow would: commits become latency-bound, and shards, which apply in parallel, add
	// throughput even on few cores.
	ApplyDelay time.Duration
	// ApplyLag makes this server's replica of each listed data shard hold back every apply that
	// changes something by the duration (router.Shard.SetApplyLag), as a slow disk or a loaded
	// server would: a lagging replica for tests of the cross-shard read rule.
	ApplyLag map[uint64]time.Duration
}

// IsZero reports whether k asks for nothing.
func (k Knobs) IsZero() bool { return k.ApplyDelay == 0 && len(k.ApplyLag) == 0 }

// Environ returns the environment entries ("NAME=value") that give k to a corraltesting build;
// none for the zero Knobs.
func (k Knobs) Environ() []string {
	var env []string
	if k.ApplyDelay != 0 {
		env = append(env, ApplyDelayEnv+"="+k.ApplyDelay.String())
	}
	if len(k.ApplyLag) > 0 {
		env = append(env, ApplyLagEnv+"="+k.lagString())
	}
	return env
}

func (k Knobs) lagString() string {
	var parts []string
	for _, id := range slices.Sorted(maps.Keys(k.ApplyLag)) {
		parts = append(parts, fmt.Sprintf("%d:%s", id, k.ApplyLag[id]))
	}
	return strings.Join(parts, ",")
}

// String is k for a log line: "applyDelay=2ms applyLag=2:1ms,3:5ms", or "none".
func (k Knobs) String() string {
	var parts []string
	if k.ApplyDelay != 0 {
		parts = append(parts, "applyDelay="+k.ApplyDelay.String())
	}
	if len(k.ApplyLag) > 0 {
		parts = append(parts, "applyLag="+k.lagString())
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, " ")
}

// FromEnv reads the knobs from the environment variables through getenv (os.Getenv). An unset
// or empty variable leaves its knob zero; a malformed or negative value is an error naming the
// variable. Only a corraltesting build calls it.
func FromEnv(getenv func(string) string) (Knobs, error) {
	var k Knobs
	if v := strings.TrimSpace(getenv(ApplyDelayEnv)); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			return Knobs{}, fmt.Errorf("testknobs: %s=%q: want a duration of 0 or more", ApplyDelayEnv, v)
		}
		k.ApplyDelay = d
	}
	if v := strings.TrimSpace(getenv(ApplyLagEnv)); v != "" {
		k.ApplyLag = map[uint64]time.Duration{}
		for _, part := range strings.Split(v, ",") {
			id, dur, ok := strings.Cut(strings.TrimSpace(part), ":")
			n, perr := strconv.ParseUint(id, 10, 64)
			d, derr := time.ParseDuration(dur)
			if !ok || perr != nil || derr != nil || d < 0 {
				return Knobs{}, fmt.Errorf("testknobs: %s=%q: want shardID:duration[,shardID:duration...], got %q", ApplyLagEnv, v, part)
			}
			k.ApplyLag[n] = d
		}
	}
	return k, nil
}
