package bench

import (
	"fmt"
	"sort"
	"time"
)

// SizingPoint is one measured configuration of the sizing sweep: the workload run at the target
// rate (AchievedOps, P99Ms) and, when measured, unthrottled (CapacityOps).
type SizingPoint struct {
	Target      string  `json:"target"`
	Servers     int     `json:"servers"`
	Shards      int     `json:"shards"`
	TargetOps   float64 `json:"target_ops"`
	AchievedOps float64 `json:"achieved_ops"`
	P99Ms       float64 `json:"p99_ms"`
	CapacityOps float64 `json:"capacity_ops"`
	CapacityP99 float64 `json:"capacity_p99_ms"`
	GenCores    float64 `json:"gen_cores"`
	Err         string  `json:"error,omitempty"`
}

// Requirement is what the operator asks of a configuration.
type Requirement struct {
	TargetOps float64       // sustained ops/s
	P99       time.Duration // bound on the 99th percentile latency at that rate
	// Tolerance is how far below TargetOps the achieved rate may fall and still count (the
	// generator's pacing is not exact); 0.05 means 95 % of the target.
	Tolerance float64
	// MinServers is the smallest ensemble worth recommending (3 tolerates one failure).
	MinServers int
}

// Verdict says why a point does or does not meet a Requirement.
type Verdict struct {
	Point  SizingPoint `json:"point"`
	Meets  bool        `json:"meets"`
	Reason string      `json:"reason"`
}

// Recommendation is the outcome of Recommend for one target.
type Recommendation struct {
	Target string `json:"target"`
	Found  bool   `json:"found"`
	// Best is the recommended configuration when Found, otherwise the closest miss.
	Best     SizingPoint `json:"best"`
	Reason   string      `json:"reason"`
	Verdicts []Verdict   `json:"verdicts"`
}

// Judge tells whether p meets req.
func Judge(p SizingPoint, req Requirement) Verdict {
	v := Verdict{Point: p}
	floor := req.TargetOps * (1 - req.Tolerance)
	bound := float64(req.P99) / float64(time.Millisecond)
	switch {
	case p.Err != "":
		v.Reason = "failed: " + p.Err
	case p.Servers < req.MinServers:
		v.Reason = fmt.Sprintf("%d servers < minimum %d", p.Servers, req.MinServers)
	case p.AchievedOps < floor:
		v.Reason = fmt.Sprintf("%.0f ops/s < %.0f", p.AchievedOps, floor)
	case req.P99 > 0 && p.P99Ms > bound:
		v.Reason = fmt.Sprintf("p99 %.2f ms > %.2f ms", p.P99Ms, bound)
	default:
		v.Meets = true
		v.Reason = fmt.Sprintf("%.0f ops/s at p99 %.2f ms", p.AchievedOps, p.P99Ms)
	}
	return v
}

// Recommend picks, for every target in points, the smallest configuration that meets req:
// fewest servers first (each server is a machine to run), then fewest shards (fewer Raft groups
// to operate), then the most headroom (CapacityOps). With none meeting it, Best is the closest
// miss: the point with the highest achieved rate among those within the latency bound, or, if
// none is, the one with the lowest p99. Results are ordered by target name; the function is pure.
func Recommend(points []SizingPoint, req Requirement) []Recommendation {
	byTarget := map[string][]SizingPoint{}
	var targets []string
	for _, p := range points {
		if _, ok := byTarget[p.Target]; !ok {
			targets = append(targets, p.Target)
		}
		byTarget[p.Target] = append(byTarget[p.Target], p)
	}
	sort.Strings(targets)
	var out []Recommendation
	for _, t := range targets {
		ps := append([]SizingPoint(nil), byTarget[t]...)
		sort.SliceStable(ps, func(i, j int) bool {
			a, b := ps[i], ps[j]
			if a.Servers != b.Servers {
				return a.Servers < b.Servers
			}
			if a.Shards != b.Shards {
				return a.Shards < b.Shards
			}
			return a.CapacityOps > b.CapacityOps
		})
		r := Recommendation{Target: t}
		for _, p := range ps {
			v := Judge(p, req)
			r.Verdicts = append(r.Verdicts, v)
			if v.Meets && !r.Found {
				r.Found, r.Best = true, p
				r.Reason = fmt.Sprintf("smallest configuration meeting %.0f ops/s with p99 ≤ %v: %d servers, %d shards (%s)",
					req.TargetOps, req.P99, p.Servers, p.Shards, v.Reason)
			}
		}
		if !r.Found {
			r.Best, r.Reason = closestMiss(ps, req)
		}
		out = append(out, r)
	}
	return out
}

func closestMiss(ps []SizingPoint, req Requirement) (SizingPoint, string) {
	bound := float64(req.P99) / float64(time.Millisecond)
	var best *SizingPoint
	for i := range ps {
		p := &ps[i]
		if p.Err != "" || (req.P99 > 0 && p.P99Ms > bound) {
			continue
		}
		if best == nil || p.AchievedOps > best.AchievedOps {
			best = p
		}
	}
	if best != nil {
		return *best, fmt.Sprintf("no configuration meets %.0f ops/s with p99 ≤ %v; the most within the latency bound is %d servers, %d shards at %.0f ops/s",
			req.TargetOps, req.P99, best.Servers, best.Shards, best.AchievedOps)
	}
	for i := range ps {
		p := &ps[i]
		if p.Err != "" {
			continue
		}
		if best == nil || p.P99Ms < best.P99Ms {
			best = p
		}
	}
	if best != nil {
		return *best, fmt.Sprintf("no configuration meets p99 ≤ %v; the lowest p99 is %.2f ms with %d servers, %d shards",
			req.P99, best.P99Ms, best.Servers, best.Shards)
	}
	return SizingPoint{}, "no configuration was measured successfully"
}
