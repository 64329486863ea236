package testcluster

import (
	"bufio"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// Metric returns the value of the unlabelled metric name in server i's /metrics (the cluster
// needs Options.Admin).
func (c *Cluster) Metric(i int, name string) (float64, error) {
	addr := c.AdminAddr(i)
	if addr == "" {
		return 0, fmt.Errorf("server %d has no admin server", i+1)
	}
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			return strconv.ParseFloat(v, 64)
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("server %d exports no %s", i+1, name)
}
