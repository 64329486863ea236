package testknobs

import (
	"maps"
	"strings"
	"testing"
	"time"
)

// TestEnvironRoundTrip checks that FromEnv reads back what Environ writes, and that the zero
// Knobs writes nothing.
func TestEnvironRoundTrip(t *testing.T) {
	for _, k := range []Knobs{
		{},
		{ApplyDelay: 2 * time.Millisecond},
		{ApplyLag: map[uint64]time.Duration{3: 5 * time.Millisecond, 2: time.Millisecond}},
		{ApplyDelay: 200 * time.Microsecond, ApplyLag: map[uint64]time.Duration{4: time.Second}},
	} {
		env := map[string]string{}
		for _, e := range k.Environ() {
			name, v, _ := strings.Cut(e, "=")
			env[name] = v
		}
		if k.IsZero() != (len(env) == 0) {
			t.Errorf("%v: IsZero %v, environment %v", k, k.IsZero(), env)
		}
		got, err := FromEnv(func(name string) string { return env[name] })
		if err != nil {
			t.Fatalf("%v: %v", k, err)
		}
		if got.ApplyDelay != k.ApplyDelay || !maps.Equal(got.ApplyLag, k.ApplyLag) {
			t.Errorf("environment %v reads back as %v, want %v", env, got, k)
		}
	}
	if got := (Knobs{ApplyDelay: time.Millisecond, ApplyLag: map[uint64]time.Duration{3: 2 * time.Millisecond, 2: time.Second}}).String(); got != "applyDelay=1ms applyLag=2:1s,3:2ms" {
		t.Errorf("String: %q", got)
	}
}

// TestFromEnvRejects checks that a malformed value is an error naming its variable.
func TestFromEnvRejects(t *testing.T) {
	for name, v := range map[string]string{
		ApplyDelayEnv: "2", ApplyLagEnv: "2:1ms,x:2ms",
	} {
		for _, bad := range []string{v, "-1ms"} {
			_, err := FromEnv(func(n string) string {
				if n == name {
					return bad
				}
				return ""
			})
			if err == nil || !strings.Contains(err.Error(), name) {
				t.Errorf("%s=%q: error %v", name, bad, err)
			}
		}
	}
	if _, err := FromEnv(func(string) string { return "" }); err != nil {
		t.Errorf("empty environment: %v", err)
	}
}
