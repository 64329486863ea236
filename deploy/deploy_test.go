package deploy

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/corral/corral/internal/corralproc"
)

// promtool is Prometheus's rule checker (Debian's prometheus package, installed by make deps).
func promtool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("promtool")
	if err != nil {
		if testing.Short() {
			t.Skip("promtool not installed (Debian package prometheus; make deps)")
		}
		t.Fatalf("promtool not found (%v): run make deps (Debian package prometheus)", err)
	}
	return p
}

// TestAlertRules: the rules load (promtool check rules) and behave as
// prometheus/alerts_test.yaml says: each alert fires on the synthetic series meant to trip it,
// at the time and with the labels and annotations given, and stays quiet before.
func TestAlertRules(t *testing.T) {
	tool := promtool(t)
	for _, args := range [][]string{{"check", "rules", "alerts.yaml"}, {"test", "rules", "alerts_test.yaml"}} {
		cmd := exec.Command(tool, args...)
		cmd.Dir = "prometheus"
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

// TestMetricsTheyReadExist: every metric that an alert rule or a dashboard panel reads is one
// that a running Corral server exports on /metrics or /metrics/raft (after some requests), or,
// for a labelled metric that has seen no event yet (no series until then), one the server's
// code declares by that name. A renamed or removed metric fails here instead of leaving an
// alert that can never fire or an empty panel.
func TestMetricsTheyReadExist(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Corral ensemble")
	}
	wanted := map[string][]string{} // metric -> where it is read
	rules, err := os.ReadFile(filepath.Join("prometheus", "alerts.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ruleExprs(string(rules)) {
		for _, m := range metricNames(e) {
			wanted[m] = append(wanted[m], "prometheus/alerts.yaml")
		}
	}
	dash, err := os.ReadFile(filepath.Join("grafana", "corral.json"))
	if err != nil {
		t.Fatal(err)
	}
	exprs, err := dashboardExprs(dash)
	if err != nil {
		t.Fatalf("grafana/corral.json: %v", err)
	}
	if len(exprs) < 10 {
		t.Fatalf("grafana/corral.json: only %d queries found", len(exprs))
	}
	for _, e := range exprs {
		for _, m := range metricNames(e) {
			wanted[m] = append(wanted[m], "grafana/corral.json")
		}
	}
	delete(wanted, "up") // Prometheus's own, per scrape target

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	e, err := corralproc.Start(ctx, corralproc.Options{Servers: 1, Shards: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	exercise(t, e.Addr(0))
	exported := map[string]bool{}
	for _, path := range []string{"/metrics", "/metrics/raft"} {
		for _, m := range scrape(t, "http://"+e.AdminAddr(0)+path) {
			exported[m] = true
		}
	}
	declared := declaredNames(t)
	var missing []string
	for m, where := range wanted {
		base := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(m, "_bucket"), "_count"), "_sum")
		if exported[m] || declared[m] || declared[base] {
			continue
		}
		missing = append(missing, fmt.Sprintf("%s (read by %s)", m, strings.Join(slices.Compact(slices.Sorted(slices.Values(where))), ", ")))
	}
	slices.Sort(missing)
	for _, m := range missing {
		t.Errorf("no Corral server exports or declares %s", m)
	}
	t.Logf("%d metrics read by the rules and the dashboard, %d exported by a fresh server after a few requests", len(wanted), len(exported))
}

// exercise sends a few requests of every kind the metrics count.
func exercise(t *testing.T, addr string) {
	t.Helper()
	c, _, err := zk.Connect([]string{addr}, 10*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	acl := zk.WorldACL(zk.PermAll)
	for i := 0; i < 20; i++ {
		p := fmt.Sprintf("/deploy-%d", i)
		if _, err := c.Create(p, []byte("x"), 0, acl); err != nil {
			t.Fatalf("create %s: %v", p, err)
		}
		if _, _, ch, err := c.GetW(p); err != nil {
			t.Fatalf("get %s: %v", p, err)
		} else if _, err := c.Set(p, []byte("y"), -1); err != nil {
			t.Fatalf("set %s: %v", p, err)
		} else {
			<-ch
		}
	}
	if _, _, err := c.Get("/no-such-node"); err != zk.ErrNoNode {
		t.Fatalf("get of a missing node: %v", err)
	}
}

// scrape returns the metric names a Prometheus text exposition holds.
func scrape(t *testing.T, url string) []string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: %s %v", url, resp.Status, err)
	}
	var names []string
	for _, line := range strings.Split(string(body), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if i := strings.IndexAny(line, "{ "); i > 0 {
			names = append(names, line[:i])
		}
	}
	return names
}

var exprLine = regexp.MustCompile(`(?m)^\s+expr:\s*(.*)$`)

// ruleExprs returns the expressions of a rules file: a one-line `expr: X`, or a folded block
// (`expr: >-` and the more indented lines below it).
func ruleExprs(rules string) []string {
	lines := strings.Split(rules, "\n")
	var out []string
	for i, l := range lines {
		m := exprLine.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		if v := strings.TrimSpace(m[1]); v != ">-" && v != ">" && v != "|" {
			out = append(out, v)
			continue
		}
		indent := len(l) - len(strings.TrimLeft(l, " "))
		var b strings.Builder
		for _, n := range lines[i+1:] {
			if strings.TrimSpace(n) != "" && len(n)-len(strings.TrimLeft(n, " ")) <= indent {
				break
			}
			b.WriteString(n + " ")
		}
		out = append(out, b.String())
	}
	return out
}

// dashboardExprs returns every "expr" of a Grafana dashboard, at any depth.
func dashboardExprs(data []byte) ([]string, error) {
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		return nil, err
	}
	var out []string
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, y := range x {
				if s, ok := y.(string); ok && k == "expr" {
					out = append(out, s)
				} else {
					walk(y)
				}
			}
		case []any:
			for _, y := range x {
				walk(y)
			}
		}
	}
	walk(v)
	return out, nil
}

