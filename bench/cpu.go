package bench

import (
	"bufio"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// cpuSample is a point-in-time reading of the generator's own CPU use and of the whole
// machine's (from /proc/stat on Linux; zero elsewhere).
type cpuSample struct {
	at          time.Time
	proc        time.Duration // this process, user+system
	busy, total uint64        // machine jiffies (all CPUs): non-idle and all
}

func sampleCPU() cpuSample {
	s := cpuSample{at: time.Now(), proc: processCPU()}
	s.busy, s.total = machineJiffies()
	return s
}

// CPUUse is CPU consumption over a window.
type CPUUse struct {
	// GenCores is the generator's CPU time divided by wall time: 1.0 = one core fully busy.
	GenCores float64 `json:"gen_cores"`
	// MachineBusy is the fraction of all cores busy (0..1), everything on the machine.
	MachineBusy float64 `json:"machine_busy"`
	// GenShare is the generator's part of the machine's busy time (0..1): a high share at a
	// saturated machine means the generator, not the servers, was the limit.
	GenShare float64 `json:"gen_share"`
	// Cores is runtime.NumCPU().
	Cores int `json:"cores"`
}

func cpuBetween(a, b cpuSample) CPUUse {
	u := CPUUse{Cores: runtime.NumCPU()}
	wall := b.at.Sub(a.at).Seconds()
	if wall > 0 {
		u.GenCores = (b.proc - a.proc).Seconds() / wall
	}
	if dt := b.total - a.total; b.total > a.total {
		u.MachineBusy = float64(b.busy-a.busy) / float64(dt)
		busyCores := u.MachineBusy * float64(u.Cores)
		if busyCores > 0 {
			u.GenShare = min(u.GenCores/busyCores, 1)
		}
	}
	return u
}

// machineJiffies reads the aggregate "cpu" line of /proc/stat: busy = everything but idle and
// iowait; total = all fields (guest time is already inside user).
func machineJiffies() (busy, total uint64) {
	f, err := os.Open("/proc/stat")
	if err != nil {
		return 0, 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	if !sc.Scan() {
		return 0, 0
	}
	fields := strings.Fields(sc.Text())
	if len(fields) < 5 || fields[0] != "cpu" {
		return 0, 0
	}
	for i, s := range fields[1:] {
		if i >= 8 { // guest, guest_nice are counted in user/nice already
			break
		}
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return 0, 0
		}
		total += v
		if i != 3 && i != 4 { // idle, iowait
			busy += v
		}
	}
	return busy, total
}

// loadAvg returns the first three fields of /proc/loadavg ("?" elsewhere).
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}
