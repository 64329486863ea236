package bench

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// writeFile writes one output file into the run's directory and lists it in the summary.
func (e *env) writeFile(name string, data []byte) error {
	if err := os.WriteFile(filepath.Join(e.cfg.Out, name), data, 0o644); err != nil {
		return err
	}
	if name != "summary.md" {
		e.files = append(e.files, name)
	}
	return nil
}

// writeCSV writes a header and rows.
func (e *env) writeCSV(name string, header []string, rows [][]string) error {
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	w.Write(header)
	w.WriteAll(rows)
	if err := w.Error(); err != nil {
		return err
	}
	return e.writeFile(name, buf.Bytes())
}

// writeJSON writes v indented.
func (e *env) writeJSON(name string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return e.writeFile(name, append(b, '\n'))
}

// section adds a markdown section to summary.md.
func (e *env) section(md string) { e.sections = append(e.sections, md) }

func ff(v float64, prec int) string { return strconv.FormatFloat(v, 'f', prec, 64) }
func fi(v int64) string             { return strconv.FormatInt(v, 10) }
func itoa(v int) string             { return strconv.Itoa(v) }

// mdTable renders a markdown table.
func mdTable(header []string, rows [][]string) string {
	var b strings.Builder
	b.WriteString("| " + strings.Join(header, " | ") + " |\n")
	seps := make([]string, len(header))
	for i := range seps {
		seps[i] = "---"
		if i > 0 {
			seps[i] = "---:"
		}
	}
	b.WriteString("|" + strings.Join(seps, "|") + "|\n")
	for _, r := range rows {
		b.WriteString("| " + strings.Join(r, " | ") + " |\n")
	}
	return b.String()
}

// kops formats ops/s for tables: 12345 → "12.3k".
func kops(v float64) string {
	switch {
	case v <= 0:
		return "0"
	case v >= 1000:
		return fmt.Sprintf("%.1fk", v/1000)
	default:
		return fmt.Sprintf("%.0f", v)
	}
}

// ratio formats a/b, or "–" when b is zero or either is missing.
func ratio(a, b float64) string {
	if a <= 0 || b <= 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f×", a/b)
}

// msStr formats milliseconds for tables.
func msStr(v float64) string {
	if v <= 0 {
		return "–"
	}
	if v < 10 {
		return fmt.Sprintf("%.2f", v)
	}
	return fmt.Sprintf("%.1f", v)
}