var (
	quoted     = regexp.MustCompile(`"(\\.|[^"\\])*"|'[^']*'`)
	matchers   = regexp.MustCompile(`\{[^}]*\}|\[[^\]]*\]`)
	numbers    = regexp.MustCompile(`\b[0-9][0-9.]*([eE][+-]?[0-9]+)?\b`)
	labelLists = regexp.MustCompile(`\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`)
	identifier = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*(\s*\()?`)
	keywords   = map[string]bool{"and": true, "or": true, "unless": true, "bool": true, "offset": true, "by": true,
		"without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true, "e": true, "inf": true, "nan": true}
)

// metricNames returns the metric names a PromQL expression selects: identifiers that are not
// functions, aggregations, keywords, label names or label values.
func metricNames(expr string) []string {
	expr = quoted.ReplaceAllString(expr, " ")
	expr = matchers.ReplaceAllString(expr, " ")
	expr = labelLists.ReplaceAllString(expr, " ")
	expr = numbers.ReplaceAllString(expr, " ")
	var out []string
	for _, m := range identifier.FindAllString(expr, -1) {
		if strings.HasSuffix(m, "(") || keywords[strings.ToLower(m)] || strings.HasPrefix(m, "$") {
			continue
		}
		out = append(out, m)
	}
	return out
}

var nameLiteral = regexp.MustCompile(`Name:\s*"([a-zA-Z_:][a-zA-Z0-9_:]*)"`)

// declaredNames returns the metric names the server's code declares (`Name: "..."` in the
// options of a Prometheus collector), outside tests.
func declaredNames(t *testing.T) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	err := filepath.WalkDir("..", func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") && p != ".." {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, m := range nameLiteral.FindAllStringSubmatch(string(src), -1) {
			out[m[1]] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
