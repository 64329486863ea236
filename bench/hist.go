package bench

import (
	"encoding/json"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// Latency histograms record microseconds from 1 µs to 60 s with 3 significant digits
// (HdrHistogram: every recorded value is kept within 0.1 % of its true value).
const (
	histMin    = 1
	histMax    = 60_000_000
	histDigits = 3
)

// Hist is a latency histogram. It is not safe for concurrent use: each load worker owns one per
// op kind and the runner merges them after the workers stopped.
type Hist struct {
	h *hdrhistogram.Histogram
}

// NewHist returns an empty histogram.
func NewHist() *Hist { return &Hist{h: hdrhistogram.New(histMin, histMax, histDigits)} }

// Record adds one latency; values outside [1 µs, 60 s] are clamped.
func (h *Hist) Record(d time.Duration) {
	us := d.Microseconds()
	if us < histMin {
		us = histMin
	} else if us > histMax {
		us = histMax
	}
	h.h.RecordValue(us) //nolint:errcheck // clamped into range above
}

// Merge adds every value of o.
func (h *Hist) Merge(o *Hist) { h.h.Merge(o.h) }

// Count returns the number of recorded values.
func (h *Hist) Count() int64 { return h.h.TotalCount() }

// MarshalJSON encodes every recorded value's bucket (HdrHistogram's export), so that a
// histogram recorded in another process merges exactly.
func (h *Hist) MarshalJSON() ([]byte, error) { return json.Marshal(h.h.Export()) }

// UnmarshalJSON restores a histogram MarshalJSON encoded.
func (h *Hist) UnmarshalJSON(b []byte) error {
	var s hdrhistogram.Snapshot
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	h.h = hdrhistogram.Import(&s)
	return nil
}

// Reset empties the histogram.
func (h *Hist) Reset() { h.h.Reset() }

// Summary is what the reports keep of a histogram, in milliseconds.
type Summary struct {
	Count  int64   `json:"count"`
	MeanMs float64 `json:"mean_ms"`
	P50Ms  float64 `json:"p50_ms"`
	P99Ms  float64 `json:"p99_ms"`
	P999Ms float64 `json:"p999_ms"`
	MaxMs  float64 `json:"max_ms"`
}

// Summary returns count, mean, p50, p99, p99.9 and max. An empty histogram gives zeros.
func (h *Hist) Summary() Summary {
	if h.h.TotalCount() == 0 {
		return Summary{}
	}
	ms := func(us int64) float64 { return float64(us) / 1000 }
	return Summary{
		Count:  h.h.TotalCount(),
		MeanMs: h.h.Mean() / 1000,
		P50Ms:  ms(h.h.ValueAtQuantile(50)),
		P99Ms:  ms(h.h.ValueAtQuantile(99)),
		P999Ms: ms(h.h.ValueAtQuantile(99.9)),
		MaxMs:  ms(h.h.Max()),
	}
}
